"""Rows of the bundled stt-starter family (clean, noise, clipping) for the clean-vs-degraded page and the
speaker and accent filters: two STT models over 12 utterances and 4 ticks, two speakers, two accents."""

from __future__ import annotations

import time

import numpy as np

from voxwatch.metrics import METHOD_VERSION
from voxwatch.foundation.observation import Observation

NOW = time.time()
DAY = 86400.0
FAMILY = "stt-starter"
CLEAN, NOISE, CLIPPING = "stt-starter-clean", "stt-starter-noise", "stt-starter-clipping"
CONDITIONS = {CLEAN: "clean", NOISE: "noise", CLIPPING: "clipping"}
UTTERANCES = [f"utt{i:02d}" for i in range(12)]
TICKS = 4
MODELS = {"deepgram/nova-3": ("stt-stream", "ttfs_ms"), "openai/whisper-1": ("stt-batch", "latency_ms")}
SPEAKER = {u: "alice" if i < 6 else "bob" for i, u in enumerate(UTTERANCES)}
ACCENT = {u: "us" if i % 2 == 0 else "scottish" for i, u in enumerate(UTTERANCES)}
LOST = "utt11"
"""Every noise attempt on this utterance times out: it must count on neither side of the noise pair."""
CLIPPED = UTTERANCES[:6]
"""Only these were measured clipped: 6 paired utterances, under the floor (10)."""
HAND = "hand-family"
"""A second family: 3 utterances, the third never measured ok degraded (the hand-computed example)."""


def _row(model_id: str, dataset: str, utterance: str, tick: int, status: str, rng: np.random.Generator,
         family: str = FAMILY, condition: str | None = None, **fixed) -> Observation:
    protocol, metric = MODELS[model_id]
    row = Observation(run_id=f"fam-run-{tick}", model_id=model_id, dataset=dataset,
                      clip_id=f"{utterance}-{(condition or CONDITIONS[dataset])[:4]}", attempt=1, board="stt",
                      vendor=model_id.split("/")[0], protocol=protocol, region="us-east",
                      started_at=NOW - (0.5 + tick) * DAY + sum(map(ord, utterance)) % 600, status=status,
                      condition=condition or CONDITIONS[dataset], family=family, utterance_id=utterance,
                      speaker=SPEAKER.get(utterance), accent=ACCENT.get(utterance), language="en",
                      method_version=METHOD_VERSION, emulator=False)
    if status != "ok":
        return row
    if fixed:
        for k, v in fixed.items():
            setattr(row, k, v)
        return row
    degraded = row.condition != "clean"
    words = 8 + UTTERANCES.index(utterance) % 5
    setattr(row, metric, float(300 + 40 * degraded + 50 * rng.standard_normal()))
    if protocol == "stt-stream":
        row.first_partial_ms = float(150 + 20 * rng.standard_normal())
    else:
        row.rtf = float(rng.uniform(0.05, 0.3))
    row.substitutions = int(rng.binomial(words, 0.25 if degraded else 0.08))
    row.deletions = int(rng.integers(0, 2))
    row.insertions = 0
    row.ref_words = words
    return row


def family_rows() -> list[Observation]:
    rng = np.random.default_rng(20261202)
    rows = []
    for model_id in MODELS:
        for tick in range(TICKS):
            for u in UTTERANCES:
                rows.append(_row(model_id, CLEAN, u, tick, "error" if (tick, u) == (2, "utt03") else "ok", rng))
                rows.append(_row(model_id, NOISE, u, tick, "timeout" if u == LOST else "ok", rng))
                if u in CLIPPED:
                    rows.append(_row(model_id, CLIPPING, u, tick, "ok", rng))
    # the hand-computed family: a 1 error in 10 words clean and 3 degraded; b 0 in 5 and 1; c fails degraded
    for tick in range(3):
        for u, clean, noisy, lat in (("a", 1, 3, 100.0), ("b", 0, 1, 200.0), ("c", 5, None, 1000.0)):
            words = 10 if u == "a" else 5
            rows.append(_row("deepgram/nova-3", "hand-clean", u, tick, "ok", rng, HAND, "clean", substitutions=clean,
                             deletions=0, insertions=0, ref_words=words, ttfs_ms=lat + 10 * tick))
            rows.append(_row("deepgram/nova-3", "hand-noise", u, tick, "ok" if noisy is not None else "timeout", rng,
                             HAND, "noise", substitutions=noisy, deletions=0, insertions=0, ref_words=words,
                             ttfs_ms=lat + 50 + 10 * tick))
    return rows
