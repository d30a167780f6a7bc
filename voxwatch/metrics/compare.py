"""One window of a series against an earlier one, respecting how the rows were drawn (the alerts).

A series measures the same few dozen utterances at every tick, and the rows of one tick share the
provider's state. Rows are therefore never the unit of a comparison: latency compares ticks (each
tick's median), WER compares each utterance with itself, and a rate's variance is clustered by
utterance and tick (voxwatch/metrics/clustered.py). Each function returns the two windows' figures and a
one-sided p-value for "the recent window is worse"; what counts as material is the caller's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Sequence

import numpy as np

from voxwatch.metrics.clustered import Design, ratio_variance


@dataclass(frozen=True)
class Shift:
    """Recent against baseline: the two figures, the one-sided p-value of an increase, and how many
    independent units (ticks, or paired utterances) each side had."""
    recent: float
    baseline: float
    p_value: float
    units_recent: int
    units_baseline: int


def tick_medians(values: Sequence[float], ticks: Sequence[Hashable]) -> np.ndarray:
    """Each tick's median value (ticks in sorted label order): the unit a latency comparison uses,
    so one tick's shared conditions count once, whatever its row count."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return v
    _, code = np.unique(np.asarray(ticks), return_inverse=True)
    order = np.lexsort((v, code.ravel()))
    v, code = v[order], code.ravel()[order]
    starts = np.flatnonzero(np.r_[True, code[1:] != code[:-1]])
    ends = np.r_[starts[1:], v.size]
    return (v[(starts + ends - 1) // 2] + v[(starts + ends) // 2]) / 2


def tick_median_shift(recent: Sequence[float], recent_ticks: Sequence[Hashable], baseline: Sequence[float],
                      baseline_ticks: Sequence[Hashable]) -> Shift:
    """The median of the recent ticks' medians against the baseline's, with a one-sided Mann-Whitney
    U test over ticks (recent ticks stochastically greater). One slow tick among a window's dozen
    moves neither the median of ticks nor, much, the rank sum."""
    from scipy.stats import mannwhitneyu  # imported when first needed, as in clustered.py

    r, b = tick_medians(recent, recent_ticks), tick_medians(baseline, baseline_ticks)
    p = float(mannwhitneyu(r, b, alternative="greater").pvalue)
    return Shift(float(np.median(r)), float(np.median(b)), p, int(r.size), int(b.size))


def _one_sided(diff: float, variance: float, df: float) -> float:
    """P(a difference this large | no increase), Student's t; a difference with no variance at all
    (every recent row the same and the baseline exact) is certain."""
    from scipy.stats import t as student_t  # imported when first needed, as in clustered.py

    if variance <= 0:
        return 0.0 if diff > 0 else 1.0
    return float(student_t.sf(diff / np.sqrt(variance), df))


def rate_shift(recent_hits: np.ndarray, recent: Design, baseline_hits: np.ndarray, baseline: Design) -> Shift:
    """A proportion in each window (hits over rows) and the one-sided p of its increase: the
    difference over the root of the two windows' multiway variances (utterance x tick), with
    Student's t at the recent window's Satterthwaite degrees of freedom. A tick where everything
    failed widens the recent variance instead of counting as ten independent failures."""
    h, g = np.asarray(recent_hits, dtype=np.float64), np.asarray(baseline_hits, dtype=np.float64)
    vr = ratio_variance(recent, h, np.ones(h.size))
    vb = ratio_variance(baseline, g, np.ones(g.size))
    now, before = float(h.mean()), float(g.mean())
    p = _one_sided(now - before, vr.total + vb.total, vr.df)
    return Shift(now, before, p, _ticks(recent), _ticks(baseline))


def _ticks(d: Design) -> int:
    return d.sizes[d.names.index("tick")] if "tick" in d.names else d.rows


def paired_ratio_shift(recent_utterances: np.ndarray, recent_errors: np.ndarray, recent_words: np.ndarray,
                       recent: Design, baseline_utterances: np.ndarray, baseline_errors: np.ndarray,
                       baseline_words: np.ndarray) -> Shift | None:
    """Pooled WER paired by utterance: only utterances measured in both windows count. The recent
    figure is the pooled WER of their recent rows; the baseline figure is what those same rows
    would have scored at each utterance's baseline WER (sum of recent words x baseline WER over
    recent words), so which utterances a window happened to draw cancels out. The difference is a
    ratio of recent-row totals (errors minus expected errors, over words); its variance is the
    multiway one over the recent rows (utterance x tick) plus the baseline WERs' own (each
    utterance's baseline rows as its clusters). None when no utterance is paired.
    `recent` is the design of the recent rows; the returned units are paired utterances."""
    bu, bcode = np.unique(np.asarray(baseline_utterances), return_inverse=True)
    bcode = bcode.ravel()
    be = np.asarray(baseline_errors, dtype=np.float64)
    bw = np.asarray(baseline_words, dtype=np.float64)
    words_u = np.bincount(bcode, weights=bw, minlength=bu.size)
    wer_u = np.bincount(bcode, weights=be, minlength=bu.size) / np.where(words_u > 0, words_u, 1)
    ru = np.asarray(recent_utterances)
    at = np.clip(np.searchsorted(bu, ru), 0, max(bu.size - 1, 0))
    paired = (bu[at] == ru) & (words_u[at] > 0) if bu.size else np.zeros(ru.size, dtype=bool)
    w = np.asarray(recent_words, dtype=np.float64)[paired]
    if w.sum() <= 0:
        return None
    e, at = np.asarray(recent_errors, dtype=np.float64)[paired], at[paired]
    expected = w * wer_u[at]
    v = ratio_variance(recent.subset(paired), e - expected, w)
    # each utterance's baseline WER is itself an estimate: its variance, weighted by the recent words on it
    residual = be - wer_u[bcode] * bw
    var_u = np.bincount(bcode, weights=residual * residual, minlength=bu.size) / np.where(words_u > 0, words_u, 1) ** 2
    share = np.bincount(at, weights=w, minlength=bu.size) / w.sum()
    now, before = float(e.sum() / w.sum()), float(expected.sum() / w.sum())
    p = _one_sided(now - before, v.total + float(share * share @ var_u), v.df)
    return Shift(now, before, p, int(np.unique(at).size), int(bu.size))
