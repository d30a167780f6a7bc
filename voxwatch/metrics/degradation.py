"""The paired degradation statistic (METHOD "Clean against degraded"): how much worse a model does on a
degraded condition of a dataset family than on its clean recordings, defined once for the web page,
the API and their tests.

Why pairing: a degraded dataset is its clean dataset's clips through a transform (noise, a phone
codec, clipping), one clip per utterance. Two windows rarely hold the same utterances (a failed
attempt, a sampled run), and utterances differ far more in difficulty than conditions do: pooled
WER over whatever each side happened to measure mixes "harder condition" with "harder sentences".
Only utterances measured `ok` and scored in both the clean and the degraded condition count, on
both sides, so the difference is the condition's alone. An utterance is its `utterance_id`; every
ok scored row of a paired utterance in the window counts.

The difference (degraded minus clean pooled WER, in percentage points) gets a 95 % interval from
the multiway cluster variance of voxwatch/metrics/clustered.py over the rows of both sides together,
clustered by utterance and tick: an utterance's clean and degraded rows share its cluster, so what
an utterance contributes to both sides cancels in the variance as it does in the estimate. The
variance is the first-order (linearized) cluster bootstrap of a difference of two ratios: each
row's influence is its side's ratio residual over its side's words, signed by side.

Below MIN_PAIRED_UTTERANCES paired utterances the difference is None with its reason (a handful of
sentences says nothing about a condition); the pooled WERs have their own floor (series.pooled_wer).
Latency: the protocol's headline latency (its ranked metric) p50 on the paired utterances' ok rows
of each side, and the difference of the two medians (no interval: a difference of medians has no
closed-form clustered variance here, and the page says so by showing none).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Sequence

import numpy as np

from voxwatch.metrics.clustered import design, influence_variance, t_interval
from voxwatch.metrics.series import MIN_CLUSTERS, percentile, pooled_wer, present

MIN_PAIRED_UTTERANCES = 10
"""Fewest utterances measured ok in both conditions for a difference (the alerts' WER pairing floor
defaults to the same number: config [alerts] min_paired_utterances)."""


@dataclass(frozen=True)
class Side:
    """One condition's rows of one series: each row's utterance, tick, status, WER parts and headline latency."""
    utterances: Sequence[Hashable]
    ticks: Sequence[Hashable]
    statuses: Sequence[str]
    errors: Sequence[int | None]  # S + D + I; None where not scored
    words: Sequence[int | None]
    latency: Sequence[float | None]


@dataclass(frozen=True)
class Degradation:
    """Clean against one degraded condition on the paired utterances. WERs are fractions; the
    difference is in percentage points (degraded minus clean); latencies in ms."""
    paired_utterances: int
    clean_wer: float | None
    degraded_wer: float | None
    wer_diff_points: float | None
    wer_diff_ci: tuple[float, float] | None
    clean_words: int
    degraded_words: int
    clean_latency_p50: float | None
    degraded_latency_p50: float | None
    latency_diff_ms: float | None
    reason: str | None  # why the difference (or its interval) is n/a; None when both are there


def _scored(side: Side) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The ok scored rows of a side: utterance, tick, errors, words, and the ok mask over every row."""
    status = np.asarray(side.statuses, dtype=object)
    e = np.asarray(side.errors, dtype=np.float64)
    w = np.asarray(side.words, dtype=np.float64)
    keep = (status == "ok") & ~np.isnan(e) & ~np.isnan(w)
    u, t = np.asarray(side.utterances, dtype=object), np.asarray(side.ticks, dtype=object)
    return u[keep], t[keep], e[keep], w[keep], status == "ok"


def degradation(clean: Side, degraded: Side, min_paired: int = MIN_PAIRED_UTTERANCES) -> Degradation:
    """The paired degradation of one series (model, region, method version) from a clean dataset to
    one degraded condition of its family, over the rows of a window."""
    cu, ct, ce, cw, c_ok = _scored(clean)
    du, dt, de, dw, d_ok = _scored(degraded)
    paired = set(cu.tolist()) & set(du.tolist())
    cin = np.array([u in paired for u in cu], dtype=bool)
    din = np.array([u in paired for u in du], dtype=bool)
    ce, cw, de, dw = ce[cin], cw[cin], de[din], dw[din]
    c_wer, d_wer = pooled_wer(ce, cw), pooled_wer(de, dw)
    c_lat = _paired_p50(clean, c_ok, paired)
    d_lat = _paired_p50(degraded, d_ok, paired)
    lat_diff = d_lat - c_lat if c_lat is not None and d_lat is not None else None
    diff, ci, reason = None, None, None
    if len(paired) < min_paired:
        reason = f"{len(paired)} paired utterances, fewer than {min_paired}"
    elif c_wer is None or d_wer is None:
        reason = "no scored words on one side"
    else:
        diff = 100 * (d_wer - c_wer)
        ci, reason = _diff_interval(np.concatenate([cu[cin], du[din]]), np.concatenate([ct[cin], dt[din]]),
                                    ce, cw, c_wer, de, dw, d_wer)
    return Degradation(paired_utterances=len(paired), clean_wer=c_wer, degraded_wer=d_wer, wer_diff_points=diff,
                       wer_diff_ci=ci, clean_words=int(cw.sum()), degraded_words=int(dw.sum()),
                       clean_latency_p50=c_lat, degraded_latency_p50=d_lat, latency_diff_ms=lat_diff, reason=reason)


def _paired_p50(side: Side, ok: np.ndarray, paired: set) -> float | None:
    """The headline latency's p50 over a side's ok rows of the paired utterances (series.percentile's floor)."""
    u = np.asarray(side.utterances, dtype=object)
    keep = ok & np.array([x in paired for x in u], dtype=bool)
    values = np.asarray(side.latency, dtype=np.float64)[keep] if keep.size else np.zeros(0)
    return percentile(present(values), 50)


def _diff_interval(utterances: np.ndarray, ticks: np.ndarray, ce: np.ndarray, cw: np.ndarray, c_wer: float,
                   de: np.ndarray, dw: np.ndarray, d_wer: float) -> tuple[tuple[float, float] | None, str | None]:
    """The 95 % interval of the difference in points, over both sides' rows clustered by utterance and tick."""
    d = design(utterance=utterances.tolist(), tick=ticks.tolist())
    if min(d.sizes) < MIN_CLUSTERS:
        return None, "one tick: no interval"
    influence = np.concatenate([-(ce - c_wer * cw) / cw.sum(), (de - d_wer * dw) / dw.sum()])
    v = influence_variance(d, 100 * influence)
    return t_interval(100 * (d_wer - c_wer), v), None
