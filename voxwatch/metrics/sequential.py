"""The sequential test of the sentinel panel (docs/ALERTS.md "Sequential rules"): a capped CUSUM over
paired per-run differences, computed afresh from stored rows at each evaluation.

Every tick (and every confirmation burst) measures the same panel utterances, so one run is one
observation: its panel utterances compared with their own baseline. Runs are the unit because the
rows of a run share the provider's state; utterances are paired because they differ far more from
each other than a provider drifts. The scale of an observation is the baseline's own spread of
observations (robust: MAD), so a slow tick in the baseline does not widen it, and each increment
is capped, so one slow tick cannot reach a threshold alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Sequence

import numpy as np

from voxwatch.metrics.detection import robust_sd


@dataclass(frozen=True)
class Observations:
    """One value per run, in time order: `at` its first row's time, `value` its paired difference."""
    at: np.ndarray
    value: np.ndarray
    rows: np.ndarray


def _runs(runs: Sequence[Hashable], started: Sequence[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's run index (runs ordered by their first row), and each run's first time."""
    r = np.asarray(runs)
    t = np.asarray(started, dtype=np.float64)
    labels, code = np.unique(r, return_inverse=True)
    code = code.ravel()
    first = np.full(labels.size, np.inf)
    np.minimum.at(first, code, t)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[code], first[order], np.bincount(rank[code], minlength=labels.size)


@dataclass(frozen=True)
class Reference:
    """Each baseline utterance's figure (sorted keys), what its later rows are paired with."""
    keys: np.ndarray
    values: np.ndarray

    def of(self, utterances: Sequence[Hashable]) -> np.ndarray:
        """Each row's utterance figure; NaN for an utterance the baseline did not measure."""
        u = np.asarray(utterances)
        if self.keys.size == 0:
            return np.full(u.size, np.nan)
        at = np.clip(np.searchsorted(self.keys, u), 0, self.keys.size - 1)
        return np.where(self.keys[at] == u, self.values[at], np.nan)


def utterance_reference(values: Sequence[float], utterances: Sequence[Hashable]) -> Reference:
    """Each utterance's baseline median (of log latency)."""
    v = np.asarray(values, dtype=np.float64)
    keys, code = np.unique(np.asarray(utterances), return_inverse=True)
    code = code.ravel()
    order = np.lexsort((v, code))
    v, count = v[order], np.bincount(code, minlength=keys.size)
    starts = np.r_[0, np.cumsum(count)[:-1]]
    return Reference(keys, (v[starts + (count - 1) // 2] + v[starts + count // 2]) / 2)


def utterance_wer(errors: Sequence[int], words: Sequence[int], utterances: Sequence[Hashable]) -> Reference:
    """Each utterance's pooled baseline WER (errors over reference words; NaN with no words)."""
    keys, code = np.unique(np.asarray(utterances), return_inverse=True)
    code = code.ravel()
    e = np.bincount(code, weights=np.asarray(errors, dtype=np.float64), minlength=keys.size)
    w = np.bincount(code, weights=np.asarray(words, dtype=np.float64), minlength=keys.size)
    return Reference(keys, np.where(w > 0, e / np.where(w > 0, w, 1), np.nan))


def latency_observations(log_values: Sequence[float], utterances: Sequence[Hashable], runs: Sequence[Hashable],
                         started: Sequence[float], reference: Reference) -> Observations:
    """Per run: the median over its panel rows of log(latency) minus that utterance's baseline median
    log (a log ratio; rows of utterances with no reference take no part)."""
    v, u = np.asarray(log_values, dtype=np.float64), np.asarray(utterances)
    ref = reference.of(u)
    keep = ~np.isnan(ref) & ~np.isnan(v)
    if not keep.any():
        return Observations(np.empty(0), np.empty(0), np.empty(0, dtype=np.int64))
    code, first, count = _runs(np.asarray(runs)[keep], np.asarray(started)[keep])
    d = (v - ref)[keep]
    order = np.lexsort((d, code))
    d, code = d[order], code[order]
    starts = np.r_[0, np.cumsum(count)[:-1]]
    med = (d[starts + (count - 1) // 2] + d[starts + count // 2]) / 2
    return Observations(first, med, count)


def wer_observations(errors: Sequence[int], words: Sequence[int], utterances: Sequence[Hashable],
                     runs: Sequence[Hashable], started: Sequence[float], reference: Reference) -> Observations:
    """Per run: its panel errors minus words x each utterance's baseline WER, over its panel words
    (a WER difference as a fraction; the draw of utterances cancels out)."""
    e, w, u = (np.asarray(errors, dtype=np.float64), np.asarray(words, dtype=np.float64), np.asarray(utterances))
    ref = reference.of(u)
    keep = ~np.isnan(ref) & (w > 0)
    if not keep.any():
        return Observations(np.empty(0), np.empty(0), np.empty(0, dtype=np.int64))
    code, first, count = _runs(np.asarray(runs)[keep], np.asarray(started)[keep])
    excess = np.bincount(code, weights=(e - w * ref)[keep], minlength=first.size)
    total = np.bincount(code, weights=w[keep], minlength=first.size)
    return Observations(first, excess / total, count)


def cusum(z: np.ndarray, k: float, cap: float) -> np.ndarray:
    """The one-sided CUSUM path S_t = max(0, S_(t-1) + min(z_t, cap) - k), S_0 = 0: evidence of an
    increase accumulates by what each observation exceeds the allowance k, never more than cap - k
    at once, and drains by k when the series is back to its baseline."""
    out = np.empty(len(z))
    s = 0.0
    for i, v in enumerate(np.minimum(np.asarray(z, dtype=np.float64), cap)):
        s = max(0.0, s + v - k)
        out[i] = s
    return out


@dataclass(frozen=True)
class Sequential:
    """The CUSUM of a window's observations against the baseline's: its value at the newest
    observation, the effect (the mean difference over the observations since the CUSUM last stood
    at zero, the run of evidence; the newest one alone when it stands at zero) with a 95 % interval
    at the baseline's scale, and the counts."""
    statistic: float
    effect: float
    low: float
    high: float
    scale: float
    n_recent: int
    n_evidence: int
    n_baseline: int
    newest_at: float


def sequential_shift(recent: Observations, baseline: Observations, k: float, cap: float) -> Sequential | None:
    """The recent window's observations standardised by the baseline's (centre: their median; scale:
    their robust sd), through cusum(). None with no recent observation, or a baseline of fewer than
    3 observations or no spread."""
    if recent.value.size == 0 or baseline.value.size < 3:
        return None
    centre, scale = float(np.median(baseline.value)), robust_sd(baseline.value)
    if not scale > 0:
        return None
    d = recent.value - centre
    path = cusum(d / scale, k, cap)
    zeros = np.flatnonzero(path == 0)
    since = int(zeros[-1]) + 1 if zeros.size else 0
    segment = d[since:] if since < d.size else d[-1:]
    half = 1.96 * scale / np.sqrt(segment.size)
    effect = float(segment.mean())
    return Sequential(float(path[-1]), effect, effect - half, effect + half, scale, int(d.size), int(segment.size),
                      int(baseline.value.size), float(recent.at[-1]))
