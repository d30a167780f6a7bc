"""Two models on the same clips (METHOD "Paired comparisons"): differences that what they share cancels.

Every tick draws one sample of clips and every model of a ranking hears exactly that sample, so two
series of one ranking share cells: one utterance at one tick. A comparison uses only the cells
both measured, and its variance is the multiway one of the per-cell differences (utterance x
tick, voxwatch/metrics/clustered.py). An utterance that is slow, or hard, for both models moves
both sides of a cell alike and cancels; in a per-series interval it is counted twice and never
shrinks with more ticks, which is why two overlapping per-series intervals cannot separate two
models that differ on every clip.

- A latency difference is the median of the per-cell differences (b's value minus a's on the same
  clip at the same tick), shown beside each side's p50 over the shared cells. It is tested by a
  clustered sign test (the share of cells where b is faster, against one half, with the multiway
  standard error of the share below the median), which needs no density estimate and which one
  outlying cell cannot move; its interval is Woodruff's from that same error. A simulated pair of models 20 ms apart
  on every clip is told apart after 96 ticks in 95 % of boards this way, against 80-94 % by the
  difference of the two p50s (benchmarks/rank_power.py).
- The WER difference is the difference of the two pooled WERs over the shared scored cells, its
  variance from the same per-cell influences of the two ratios.

Each difference has a two-sided p-value (Student's t at Satterthwaite's degrees of freedom); Holm's
step-down procedure over a ranking's pairs gives each pair's verdict, so across all the pairs of a
ranking the chance of ordering any two models by noise stays under 5 %, and each pair's interval
is at the level Holm tested it at (holm_levels), excluding 0 exactly when the difference is shown.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import combinations
from typing import Callable, Hashable, Mapping, Sequence

import numpy as np

from voxwatch.metrics.clustered import Design, Variance, bootstrap_variance, design, influence_variance, ratio_variance
from voxwatch.foundation.series_key import SeriesKey
from voxwatch.metrics.series import MIN_CLUSTERS, MIN_N, SeriesData, percentile_floor, scored_clips

FAMILY_LEVEL = 0.05
"""The family-wise error rate of one ranking's pairwise verdicts (Holm over its pairs)."""


@dataclass(frozen=True)
class Cells:
    """One series' values on the cells it measured, one value per cell (utterance, tick), sorted by
    the cell's label `keys` (utterance and tick joined, or in `compare` the label's integer code in
    its ranking, which sorts as the label does), so two series align by a merge."""
    keys: np.ndarray
    utterances: np.ndarray
    ticks: np.ndarray
    values: np.ndarray


def cells(utterances: Sequence[Hashable], ticks: Sequence[Hashable], values: Sequence[float | None],
          codes: np.ndarray | None = None) -> Cells:
    """A series' rows as cells: rows without a value (None, NaN) are left out, and a cell measured
    twice (an utterance in both a tick's panel and its draw) counts once, at its rows' median. With
    `codes` (each row's label code, `label_codes`) the cells are keyed by them, not by the labels."""
    v = np.asarray(values, dtype=np.float64)
    keep = np.flatnonzero(~np.isnan(v))
    u = np.asarray(utterances, dtype=object)[keep]
    t = np.asarray(ticks, dtype=object)[keep]
    if codes is None:
        labels = np.array([f"{a}\x1f{b}" for a, b in zip(u.tolist(), t.tolist())], dtype=object).astype(str)
    else:
        labels = np.asarray(codes)[keep]
    keys, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    out = v[keep][first]
    if keys.size < labels.size:  # some cell has several rows: its median
        inverse = inverse.ravel()
        for i in np.flatnonzero(np.bincount(inverse) > 1):
            out[i] = float(np.median(v[keep][inverse == i]))
    return Cells(keys, u[first], t[first], out)


def shared(a: Cells, b: Cells) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The cells both series measured: their utterances, ticks and each side's values, aligned."""
    _, ia, ib = np.intersect1d(a.keys, b.keys, assume_unique=True, return_indices=True)
    return a.utterances[ia], a.ticks[ia], a.values[ia], b.values[ib]


@dataclass(frozen=True)
class Difference:
    """Model b minus model a on the cells both measured: each side's figure there, the difference, its
    95 % interval and two-sided p-value (None below the floors), and what it was estimated on."""
    a: float | None
    b: float | None
    estimate: float | None
    ci: tuple[float, float] | None
    p_value: float | None
    cells: int
    utterances: int
    ticks: int


