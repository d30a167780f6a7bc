"""WER against a direct jiwer computation, pooled vs mean of clips, and speed:
`python -m benchmarks.wer_reference`.

Hypotheses are made from the bundled references with seeded word edits (substitutions,
deletions, insertions), heavier on short clips than long ones, so the pooled WER and the mean of
per-clip WERs differ, as they do on real traffic. voxwatch's pooled WER must equal jiwer's
corpus WER over the same normalised texts (`equal_to_jiwer_target_met`). Target: >= 1,000 clips per
second (`speed_target_met`). `--quick`: 2 passes over the texts (seconds). Last line: JSON.
"""

from __future__ import annotations

import argparse
import json
import time

import jiwer
import numpy as np

from voxwatch.datasets.starter_texts import STT_UTTERANCES, TTS_PROMPTS
from voxwatch.metrics.wer import clip_wer, normalize, pooled_wer, word_errors

FILLERS = ("uh", "the", "and", "okay", "so", "account", "order", "number")


def corrupt(text: str, rate: float, rng: np.random.Generator) -> str:
    out = []
    for word in text.split():
        r = rng.random()
        if r < rate / 3:
            continue  # deletion
        if r < 2 * rate / 3:
            out.append(FILLERS[rng.integers(len(FILLERS))])  # substitution
        else:
            out.append(word)
        if rng.random() < rate / 3:
            out.append(FILLERS[rng.integers(len(FILLERS))])  # insertion
    return " ".join(out)


def make_set(copies: int, rng: np.random.Generator) -> list[tuple[str, str]]:
    refs = [t for _, _, t in STT_UTTERANCES] + [t for _, _, t in TTS_PROMPTS]
    pairs = []
    for _ in range(copies):
        for ref in refs:
            rate = 0.5 if len(ref.split()) <= 5 else 0.08
            pairs.append((ref, corrupt(ref, rate, rng)))
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--copies", type=int, default=30, help="passes over the bundled texts")
    parser.add_argument("--quick", action="store_true", help="2 passes over the bundled texts (seconds)")
    args = parser.parse_args()
    if args.quick:
        args.copies = 2
    pairs = make_set(args.copies, np.random.default_rng(11))
    start = time.perf_counter()
    parts = [word_errors(ref, hyp) for ref, hyp in pairs]
    elapsed = time.perf_counter() - start
    ours = pooled_wer(parts)
    mean_of_clips = float(np.mean([w for w in (clip_wer(p) for p in parts) if w is not None]))
    norm = [(normalize(r), normalize(h)) for r, h in pairs]
    # jiwer refuses an empty reference (voxwatch counts such a clip as N = 0); empty hypotheses stay in
    kept = [(r, h) for r, h in norm if r]
    direct = jiwer.wer([r for r, _ in kept], [h for _, h in kept])
    ours_kept = pooled_wer([p for p, (r, _) in zip(parts, norm) if r])
    speed = len(pairs) / elapsed
    print(f"clips: {len(pairs)} ({sum(p.ref_words for p in parts)} reference words)")
    print(f"pooled WER (voxwatch):          {ours:.6f}")
    print(f"pooled WER (jiwer, same texts): {direct:.6f}  (voxwatch on the same clips: {ours_kept:.6f})")
    print(f"mean of per-clip WERs:          {mean_of_clips:.6f}  (differs from pooled by {mean_of_clips - ours:+.4f})")
    print(f"speed: {speed:,.0f} clips/s, normaliser included (target >= 1,000)")
    print(json.dumps({"benchmark": "wer_reference", "clips": len(pairs), "pooled_wer": ours, "clips_compared": len(kept),
                      "pooled_wer_compared": ours_kept, "jiwer_wer": direct,
                      "equal_to_jiwer": abs(ours_kept - direct) < 1e-12,
                      "equal_to_jiwer_target_met": abs(ours_kept - direct) < 1e-12, "mean_of_clip_wers": mean_of_clips,
                      "clips_per_second": round(speed), "speed_target_met": speed >= 1000}))


if __name__ == "__main__":
    main()
