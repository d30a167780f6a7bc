"""The paired degradation statistic (voxwatch/metrics/degradation.py): a hand-computed example, its floors, and
its interval against a resampling cluster bootstrap of the same rows."""

from __future__ import annotations

import numpy as np
import pytest

from voxwatch.metrics.clustered import bootstrap_variance, design
from voxwatch.metrics.degradation import MIN_PAIRED_UTTERANCES, Side, degradation


def _side(rows: list[tuple]) -> Side:
    """rows of (utterance, tick, status, errors, words, latency)."""
    u, t, s, e, w, lat = zip(*rows)
    return Side(u, t, s, e, w, lat)


TICKS = ("t1", "t2", "t3")
# clean: a 1 error in 10 words, b 0 in 5, c 5 in 5 (c fails every degraded attempt: it must count nowhere)
CLEAN = _side([(u, t, "ok", e, w, lat + 10 * i) for u, e, w, lat in (("a", 1, 10, 100), ("b", 0, 5, 200),
                                                                    ("c", 5, 5, 1000))
               for i, t in enumerate(TICKS)])
DEGRADED = _side([(u, t, "ok", e, w, lat + 10 * i) for u, e, w, lat in (("a", 3, 10, 150), ("b", 1, 5, 250))
                  for i, t in enumerate(TICKS)] + [("c", t, "timeout", None, None, None) for t in TICKS])


def test_a_hand_computed_pair_leaves_the_unpaired_utterance_out_of_both_sides():
    d = degradation(CLEAN, DEGRADED, min_paired=2)
    assert d.paired_utterances == 2
    assert d.clean_wer == pytest.approx(3 / 45)  # a: 3 x 1 of 30 words, b: 0 of 15; c's 15 errors left out
    assert d.degraded_wer == pytest.approx(12 / 45)  # a: 3 x 3 of 30, b: 3 x 1 of 15
    assert d.wer_diff_points == pytest.approx(20.0)
    assert (d.clean_words, d.degraded_words) == (45, 45)
    assert d.clean_latency_p50 == pytest.approx(160.0)  # [100, 110, 120, 200, 210, 220]: c's 1000s left out
    assert d.degraded_latency_p50 == pytest.approx(210.0)  # [150, 160, 170, 250, 260, 270]
    assert d.latency_diff_ms == pytest.approx(50.0)
    low, high = d.wer_diff_ci
    assert low < 20.0 < high and d.reason is None


def test_below_the_paired_floor_the_difference_is_na_with_its_reason():
    d = degradation(CLEAN, DEGRADED)  # 2 paired utterances, the floor is 10
    assert d.paired_utterances == 2 < MIN_PAIRED_UTTERANCES
    assert d.wer_diff_points is None and d.wer_diff_ci is None
    assert d.reason == f"2 paired utterances, fewer than {MIN_PAIRED_UTTERANCES}"
    assert d.clean_wer == pytest.approx(3 / 45)  # each side's own figure is still shown


def test_one_tick_gives_a_difference_without_an_interval():
    one = [(f"u{i}", "t1", "ok", i % 3, 10, 100.0) for i in range(12)]
    worse = [(f"u{i}", "t1", "ok", i % 3 + 2, 10, 150.0) for i in range(12)]
    d = degradation(_side(one), _side(worse))
    assert d.wer_diff_points == pytest.approx(20.0) and d.wer_diff_ci is None
    assert d.reason == "one tick: no interval"


def test_the_interval_is_the_cluster_bootstrap_of_the_paired_rows():
    """The closed-form variance agrees with clustered.bootstrap_variance resampling utterances and ticks
    of the same stacked rows (the difference recomputed from the weighted rows)."""
    rng = np.random.default_rng(7)
    utterances, ticks = [f"u{i}" for i in range(25)], [f"t{j}" for j in range(8)]
    hard = dict(zip(utterances, rng.uniform(0.0, 0.3, len(utterances))))
    words = dict(zip(utterances, rng.integers(6, 20, len(utterances))))
    rows = {side: [] for side in ("clean", "degraded")}
    for side, extra in (("clean", 0.0), ("degraded", 0.08)):
        for u in utterances:
            for t in ticks:
                w = int(words[u])
                rows[side].append((u, t, "ok", int(rng.binomial(w, min(1.0, hard[u] + extra))), w, 100.0))
    d = degradation(_side(rows["clean"]), _side(rows["degraded"]))
    both = rows["clean"] + rows["degraded"]
    is_degraded = np.array([False] * len(rows["clean"]) + [True] * len(rows["degraded"]))
    e = np.array([r[3] for r in both], dtype=float)
    w = np.array([r[4] for r in both], dtype=float)

    def diff(weights: np.ndarray) -> float:
        dw, cw = weights * is_degraded, weights * ~is_degraded
        return 100 * ((dw @ e) / (dw @ w) - (cw @ e) / (cw @ w))

    v = bootstrap_variance(design(utterance=[r[0] for r in both], tick=[r[1] for r in both]), diff, resamples=2000)
    half = v.critical * np.sqrt(v.total)
    low, high = d.wer_diff_ci
    assert d.wer_diff_points == pytest.approx(diff(np.ones(len(both))))
    assert (high - low) / 2 == pytest.approx(half, rel=0.15)
