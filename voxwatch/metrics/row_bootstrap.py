"""Method 3's row bootstrap: intervals that resample rows as if they were independent.

Superseded by voxwatch/metrics/clustered.py (METHOD v4): a series measures the same utterances at every
tick, so resampling rows makes intervals far too narrow. Kept so benchmarks/ci_coverage.py can
print the old intervals' coverage beside the new ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from voxwatch.metrics.series import MIN_N, present

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20261129


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


def _interval(estimates: np.ndarray, level: float) -> Interval:
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(estimates, [tail, 100 - tail])
    return Interval(float(low), float(high))


def bootstrap_percentile_ci(values: Sequence[float], q: float, level: float = 0.95,
                            resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> Interval | None:
    """Percentile-bootstrap CI of the q-th percentile, resampling clips; None below MIN_N.

    A resample's k-th smallest value is the sample's quantile function at the k-th smallest of n
    uniforms, which is Beta(k, n - k + 1); drawing those two order statistics directly gives the
    same bootstrap distribution as resampling all n clips, in O(resamples) instead of
    O(resamples * n) (a 30-day series holds ~20,000 clips), and the result depends only on the
    values, never on their order, so every store gives the same interval.
    """
    v = np.sort(present(values))
    n = v.size
    if n < MIN_N:
        return None
    rng = np.random.default_rng(seed)
    h = q / 100 * (n - 1)
    lo = int(np.floor(h))
    frac = h - lo
    u = rng.beta(lo + 1, n - lo, size=resamples)  # the (lo + 1)-th smallest of n uniforms
    estimates = v[_rank(u, n)]
    if frac > 0:  # the next order statistic: u plus the smallest of the n - lo - 1 uniforms above it
        u_next = u - (1 - u) * np.expm1(np.log(rng.random(resamples)) / (n - lo - 1))
        estimates = estimates + frac * (v[_rank(u_next, n)] - estimates)
    return _interval(estimates, level)


def _rank(u: np.ndarray, n: int) -> np.ndarray:
    """The empirical quantile function of n sorted values, as indexes."""
    return np.minimum((u * n).astype(np.int64), n - 1)


def bootstrap_pooled_ci(errors: Sequence[int], words: Sequence[int], level: float = 0.95,
                        resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> Interval | None:
    """CI of a pooled ratio (pooled WER) resampling clips: each draw is sum(errors) / sum(words)."""
    draws = bootstrap_pooled_draws(errors, words, resamples, seed)
    return None if draws is None else _interval(draws[~np.isnan(draws)], level)


def bootstrap_pooled_draws(errors: Sequence[int], words: Sequence[int], resamples: int = BOOTSTRAP_RESAMPLES,
                           seed: int = BOOTSTRAP_SEED) -> np.ndarray | None:
    """The bootstrap distribution of a pooled ratio, one value per resample of the clips (NaN for a
    resample that drew no words); None below MIN_N. Exposed so a difference of two pooled ratios
    (the WER regression alert) gets its interval from two independent sets of draws.

    Clips enter only through their (errors, words) pair, so a resample is drawn over the distinct
    pairs, sorted: as how many times each pair is drawn (a multinomial, O(resamples * pairs)) when
    pairs are few next to clips, as clip indexes (O(resamples * clips)) otherwise. Either is the
    same bootstrap distribution, and the result does not depend on the clips' order.
    """
    e, w = np.asarray(errors, dtype=np.int64), np.asarray(words, dtype=np.int64)
    if e.size < MIN_N or w.sum() == 0:
        return None
    base = int(w.max()) + 1
    keys, counts = np.unique(e * base + w, return_counts=True)
    pair_errors, pair_words = keys // base, keys % base
    rng = np.random.default_rng(seed)
    if 8 * keys.size < e.size:
        draws = rng.multinomial(e.size, counts / e.size, size=resamples)
        drawn_errors, totals = draws @ pair_errors, draws @ pair_words
    else:
        idx = rng.integers(0, e.size, size=(resamples, e.size))
        drawn_errors = np.repeat(pair_errors, counts)[idx].sum(axis=1)
        totals = np.repeat(pair_words, counts)[idx].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(totals > 0, drawn_errors / np.maximum(totals, 1), np.nan)
