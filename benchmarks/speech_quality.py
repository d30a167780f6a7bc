"""The speech quality instrument against real speech: `python -m benchmarks.speech_quality`.

Recorded speech (../shared/data/speech, or VOXWATCH_SPEECH_DIR) at catalog loudness is scored by
the instrument (DNSMOS P.835 OVRL, voxwatch/providers/local/dnsmos_quality.py) clean and through
three of the catalog's degradations (voxwatch/datasets/degrade.py: pink noise at 10 dB SNR, the
phone codec, clipping). A degradation's target is met when the clean recording scores higher on
most utterances and the paired one-sided Wilcoxon signed-rank test over utterances gives p < 0.01.
The same sentences spoken by eSpeak NG (the project's local TTS) are scored too, to say where a
formant synthesizer sits against recorded speech (a finding, not a target). The instrument's cost
is its scoring time (wall and CPU) per second of audio on this machine. `--quick` scores 2 clips of the
bundled stt-starter-clean (eSpeak NG speech) instead of recorded speech: the same code path in seconds,
without ../shared/data/speech, too few to judge a target. Prints a table; last line: JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from scipy.stats import wilcoxon

from voxwatch.datasets import degrade
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.foundation.audio import normalize_loudness, resample
from voxwatch.providers.local.dnsmos_quality import INSTRUMENT_ID, DnsmosQuality
from voxwatch.providers.local.espeak_engine import EspeakEngine

from benchmarks.speech_files import read_mono

REPO = Path(__file__).resolve().parents[1]
DEGRADATIONS = ("noise", "phonecodec", "clipping")
ALPHA = 0.01


def clips(root: Path, limit: int) -> list[dict]:
    """Up to `limit` manifest entries spread evenly over the manifest (every dataset in it is drawn)."""
    items = [json.loads(line) for line in (root / "manifest.jsonl").read_text().splitlines() if line.strip()]
    step = max(1, len(items) // limit)
    return items[::step][:limit]


def recorded(root: Path, limit: int) -> list[tuple[str, str, np.ndarray, int]]:
    """(id, text, float mono audio, rate) of `limit` recorded utterances spread over the manifest."""
    out = []
    for item in clips(root, limit):
        x, rate = read_mono(root / item["path"])
        out.append((item["id"], item.get("text_cased") or item["text_norm"], x, rate))
    return out


def bundled(limit: int) -> list[tuple[str, str, np.ndarray, int]]:
    """The same from the bundled stt-starter-clean (--quick: no recorded speech needed)."""
    ds = Catalog([bundled_root()]).load("stt-starter-clean")
    return [(c.id, c.text, ds.audio(c) / 32768.0, c.sample_rate) for c in ds.clips[:limit]]


def paired(clean: np.ndarray, other: np.ndarray) -> dict:
    """How often and by how much `clean` scores above `other`, and the one-sided paired test."""
    diff = clean - other
    p = float(wilcoxon(clean, other, alternative="greater").pvalue)
    return {"n": int(diff.size), "mean_difference": float(diff.mean()), "median_difference": float(np.median(diff)),
            "clean_higher_share": float((diff > 0).mean()), "p_value": p}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=40, help="utterances scored (spread over the manifest)")
    parser.add_argument("--quick", action="store_true", help="2 bundled eSpeak NG clips instead of recorded speech (seconds)")
    args = parser.parse_args()
    root = Path(os.environ.get("VOXWATCH_SPEECH_DIR", REPO.parent / "shared" / "data" / "speech"))
    if args.quick:
        utterances, source = bundled(2), "the bundled stt-starter-clean (--quick)"
    elif (root / "manifest.jsonl").is_file():
        utterances, source = recorded(root, args.limit), str(root)
    else:
        raise SystemExit(f"real speech not found at {root}: set VOXWATCH_SPEECH_DIR")
    instrument = DnsmosQuality.get()
    espeak = EspeakEngine.get()
    scores: dict[str, list[float]] = {name: [] for name in ("clean", *DEGRADATIONS, "espeak")}
    seconds = spent = cpu = 0.0
    for uid, text, x, rate in utterances:
        clean = normalize_loudness(resample(x, rate, degrade.RATE))
        started, started_cpu = time.perf_counter(), time.process_time()
        scores["clean"].append(instrument.score(clean))
        spent, cpu = spent + time.perf_counter() - started, cpu + time.process_time() - started_cpu
        seconds += clean.size / degrade.RATE
        for name in DEGRADATIONS:
            scores[name].append(instrument.score(degrade.apply(name, clean, 0.0, clean.size / degrade.RATE, uid).audio))
        spoken = espeak.render(text, "en-us", 170) / 32768.0
        scores["espeak"].append(instrument.score(normalize_loudness(resample(spoken, espeak.sample_rate, degrade.RATE))))
    s = {k: np.asarray(v) for k, v in scores.items()}
    print(f"instrument {INSTRUMENT_ID}: {s['clean'].size} utterances from {source}")
    print(f"{'condition':22} {'mean MOS':>9} {'median':>7} {'clean - it (mean)':>18} {'clean higher':>13} {'p (one-sided)':>14}")
    kind = "bundled" if args.quick else "recorded"
    print(f"{kind + ', clean':22} {s['clean'].mean():9.3f} {np.median(s['clean']):7.3f}")
    results = {}
    for name in (*DEGRADATIONS, "espeak"):
        r = paired(s["clean"], s[name])
        results[name] = {"mean_mos": float(s[name].mean()), **r}
        label = "eSpeak NG, same text" if name == "espeak" else f"{kind} + {name}"
        print(f"{label:22} {s[name].mean():9.3f} {np.median(s[name]):7.3f} {r['mean_difference']:18.3f} "
              f"{100 * r['clean_higher_share']:12.0f}% {r['p_value']:14.2g}")
    cost, cpu_cost = spent / seconds, cpu / seconds
    print(f"cost: {cost:.3f} s of scoring ({cpu_cost:.3f} s of CPU) per second of audio, one thread, "
          f"{seconds:.0f} s of clean audio in {s['clean'].size} clips")
    out = {"benchmark": "speech_quality", "instrument": INSTRUMENT_ID, "utterances": int(s["clean"].size),
           "clean_mean_mos": float(s["clean"].mean()), "seconds_per_audio_second": cost, "cpu_seconds_per_audio_second": cpu_cost, "conditions": results}
    for name in DEGRADATIONS:
        r = results[name]
        out[f"clean_above_{name}_target_met"] = r["clean_higher_share"] > 0.5 and r["p_value"] < ALPHA
    print(json.dumps(out))


if __name__ == "__main__":
    main()
