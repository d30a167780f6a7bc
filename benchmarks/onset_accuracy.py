"""Audible-onset detector against known onsets: `python -m benchmarks.onset_accuracy`.

Signals with a known first sample (sharp tones, white-noise bursts, eSpeak NG speech trimmed to
its first sample above -60 dBFS) at -20 dBFS RMS, placed after a random silence, clean and with
white noise at 30 and 20 dB SNR, at 16, 22.05, 24 and 48 kHz. Reports the absolute error
distribution per condition and the detector's speed in times real time at 24 kHz.
Targets: |error| <= 1 ms on clean audio; speed >= 3,000x real time at 24 kHz. `--quick`: 2 trials per
condition and a 10 s speed signal (seconds; the same code path). Last line: JSON.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from voxwatch.foundation.audio import resample
from voxwatch.metrics.onset import detect_onset
from voxwatch.providers.local.espeak_engine import EspeakEngine

RATES = (16000, 22050, 24000, 48000)
SNRS = (None, 30.0, 20.0)
LEVEL_RMS = 0.1  # -20 dBFS
PHRASES = ("Your order has shipped.", "Hello, how can I help?", "Please hold for a moment.",
           "Thank you for calling.", "I found your account.")


def _speech_bank() -> list[tuple[np.ndarray, int]]:
    engine = EspeakEngine.get()
    bank = []
    for text in PHRASES:
        x = engine.render(text, "en-us", 170) / 32768.0
        loud = np.flatnonzero(np.abs(x) > 0.001)
        bank.append((x[loud[0]:], engine.sample_rate))
    return bank


def signal(kind: str, rate: int, rng: np.random.Generator, bank) -> np.ndarray:
    n = int(0.4 * rate)
    if kind == "tone":
        freq = rng.choice([220.0, 440.0, 1000.0])
        x = np.sin(2 * np.pi * freq * np.arange(n) / rate + rng.uniform(0, 2 * np.pi))
    elif kind == "noise":
        x = rng.standard_normal(n)
    else:
        speech, sr = bank[rng.integers(len(bank))]
        x = resample(speech, sr, rate)
        loud = np.flatnonzero(np.abs(x) > 0.001 * np.abs(x).max() / 0.3)
        x = x[loud[0]:]
    return x / np.sqrt(np.mean(x * x)) * LEVEL_RMS


def trial(kind: str, rate: int, snr: float | None, rng: np.random.Generator, bank) -> float | None:
    onset_s = rng.uniform(0.15, 0.6)
    sig = signal(kind, rate, rng, bank)
    start = int(round(onset_s * rate))
    x = np.zeros(start + sig.size + int(0.1 * rate))
    x[start:start + sig.size] = sig
    if snr is not None:
        x += rng.standard_normal(x.size) * LEVEL_RMS * 10 ** (-snr / 20)
    found = detect_onset(x, rate)
    return None if found is None else (found - start) / rate * 1000


def speed(rate: int = 24000, seconds: float = 60.0, repeats: int = 5) -> float:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(int(seconds * rate)) * 0.001
    x[int(seconds * rate * 0.9):] += np.sin(np.arange(int(seconds * rate * 0.1)) / 5.0) * 0.3
    best = min(_timed(x, rate) for _ in range(repeats))
    return seconds / best


def _timed(x: np.ndarray, rate: int) -> float:
    start = time.perf_counter()
    detect_onset(x, rate)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=40, help="trials per (signal, SNR, rate)")
    parser.add_argument("--quick", action="store_true", help="2 trials per condition, a 10 s speed signal (seconds)")
    args = parser.parse_args()
    if args.quick:
        args.trials = 2
    rng = np.random.default_rng(2026)
    bank = _speech_bank()
    results = {}
    print(f"{'signal':8} {'SNR':>6} {'rate':>6} {'n':>4} {'miss':>5} {'median |err| ms':>16} {'p95 |err| ms':>13} {'max |err| ms':>13}")
    for kind in ("tone", "noise", "speech"):
        for snr in SNRS:
            for rate in RATES:
                errors = [trial(kind, rate, snr, rng, bank) for _ in range(args.trials)]
                found = np.abs([e for e in errors if e is not None])
                key = f"{kind}/{'clean' if snr is None else f'{snr:g}dB'}/{rate}"
                row = {"n": len(errors), "missed": len(errors) - found.size,
                       "median_abs_ms": round(float(np.median(found)), 3) if found.size else None,
                       "p95_abs_ms": round(float(np.percentile(found, 95)), 3) if found.size else None,
                       "max_abs_ms": round(float(found.max()), 3) if found.size else None}
                results[key] = row
                print(f"{kind:8} {'clean' if snr is None else f'{snr:g} dB':>6} {rate:6d} {row['n']:4d} {row['missed']:5d} "
                      f"{row['median_abs_ms']!s:>16} {row['p95_abs_ms']!s:>13} {row['max_abs_ms']!s:>13}")
    clean_max = max(r["max_abs_ms"] for k, r in results.items() if "/clean/" in k)
    x_real_time = speed(seconds=10.0 if args.quick else 60.0)
    print(f"clean max |error|: {clean_max:.3f} ms (target <= 1 ms); speed at 24 kHz: {x_real_time:,.0f}x real time "
          f"(target >= 3,000x)")
    print(json.dumps({"benchmark": "onset_accuracy", "clean_max_abs_error_ms": clean_max,
                      "clean_target_met": clean_max <= 1.0, "speed_x_real_time_24k": round(x_real_time),
                      "speed_target_met": x_real_time >= 3000, "conditions": results}))


if __name__ == "__main__":
    main()
