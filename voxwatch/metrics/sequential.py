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


def factorise(labels: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct labels, each row's index among them): np.unique's answer, in O(rows) for
    small non-negative integer labels (run and utterance codes the evaluator made once)."""
    a = np.asarray(labels)
    if a.dtype.kind in "iu" and a.size and a.min() >= 0 and a.max() < 4 * a.size + 1024:
        present = np.bincount(a) > 0
        index = np.cumsum(present) - 1
        return np.flatnonzero(present), index[a]
    keys, code = np.unique(a, return_inverse=True)
    return keys, code.ravel()


def group_medians(values: np.ndarray, code: np.ndarray, groups: int) -> np.ndarray:
    """Each group's median of `values` (code: each value's group, 0..groups-1; NaN for an empty group),
    without sorting the rows by value: a stable integer sort by group, then each group's values sorted
    in a padded matrix (groups are runs of ~20 panel rows, or utterances of ~1,440)."""
    v, c = np.asarray(values, dtype=np.float64), np.asarray(code, dtype=np.int64)
    count = np.bincount(c, minlength=groups)
    width = int(count.max()) if c.size else 0
    out = np.full(groups, np.nan)
    if width == 0:
        return out
    if groups * width > 8 * c.size + 4096:  # very unequal groups: one lexsort instead of a padded matrix
        order = np.lexsort((v, c))
        starts = np.r_[0, np.cumsum(count)[:-1]]
        has = count > 0
        sv = v[order]
        lo, hi = starts + (count - 1) // 2, starts + count // 2
        out[has] = (sv[lo[has]] + sv[hi[has]]) / 2
        return out
    order = np.argsort(c.astype(np.uint16) if groups <= 65536 else c, kind="stable")
    starts = np.r_[0, np.cumsum(count)[:-1]]
    sc = c[order]
    matrix = np.full((groups, width), np.inf)
    matrix[sc, np.arange(c.size) - starts[sc]] = v[order]
    matrix.sort(axis=1)
    has = count > 0
    rows = np.flatnonzero(has)
    out[has] = (matrix[rows, (count[has] - 1) // 2] + matrix[rows, count[has] // 2]) / 2
    return out


def _runs(runs: Sequence[Hashable], started: Sequence[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's run index (runs ordered by their first row), each run's first time and row count."""
    t = np.asarray(started, dtype=np.float64)
    labels, code = factorise(runs)
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
    keys, code = factorise(utterances)
    return Reference(keys, group_medians(values, code, keys.size))


def utterance_wer(errors: Sequence[int], words: Sequence[int], utterances: Sequence[Hashable]) -> Reference:
    """Each utterance's pooled baseline WER (errors over reference words; NaN with no words)."""
    keys, code = factorise(utterances)
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
    med = group_medians((v - ref)[keep], code, first.size)
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
    observation, the effect (the mean difference over the observations since the change,
    latest_change()) with a 95 % interval at the baseline's scale, and the counts."""
    statistic: float
    effect: float
    low: float
    high: float
    scale: float
    n_recent: int
    n_evidence: int
    n_baseline: int
    newest_at: float


def latest_change(d: np.ndarray, path: np.ndarray) -> np.ndarray:
    """The observations since the change, as the effect is estimated from: of the run of evidence
    (the observations since the CUSUM last stood at zero; the newest one alone when it stands at
    zero), its most recent stretch of j observations with the largest sqrt(j) x mean, the
    likelihood-ratio estimate of where a step began. Evidence that accumulated slowly before a
    step (observations just over the allowance) does not dilute the step's size."""
    zeros = np.flatnonzero(path == 0)
    since = int(zeros[-1]) + 1 if zeros.size else 0
    segment = d[since:] if since < d.size else d[-1:]
    n = np.arange(1, segment.size + 1)
    means = np.cumsum(segment[::-1]) / n
    j = int(np.argmax(means * np.sqrt(n))) + 1
    return segment[-j:]


HOUR_S = 3600.0
MIN_PER_HOUR_CENTRE = 8
"""Fewer baseline observations in an hour-of-day window than this: the overall median is its centre."""


def hour_centres(baseline: Observations, hours: int) -> np.ndarray:
    """The baseline's centre for each UTC hour of day (24 values): the median of the baseline
    observations that started within the `hours` one-hour bins centred on it (a circular window:
    hours = 3 is that hour and its two neighbours). A provider's latency follows its load through
    the day, so an observation is compared with the baseline at a similar time of day, not with the
    day's median; an hour with fewer than MIN_PER_HOUR_CENTRE observations takes the overall median.
    hours <= 0 or >= 24: the overall median for every hour."""
    overall = float(np.median(baseline.value))
    if hours <= 0 or hours >= 24:
        return np.full(24, overall)
    hour = (np.floor(baseline.at / HOUR_S) % 24).astype(np.int64)
    half = hours // 2
    offsets = np.arange(-half, hours - half)
    code = ((hour[None, :] + offsets[:, None]) % 24).ravel()
    values = np.tile(baseline.value, offsets.size)
    centres = group_medians(values, code, 24)
    count = np.bincount(code, minlength=24)
    return np.where(count >= MIN_PER_HOUR_CENTRE, centres, overall)


def _hour(at: np.ndarray) -> np.ndarray:
    return (np.floor(np.asarray(at, dtype=np.float64) / HOUR_S) % 24).astype(np.int64)


def sequential_shift(recent: Observations, baseline: Observations, k: float, cap: float,
                     hours: int = 0) -> Sequential | None:
    """The recent window's observations standardised by the baseline's (centre: their median at a
    similar time of day, hour_centres(); scale: the robust sd of the baseline observations about
    their own hours' centres), through cusum(). None with no recent observation, or a baseline of
    fewer than 3 observations or no spread."""
    if recent.value.size == 0 or baseline.value.size < 3:
        return None
    centres = hour_centres(baseline, hours)
    scale = robust_sd(baseline.value - centres[_hour(baseline.at)])
    if not scale > 0:
        return None
    d = recent.value - centres[_hour(recent.at)]
    path = cusum(d / scale, k, cap)
    segment = latest_change(d, path)
    half = 1.96 * scale / np.sqrt(segment.size)
    effect = float(segment.mean())
    return Sequential(float(path[-1]), effect, effect - half, effect + half, scale, int(d.size), int(segment.size),
                      int(baseline.value.size), float(recent.at[-1]))
