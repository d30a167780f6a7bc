"""Shared VAD anchors against known speech boundaries: `python -m benchmarks.vad_anchor_accuracy`.

Synthesized speech (eSpeak NG, four voice and rate settings, trimmed to its first and last
sample above -60 dBFS of its peak) padded with known silences, clean (a -70 dBFS floor) and with
pink noise at 30 and 20 dB SNR: the error of `speech_start` and `speech_end`. When real speech
is present (../shared/data/speech, or VOXWATCH_SPEECH_DIR), the anchors are compared with a
second, independent detector, Silero VAD (the ONNX model shipped inside faster-whisper, no
padding), and the disagreement is reported, with the peers' padded anchor (metrics.peer_anchor)
against the shared end: how far apart the two TTFS clocks start. Target: median |error| <= 30 ms on synthesized
speech (`clean_median_target_met`). `--quick`: 4 synthesized trials and no real speech (seconds; the
same code path, too few to judge the target). Last line: JSON.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

from benchmarks.speech_files import read_mono
from voxwatch.foundation.audio import CATALOG_RATE, normalize_loudness, resample, to_pcm16
from voxwatch.foundation.noises import pink_noise
from voxwatch.datasets.starter_texts import STT_UTTERANCES, TTS_PROMPTS
from voxwatch.metrics.peer_anchor import PEER_ANCHOR, peer_speech_end
from voxwatch.metrics.vad import speech_anchors
from voxwatch.providers.local.espeak_engine import EspeakEngine

REPO = Path(__file__).resolve().parents[1]
HAND_ENDS_MS: dict[str, float] = json.loads((REPO / "benchmarks" / "data" / "hand_marked_ends.json").read_text())["ends_ms"]
"""Ends of speech marked by eye on 15 real clips (the file says how)."""
VOICES = (("en-us", 170), ("en-us+f3", 185), ("en-gb-x-rp", 155), ("en-us+m3", 200))


def _stats(errors_ms: list[float]) -> dict:
    a = np.abs(np.asarray(errors_ms))
    return {"n": int(a.size), "median_abs_ms": round(float(np.median(a)), 1),
            "p90_abs_ms": round(float(np.percentile(a, 90)), 1), "max_abs_ms": round(float(a.max()), 1),
            "mean_signed_ms": round(float(np.mean(errors_ms)), 1)}


def synthesized(trials: int, rng: np.random.Generator) -> dict:
    engine = EspeakEngine.get()
    texts = [t for _, _, t in STT_UTTERANCES] + [t for _, _, t in TTS_PROMPTS[:30]]
    results = {}
    cases = []
    for i in range(trials):
        voice, rate = VOICES[i % len(VOICES)]
        x = resample(engine.render(texts[i % len(texts)], voice, rate) / 32768.0, engine.sample_rate, CATALOG_RATE)
        loud = np.flatnonzero(np.abs(x) > np.abs(x).max() * 10 ** (-60 / 20))
        cases.append(x[loud[0]:loud[-1] + 1])
    for snr in (None, 30.0, 20.0):
        starts, ends, peer_ends = [], [], []
        for speech in cases:
            lead, tail = rng.uniform(0.2, 0.8), rng.uniform(0.3, 1.0)
            speech = normalize_loudness(speech)
            x = np.concatenate([np.zeros(int(lead * CATALOG_RATE)), speech, np.zeros(int(tail * CATALOG_RATE))])
            speech_rms = np.sqrt(np.mean(speech ** 2))
            noise_rms = speech_rms * 10 ** (-snr / 20) if snr is not None else 10 ** (-70 / 20)
            x = x + pink_noise(x.size, rng) * noise_rms
            anchors = speech_anchors(to_pcm16(x))
            if anchors is None:
                continue
            true_start = int(lead * CATALOG_RATE) / CATALOG_RATE
            true_end = true_start + speech.size / CATALOG_RATE
            starts.append((anchors.speech_start - true_start) * 1000)
            ends.append((anchors.speech_end - true_end) * 1000)
            peer = peer_speech_end(to_pcm16(x), CATALOG_RATE)
            if peer is not None:
                peer_ends.append((peer - true_end) * 1000)
        key = "clean" if snr is None else f"{snr:g}dB"
        results[key] = {"speech_start": _stats(starts), "speech_end": _stats(ends), "peer_speech_end": _stats(peer_ends),
                        "missed": len(cases) - len(starts)}
    return results


def real_speech(limit: int) -> dict | None:
    """On real speech (no end is known there): the shared anchors against Silero's unpadded
    segments, and the peers' padded end (metrics.peer_anchor) against the shared end, signed: how
    much later their TTFS clock starts than voxwatch's."""
    root = Path(os.environ.get("VOXWATCH_SPEECH_DIR", REPO.parent / "shared" / "data" / "speech"))
    if not (root / "manifest.jsonl").is_file():
        return None
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    options = VadOptions(threshold=0.5, min_silence_duration_ms=300, speech_pad_ms=0)
    starts, ends, peer_minus_shared, skipped = [], [], [], 0
    hand: dict[str, list[float]] = {"shared": [], "silero": [], "peers": []}
    for line in (root / "manifest.jsonl").read_text().splitlines()[:limit]:
        item = json.loads(line)
        x, rate = read_mono(root / item["path"])
        x = normalize_loudness(resample(x, rate, CATALOG_RATE))
        ours = speech_anchors(to_pcm16(x))
        theirs = get_speech_timestamps(x.astype(np.float32), options, sampling_rate=CATALOG_RATE)
        peer = peer_speech_end(to_pcm16(x), CATALOG_RATE)
        if ours is None or not theirs or peer is None:
            skipped += 1
            continue
        starts.append((ours.speech_start - theirs[0]["start"] / CATALOG_RATE) * 1000)
        ends.append((ours.speech_end - theirs[-1]["end"] / CATALOG_RATE) * 1000)
        peer_minus_shared.append((peer - ours.speech_end) * 1000)
        if item["id"] in HAND_ENDS_MS:  # against the end marked by eye (benchmarks/data/hand_marked_ends.json)
            marked = HAND_ENDS_MS[item["id"]] / 1000
            hand["shared"].append((ours.speech_end - marked) * 1000)
            hand["silero"].append((theirs[-1]["end"] / CATALOG_RATE - marked) * 1000)
            hand["peers"].append((peer - marked) * 1000)
    return {"second_detector": "silero-vad (faster-whisper assets), threshold 0.5, no padding",
            "speech_start": _stats(starts), "speech_end": _stats(ends), "skipped": skipped,
            "peer_anchor": PEER_ANCHOR, "peer_minus_shared_end": _stats(peer_minus_shared),
            "peer_minus_shared_end_median_ms": round(float(np.median(peer_minus_shared)), 1),
            "against_hand_marked_end": {k: _stats(v) for k, v in hand.items() if v}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=60)
    parser.add_argument("--limit-real", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="4 synthesized trials, no real speech (seconds)")
    args = parser.parse_args()
    if args.quick:
        args.trials = 4
    rng = np.random.default_rng(7)
    synth = synthesized(args.trials, rng)
    print(f"{'condition':24} {'anchor':13} {'n':>4} {'median |err|':>13} {'p90 |err|':>10} {'max |err|':>10} {'mean signed':>12}")
    for key, row in synth.items():
        for anchor in ("speech_start", "speech_end", "peer_speech_end"):
            s = row[anchor]
            print(f"{'synthesized ' + key:24} {anchor:13} {s['n']:4d} {s['median_abs_ms']:11.1f}ms {s['p90_abs_ms']:8.1f}ms "
                  f"{s['max_abs_ms']:8.1f}ms {s['mean_signed_ms']:10.1f}ms")
    real = None if args.quick else real_speech(args.limit_real)
    if real is None:
        print("real speech: " + ("not read (--quick)" if args.quick else "../shared/data/speech not found")
              + "; agreement on real speech not measured")
    else:
        for anchor in ("speech_start", "speech_end"):
            s = real[anchor]
            print(f"{'real vs silero':24} {anchor:13} {s['n']:4d} {s['median_abs_ms']:11.1f}ms {s['p90_abs_ms']:8.1f}ms "
                  f"{s['max_abs_ms']:8.1f}ms {s['mean_signed_ms']:10.1f}ms")
        s = real["peer_minus_shared_end"]
        print(f"{'real: peers - shared':24} {'speech_end':13} {s['n']:4d} {s['median_abs_ms']:11.1f}ms "
              f"{s['p90_abs_ms']:8.1f}ms {s['max_abs_ms']:8.1f}ms {s['mean_signed_ms']:10.1f}ms")
        for name, s in real["against_hand_marked_end"].items():
            print(f"{'real vs hand-marked':24} {name + ' end':13} {s['n']:4d} {s['median_abs_ms']:11.1f}ms "
                  f"{s['p90_abs_ms']:8.1f}ms {s['max_abs_ms']:8.1f}ms {s['mean_signed_ms']:10.1f}ms")
        print(f"the peers' anchor ({PEER_ANCHOR}) ends a median {real['peer_minus_shared_end_median_ms']} ms after "
              f"the shared VAD's on real speech: TTFS on their anchor reads that much lower")
    worst_clean = max(synth["clean"][a]["median_abs_ms"] for a in ("speech_start", "speech_end"))
    print(f"synthesized clean median |error|: {worst_clean:.1f} ms (target <= 30 ms)")
    print(json.dumps({"benchmark": "vad_anchor_accuracy", "clean_median_abs_error_ms": worst_clean,
                      "target_met": worst_clean <= 30, "clean_median_target_met": worst_clean <= 30,
                      "synthesized": synth, "real_speech": real}))


if __name__ == "__main__":
    main()