def _empty(n: int, d: Design | None) -> Difference:
    sizes = d.sizes if d is not None and d.rows else (0, 0)
    return Difference(None, None, None, None, None, n, sizes[0], sizes[1])


def _finish(a: float, b: float, v: Variance, d: Design) -> Difference:
    """A difference of two ratios with its two-sided t p-value (its interval is set by `at_level`)."""
    from scipy.stats import t as student_t  # imported when first needed, as in clustered.py

    estimate = b - a
    se = float(np.sqrt(v.total))
    if se > 0:
        p = float(2 * student_t.sf(abs(estimate) / se, v.df))
    else:  # every cell differs by the same amount: certain, unless that amount is nothing
        p = 1.0 if estimate == 0 else 0.0
    return Difference(a, b, estimate, None, p, d.rows, d.sizes[0], d.sizes[1])


def _t_interval(estimate: float, v: Variance) -> Callable[[float], tuple[float, float]]:
    """The t interval of a difference at a two-sided level alpha: it excludes 0 exactly when the
    t test's p-value is under alpha."""
    half = float(np.sqrt(v.total))
    return lambda alpha: (estimate - v.critical_at(alpha) * half, estimate + v.critical_at(alpha) * half)


def _enough(n: int, d: Design) -> bool:
    return n >= MIN_N and min(d.sizes) >= MIN_CLUSTERS


@dataclass(frozen=True)
class Tested:
    """A difference with its p-value, and its interval at any two-sided level alpha (None when the
    difference is under the floors), the two from one standard error."""
    difference: Difference
    interval: Callable[[float], tuple[float, float]] | None

    def at_level(self, alpha: float, shown: bool) -> Difference:
        """The difference with its interval at level alpha, holding the verdict `shown` (its Holm-adjusted
        p-value at most the family's level): where a quantile's step leaves the interval on the other
        side of 0 from the verdict, its bound nearest 0 is moved to 0's side the estimate is on (or out
        to 0), so the interval excludes 0 exactly when the difference is shown."""
        estimate = self.difference.estimate
        if self.interval is None or estimate is None:
            return self.difference
        low, high = self.interval(alpha)
        if shown and low <= 0 <= high and estimate != 0:
            low, high = (max(low, np.nextafter(0.0, 1.0)), high) if estimate > 0 else (low, min(high, np.nextafter(0.0, -1.0)))
        elif not (shown and estimate != 0):
            low, high = min(low, 0.0), max(high, 0.0)
        return replace(self.difference, ci=(float(low), float(high)))


def ratio_difference(a_errors: Cells, a_words: Cells, b_errors: Cells, b_words: Cells) -> Tested:
    """Pooled WER of b minus pooled WER of a over the scored cells both have (errors and reference
    words per cell: S + D + I and N): positive when b makes more errors on the same clips."""
    u, t, ea, eb = shared(a_errors, b_errors)
    _, _, wa, wb = shared(a_words, b_words)
    d = design(utterance=u, tick=t) if u.size else None
    if d is None or not _enough(u.size, d) or wa.sum() <= 0 or wb.sum() <= 0:
        return Tested(_empty(int(u.size), d), None)
    ra, rb = ea.sum() / wa.sum(), eb.sum() / wb.sum()
    influence = (eb - rb * wb) / wb.sum() - (ea - ra * wa) / wa.sum()
    v = influence_variance(d, influence)
    return Tested(_finish(float(ra), float(rb), v, d), _t_interval(float(rb - ra), v))


def holm(p_values: Sequence[float | None], level: float = FAMILY_LEVEL) -> list[bool]:
    """Which hypotheses Holm's step-down procedure rejects at family-wise level `level` (the smallest
    p-value against level / m, the next against level / (m - 1), ..., stopping at the first that
    fails): those whose Holm-adjusted p-value is at most `level`. A missing p-value (no comparison)
    is never rejected and does not count in m."""
    return [a is not None and a <= level for a in holm_adjusted(p_values)]


def holm_adjusted(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values: a pair is shown at family-wise level L exactly when its adjusted p <= L."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for k, (p, i) in enumerate(tested):
        running = max(running, min(1.0, (len(tested) - k) * p))
        out[i] = running
    return out




def median_paired_difference(a: Cells, b: Cells) -> Tested:
    """The median over the shared cells of b's value minus a's (latency: positive when b is slower on
    the same clip at the same tick), each side's p50 over those cells, and one clustered test and
    interval from one standard error: that of the share of cells below the median (multiway,
    Student's t at Satterthwaite's degrees of freedom). The test sets the share of cells where b is
    faster (a tie counts half) against 1/2; the interval at a level is Woodruff's, the differences'
    quantiles at 1/2 -+ t x that error, so a shift outside it is one the test rejects. No density
    estimate, and one cell's outlier moves nothing."""
    from scipy.stats import t as student_t  # imported when first needed, as in clustered.py

    u, t, xa, xb = shared(a, b)
    d = design(utterance=u, tick=t) if u.size else None
    if d is None or not _enough(u.size, d):
        return Tested(_empty(int(u.size), d), None)
    diff = xb - xa
    median = float(np.median(diff))
    v = ratio_variance(d, _below(diff, median), np.ones(diff.size))  # never None: the denominator is n ones
    se, faster = float(np.sqrt(v.total)), float(_below(diff, 0.0).mean())
    p = min(1.0, float(2 * student_t.sf(abs(faster - 0.5) / se, v.df))) if se > 0 else (1.0 if faster == 0.5 else 0.0)

    def interval(alpha: float) -> tuple[float, float]:
        half = v.critical_at(alpha) * se
        low, high = np.percentile(diff, [100 * max(0.0, 0.5 - half), 100 * min(1.0, 0.5 + half)], method="linear")
        return float(min(low, median)), float(max(high, median))

    return Tested(Difference(float(np.median(xa)), float(np.median(xb)), median, None, p, d.rows, d.sizes[0],
                             d.sizes[1]), interval)


def _below(diff: np.ndarray, shift: float) -> np.ndarray:
    """Each cell's indicator of a difference below `shift`, a tie counting half."""
    return (diff < shift).astype(np.float64) + 0.5 * (diff == shift)


def holm_levels(p_values: Sequence[float | None], level: float = FAMILY_LEVEL) -> list[float | None]:
    """The level Holm's step-down procedure tests each hypothesis at: the k-th smallest p-value of m
    against level / (m - k + 1) while they are rejected; every hypothesis from the first that is
    not rejected on, at the level that one failed at. A hypothesis is rejected exactly when its
    p-value is at most its level (its Holm-adjusted p-value at most `level`), and an interval at
    its level excludes 0 exactly then. None for a missing p-value."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    out: list[float | None] = [None] * len(p_values)
    stopped: float | None = None
    for k, (p, i) in enumerate(tested):
        step = level / (len(tested) - k)
        if stopped is None and p > step:
            stopped = step
        out[i] = step if stopped is None else stopped
    return out


@dataclass(frozen=True)
class Comparison:
    """Two series of one ranking compared on the cells both measured, for one statistic: `statistic`
    is a headline latency metric (the median of the paired differences) or "pooled_wer" (the
    difference of the pooled WERs). `shown` is Holm's verdict over the ranking's pairs for this
    statistic (family-wise 5 %): the difference is shown, in the direction of its sign."""
    a: SeriesKey
    b: SeriesKey
    statistic: str
    difference: Difference
    p_holm: float | None
    shown: bool

    @property
    def ranking(self) -> tuple[str, ...]:
        return ranking_of(self.a)


def ranking_of(key: SeriesKey) -> tuple[str, str, str, str, str]:
    """The ranking a series is compared and ranked in: its board, dataset, protocol, region and method
    version. Series of other regions were measured at other ticks (no shared cells), and method
    versions are never pooled."""
    return key.board, key.dataset, key.protocol, key.region, key.method_version


def series_cells(data: SeriesData, codes: np.ndarray | None = None) -> dict[str, Cells]:
    """A series' cells for every statistic it can be compared on: each headline metric (ok rows with
    a value), and errors and words (ok, scored rows); keyed by `codes` where given (`cells`)."""
    status = np.asarray(data.statuses, dtype=object)
    ok = status == "ok"
    out = {}
    for name, column in data.values.items():
        v = np.asarray(column, dtype=np.float64)
        out[name] = cells(data.utterances, data.ticks, np.where(ok, v, np.nan), codes)
    scored, _, _ = scored_clips(status, data.errors, data.words)
    errors = np.where(scored, np.asarray(data.errors, dtype=np.float64), np.nan)
    words = np.where(scored, np.asarray(data.words, dtype=np.float64), np.nan)
    out["errors"] = cells(data.utterances, data.ticks, errors, codes)
    out["words"] = cells(data.utterances, data.ticks, words, codes)
    return out


def label_codes(members: Sequence[SeriesData]) -> list[np.ndarray]:
    """Each series' rows' cell labels as integer codes shared by a ranking, so two series align by a
    merge of integers rather than of strings (at 40 models a ranking has 780 pairs, each merged once
    per statistic) and a series' keys take 8 bytes a cell, not 4 a character. A code is the label's
    utterance's place among the ranking's utterances, then its tick's among its ticks: codes sort as
    the labels do (an utterance id holds no character below the separator, U+001F), so every merge
    and median is as it would be with the labels."""
    utterance = {u: i for i, u in enumerate(sorted({str(u) for data in members for u in data.utterances}))}
    tick = {t: i for i, t in enumerate(sorted({str(t) for data in members for t in data.ticks}))}
    width = len(tick)
    return [np.fromiter((utterance[str(u)] * width + tick[str(t)] for u, t in zip(data.utterances, data.ticks)),
                        dtype=np.int64, count=len(data.utterances)) for data in members]


def compare(series: Mapping[SeriesKey, SeriesData], eligible: Callable[[SeriesKey, str], bool]) -> list[Comparison]:
    """Every pair of series in each ranking, on each statistic both are eligible for (`eligible(key,
    statistic)`: the caller's rule, e.g. current method, not excluded), Holm's procedure applied
    per ranking and statistic: a pair is shown when its p-value is at most the level Holm tests
    it at, and its interval is at that level (holm_levels), so verdict and interval agree. Pooled
    WER is compared only between series scored by one instrument. Pairs come in key order (a <
    b), each once."""
    families: dict[tuple, list[tuple[SeriesKey, SeriesKey, Tested]]] = {}
    rankings: dict[tuple, list[SeriesKey]] = {}
    for key in sorted(series):
        rankings.setdefault(ranking_of(key), []).append(key)
    prepared = {key: series_cells(series[key], codes) for members in rankings.values()
                for key, codes in zip(members, label_codes([series[k] for k in members]))}
    for members in rankings.values():
        for a, b in combinations(members, 2):
            ca, cb = prepared[a], prepared[b]
            for statistic in [m for m in ca if m in cb and m not in ("errors", "words")] + ["pooled_wer"]:
                if not (eligible(a, statistic) and eligible(b, statistic)):
                    continue
                if statistic == "pooled_wer":
                    if a.instrument != b.instrument:
                        continue
                    tested = ratio_difference(ca["errors"], ca["words"], cb["errors"], cb["words"])
                else:
                    tested = median_paired_difference(ca[statistic], cb[statistic])
                families.setdefault((ranking_of(a), statistic), []).append((a, b, tested))
    return _holm_verdicts(families)


def _holm_verdicts(families: Mapping[tuple, list[tuple[SeriesKey, SeriesKey, Tested]]]) -> list[Comparison]:
    """Each family's (ranking and statistic) pairs with Holm's verdicts, and intervals at Holm's levels."""
    out = []
    for (_, statistic), pairs in sorted(families.items()):
        p_values = [x.difference.p_value for _, _, x in pairs]
        for (a, b, x), p_holm, level in zip(pairs, holm_adjusted(p_values), holm_levels(p_values)):
            shown = p_holm is not None and p_holm <= FAMILY_LEVEL and x.difference.estimate != 0
            out.append(Comparison(a, b, statistic, x.at_level(level, shown) if level is not None else x.difference,
                                  p_holm, shown))
    return out


TAIL_Q = 95
"""The tail percentile the comparison pages can compare on besides the median."""
TAIL_RESAMPLES = 400
"""Resamples per clustering of a tail comparison's bootstrap (utterance, tick and their cells: 1,200 draws)."""


def weighted_percentile(sorted_values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """Percentile q by linear interpolation of the values each repeated `weights` times (integer counts,
    a bootstrap draw's), without repeating them: np.percentile of np.repeat(sorted_values, weights)."""
    total = float(weights.sum())
    if total <= 0:
        return float("nan")
    position = q / 100 * (total - 1)
    below = np.floor(position)
    ends = np.cumsum(weights)
    lo, hi = np.searchsorted(ends, [below, min(below + 1, total - 1)], side="right")
    return float(sorted_values[lo] + (position - below) * (sorted_values[hi] - sorted_values[lo]))


def tail_paired_difference(a: Cells, b: Cells, q: float = TAIL_Q, resamples: int = TAIL_RESAMPLES) -> Tested:
    """The percentile q of b's values minus a's over the cells both measured (latency: positive when b's
    tail is slower on the same clips at the same ticks), each side's percentile beside it, with a
    clustered bootstrap's variance: every draw resamples the shared cells' utterances, ticks or cells
    (clustered.bootstrap_variance, multiway), and both sides' percentiles are recomputed on the same
    draw, so what an utterance or a tick adds to both cancels. Student's t at Satterthwaite's degrees of
    freedom gives the two-sided p-value and the interval at any level. None under the percentile's floor
    (series.percentile_floor: 100 shared cells for p95) or with too few clusters."""
    u, t, xa, xb = shared(a, b)
    d = design(utterance=u, tick=t) if u.size else None
    if d is None or u.size < percentile_floor(q) or not _enough(u.size, d):
        return Tested(_empty(int(u.size), d), None)
    order_a, order_b = np.argsort(xa, kind="stable"), np.argsort(xb, kind="stable")
    sa, sb = xa[order_a], xb[order_b]

    def difference(w: np.ndarray) -> float:
        return weighted_percentile(sb, w[order_b], q) - weighted_percentile(sa, w[order_a], q)

    pa, pb = float(np.percentile(xa, q, method="linear")), float(np.percentile(xb, q, method="linear"))
    v = bootstrap_variance(d, difference, resamples)
    return Tested(_finish(pa, pb, v, d), _t_interval(pb - pa, v))


def compare_tail(series: Mapping[SeriesKey, SeriesData], eligible: Callable[[SeriesKey, str], bool],
                 metrics: Sequence[str], q: float = TAIL_Q) -> list[Comparison]:
    """`compare` on percentile q instead of the median, for the latency `metrics` only: every pair of a
    ranking on each metric both are eligible for, tail_paired_difference with Holm's procedure per
    ranking and metric. A Comparison's statistic is the metric's name, as the median's is; which
    percentile it compared is the caller's (a comparison page's statistic)."""
    families: dict[tuple, list[tuple[SeriesKey, SeriesKey, Tested]]] = {}
    rankings: dict[tuple, list[SeriesKey]] = {}
    for key in sorted(series):
        rankings.setdefault(ranking_of(key), []).append(key)
    for members in rankings.values():
        prepared = {key: series_cells(series[key], codes)
                    for key, codes in zip(members, label_codes([series[k] for k in members]))}
        for a, b in combinations(members, 2):
            for metric in metrics:
                if metric in prepared[a] and metric in prepared[b] and eligible(a, metric) and eligible(b, metric):
                    families.setdefault((ranking_of(a), metric), []).append(
                        (a, b, tail_paired_difference(prepared[a][metric], prepared[b][metric], q)))
    return _holm_verdicts(families)


COLUMNS = ("board", "dataset", "protocol", "region", "method_version", "statistic", "model_a", "instrument_a",
           "model_b", "instrument_b", "a", "b", "estimate", "ci_low", "ci_high", "p_value", "p_holm", "shown",
           "cells", "utterances", "ticks")
"""A comparison as one flat record, in this order: the CSV's columns and the Postgres table's."""


def flat(c: Comparison) -> dict:
    """One comparison as COLUMNS (instrument '' when none, as in SeriesKey)."""
    d = c.difference
    low, high = d.ci if d.ci else (None, None)
    return dict(zip(COLUMNS, (c.a.board, c.a.dataset, c.a.protocol, c.a.region, c.a.method_version, c.statistic,
                              c.a.model_id, c.a.instrument, c.b.model_id, c.b.instrument, d.a, d.b, d.estimate, low,
                              high, d.p_value, c.p_holm, c.shown, d.cells, d.utterances, d.ticks)))


def from_flat(v: Sequence) -> Comparison:
    """A comparison back from its COLUMNS values (a Postgres row)."""
    r = dict(zip(COLUMNS, v))
    a = SeriesKey(r["board"], r["model_a"], r["dataset"], r["region"], r["method_version"], r["protocol"],
                  r["instrument_a"])
    ci = None if r["ci_low"] is None else (r["ci_low"], r["ci_high"])
    return Comparison(a, a._replace(model_id=r["model_b"], instrument=r["instrument_b"]), r["statistic"],
                      Difference(r["a"], r["b"], r["estimate"], ci, r["p_value"], r["cells"], r["utterances"],
                                 r["ticks"]), r["p_holm"], bool(r["shown"]))
