"""Uncertainty for rows drawn in crossed clusters (METHOD "Uncertainty").

A 30-day series measures the same few dozen utterances hundreds of times, and every row of one
tick shares the provider's state at that tick (load, a deploy, the time of day). Its rows are
not independent, and an interval that resamples rows is far too narrow. The rows are
clustered along crossed factors (utterance x tick here; rater x prompt for human ratings), and
the variance of an estimate is the multiway cluster-robust variance of Cameron, Gelbach and
Miller (2011): one one-way cluster bootstrap per factor, minus the one over their intersection
(the cells), so a shared cell is not counted twice:

    V = V_utterance + V_tick - V_cell

`bootstrap_variance` resamples clusters for any statistic of row weights (a fitted rating, a
ratio): each draw gives every cluster of one factor a multinomial count. Every leaderboard
statistic is a ratio of row totals (a mean, a rate, pooled WER, the empirical CDF at a
percentile), whose one-way cluster-bootstrap variance has a closed form, its first-order limit
as resamples grow (`ratio_variance`): exact, deterministic, independent of row order, and
O(rows) where resampling a 20,000-row series would cost O(resamples x rows) on every write.
Each one-way term carries the G / (G - 1) small-sample factor; the interval uses Student's t
with Satterthwaite's degrees of freedom (Variance.df), so a series of a few ticks gets the wide
interval it deserves.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Callable, Hashable, Iterator, Sequence

import numpy as np

LEVEL = 0.95


@dataclass(frozen=True)
class Design:
    """Each row's cluster along each factor and along every intersection of factors.

    `clusterings` holds, for every non-empty set of factors (one factor alone first, in the order
    given, then the intersections), the sign it enters the variance with, each row's cluster index
    and how many clusters have rows. Indexes come from sorted labels, so nothing depends on the
    order the rows arrive in: the same rows give the same interval in every store."""
    names: tuple[str, ...]
    clusterings: tuple[tuple[int, np.ndarray, int], ...]

    @property
    def rows(self) -> int:
        return int(self.clusterings[0][1].size) if self.clusterings else 0

    @property
    def sizes(self) -> tuple[int, ...]:
        """The number of clusters of each factor (utterances, ticks) that have rows."""
        return tuple(size for _, _, size in self.clusterings[:len(self.names)])

    def subset(self, keep: np.ndarray) -> "Design":
        """The design of the rows where `keep` is true (a metric measured on `ok` rows only)."""
        kept = [(sign, code[keep]) for sign, code, _ in self.clusterings]
        return Design(self.names, tuple((sign, code, _occupied(code)) for sign, code in kept))


def _occupied(code: np.ndarray) -> int:
    return int(np.count_nonzero(np.bincount(code))) if code.size else 0


def design(**factors: Sequence[Hashable]) -> Design:
    """A design from each row's label per factor, e.g. design(utterance=clip_ids, tick=run_ids).

    Every set of factors is a clustering (inclusion-exclusion, CGM 2011): one factor alone adds its
    variance, an intersection of two (a cell: one utterance at one tick) subtracts it."""
    names, codes, sizes = list(factors), [], []
    for labels in factors.values():
        distinct, code = np.unique(np.asarray(labels), return_inverse=True)
        codes.append(code.astype(np.int64).ravel())
        sizes.append(int(distinct.size))
    clusterings = []
    for k in range(1, len(codes) + 1):
        for subset in combinations(range(len(codes)), k):
            joint = np.zeros(codes[0].size, dtype=np.int64)
            for i in subset:  # the cell's index in the product of the factors' sizes
                joint = joint * sizes[i] + codes[i]
            if k > 1:
                joint = np.unique(joint, return_inverse=True)[1].ravel().astype(np.int64)
            clusterings.append((1 if k % 2 else -1, joint, _occupied(joint)))
    return Design(tuple(names), tuple(clusterings))


@dataclass(frozen=True)
class Variance:
    """A multiway variance with what the interval needs: the estimate's variance (total), the
    one-way terms of the main factors and how many clusters each has."""
    total: float
    terms: tuple[float, ...]
    sizes: tuple[int, ...]

    @property
    def df(self) -> float:
        """Satterthwaite's degrees of freedom over the main factors' terms, each estimated from
        G - 1 clusters. Each term also holds the rows' own noise, so this errs low (wider
        intervals) when a series has few ticks; weighing only each factor's excess over the cells
        covered 87 % for a mean over 2 ticks (benchmarks/ci_coverage.py), this 92-93 %."""
        parts = [v * v / (g - 1) for v, g in zip(self.terms, self.sizes) if g > 1 and v > 0]
        if not parts or self.total <= 0:
            return float(max(1, min(self.sizes) - 1)) if self.sizes else 1.0
        return max(1.0, self.total ** 2 / sum(parts))

    @property
    def critical(self) -> float:
        return self.critical_at(1 - LEVEL)

    def critical_at(self, alpha: float) -> float:
        """Student's t at these degrees of freedom for a two-sided level alpha."""
        from scipy.stats import t as student_t  # imported when first needed: scipy.stats takes most of a CLI's start-up

        return float(student_t.ppf(1 - alpha / 2, self.df))


def _combine(d: Design, one_way: Callable[[np.ndarray, int], float]) -> Variance:
    total, terms = 0.0, []
    for sign, code, size in d.clusterings:
        v = one_way(code, size) * (size / (size - 1) if size > 1 else 0.0)
        total += sign * v
        terms.append(v)
    main = tuple(terms[:len(d.names)])
    # inclusion-exclusion can go below a single factor's term when the intersection is large:
    # the variance is never less than what one factor alone shows (CGM's fix for negative V)
    return Variance(max(total, max(main, default=0.0)), main, d.sizes)


def ratio_variance(d: Design, numerator: np.ndarray, denominator: np.ndarray) -> Variance | None:
    """The multiway variance of sum(numerator) / sum(denominator) over the rows (a mean: the
    values over ones; pooled WER: errors over reference words). Per factor it is the first-order
    variance of the cluster bootstrap: sum over clusters of (cluster's a - theta * cluster's b)^2
    over (total b)^2. None when the denominator sums to zero."""
    a, b = np.asarray(numerator, dtype=np.float64), np.asarray(denominator, dtype=np.float64)
    total = _canonical_sum(b)
    if a.size == 0 or total == 0:
        return None
    residual = a - (_canonical_sum(a) / total) * b

    def one_way(code: np.ndarray, size: int) -> float:
        s = np.bincount(code, weights=residual)
        return _canonical_sum(s * s) / (total * total)

    return _combine(d, one_way)


def influence_variance(d: Design, influence: np.ndarray) -> Variance:
    """The multiway variance of an estimate given each row's influence on it (its first-order
    change per unit of the row's weight, summing to zero): per factor, the sum over clusters of
    the cluster's influence squared, the cluster bootstrap's first-order variance. What
    `ratio_variance` is for one ratio (influence: residual over total), for any smooth function
    of row totals, such as the difference of two pooled WERs (voxwatch/metrics/degradation.py)."""
    x = np.asarray(influence, dtype=np.float64)

    def one_way(code: np.ndarray, size: int) -> float:
        s = np.bincount(code, weights=x)
        return _canonical_sum(s * s)

    return _combine(d, one_way)


def _canonical_sum(x: np.ndarray) -> float:
    """A sum in sorted order: the same bits whatever order the rows or clusters come in (a store's
    row order, or its labels' sort order), so every store prints the same last digit."""
    return float(np.sort(x).sum())


def bootstrap_variance(d: Design, statistic: Callable[[np.ndarray], float], resamples: int = 1000,
                       seed: int = 20261201) -> Variance:
    """The multiway variance of any statistic of row weights (`statistic(weights)` with one weight
    per row; all ones is the estimate), by resampling clusters: for each factor and intersection,
    `resamples` draws that give each cluster a multinomial count, every row of it that weight.
    Seeded per clustering, so the result is reproducible and depends only on the design."""
    return bootstrap_variances(d, lambda w: np.array([statistic(w)]), resamples, seed)[0]


def bootstrap_variances(d: Design, statistic: Callable[[np.ndarray], np.ndarray], resamples: int = 1000,
                        seed: int = 20261201) -> list[Variance]:
    """`bootstrap_variance` of a statistic with several values (a strength per configuration) from
    the same refits: one multiway variance per value. A non-finite value (a configuration with no
    rows in a draw) is left out of that value's variance only."""
    rng = np.random.default_rng(seed)
    per_clustering = []
    for _, code, size in d.clusterings:
        code = np.unique(code, return_inverse=True)[1].ravel()  # the clusters that have rows, 0..size-1
        counts = rng.multinomial(size, np.full(size, 1.0 / size), size=resamples)
        draws = np.array([np.atleast_1d(statistic(c[code].astype(np.float64))) for c in counts])
        # the bootstrap variance of G clusters is (G - 1) / G of the unbiased one: _combine restores it
        per_clustering.append([float(x.var()) if x.size > 1 else 0.0
                               for x in (col[np.isfinite(col)] for col in draws.T)])
    values = len(per_clustering[0]) if per_clustering else 0
    out = []
    for j in range(values):
        terms = iter(v[j] for v in per_clustering)
        out.append(_combine(d, lambda code, size: next(terms)))
    return out


def t_interval(estimate: float, v: Variance, low: float = -np.inf, high: float = np.inf) -> tuple[float, float]:
    """estimate +- t * sqrt(V), clipped to the statistic's range."""
    half = v.critical * np.sqrt(v.total)
    return float(max(low, estimate - half)), float(min(high, estimate + half))


def rate_interval(hits: np.ndarray, d: Design) -> tuple[float, float] | None:
    """A proportion's interval: Clopper-Pearson's at the design's effective sample size (Kish: n
    over the design effect, never above n), so a rate of 0 still gets an upper bound, 0 of n and n
    of n get the exact binomial bounds, and clustered failures (a tick where everything timed out)
    widen it."""
    x = np.asarray(hits, dtype=np.float64)
    if x.size == 0:
        return None
    return proportion_interval(float(x.mean()), ratio_variance(d, x, np.ones(x.size)), x.size)  # never None: n ones


def effective_size(unit_variance: float, v: Variance, n: float) -> float:
    """Kish's effective sample size of an estimate over `n` counted things whose clustered variance is
    `v`: n over the design effect (V over the unclustered variance, unit_variance / n: p(1 - p) for
    a share, the rate for a Poisson count's), never above n. Where the rows carry no variance (0 of
    n, n of n, no event), no design effect can be estimated and n is taken as it is."""
    return min(float(n), unit_variance / v.total) if v.total > 0 and unit_variance > 0 else float(n)


def proportion_interval(p: float, v: Variance, n: float) -> tuple[float, float]:
    """The Clopper-Pearson interval of a share `p` of `n` counted things (attempts, tagged entities,
    turns) whose clustered variance is `v`, at the effective sample size (Korn and Graubard 1998):
    the exact binomial interval of p x n_eff successes in n_eff trials, always within [0, 1],
    [0, 1 - 0.025^(1/n)] at 0 of n and its mirror at n of n. At a normal 95 % level, not Student's
    t: the design effect already carries the clustering, and t over 1 degree of freedom (two
    ticks) made 0 of 6 read [0 %, 96 %] (benchmarks/ci_coverage.py measures the coverage at the
    edges)."""
    from scipy.stats import beta  # imported when first needed, as scipy.stats is below

    n_eff = effective_size(p * (1 - p), v, n)
    x = p * n_eff
    alpha = 1 - LEVEL
    low = 0.0 if p <= 0 else float(beta.ppf(alpha / 2, x, n_eff - x + 1))
    high = 1.0 if p >= 1 else float(beta.ppf(1 - alpha / 2, x + 1, n_eff - x))
    return max(0.0, min(low, p)), min(1.0, max(high, p))


def count_rate_interval(rate: float, v: Variance, n: float) -> tuple[float, float]:
    """The interval of a rate of counted events per unit (pooled WER: errors per reference word, which
    insertions can take past 1) whose clustered variance is `v`, as proportion_interval is for a
    share: Garwood's exact Poisson interval of rate x n_eff events in n_eff units, n_eff the effective
    number of units (n over the design effect, the clustered variance over the Poisson rate / n,
    never above n), at the normal 95 % level. It never crosses 0, has no upper limit, is as
    asymmetric as a count's distribution, and 0 errors get [0, 3.69 / n_eff]; the t interval read
    72.4 % [19.1 %, 125.8 %] over two ticks, and a log-scale one with Student's t over one degree of
    freedom 23 % [0.0 %, 189,146 %]."""
    from scipy.stats import chi2  # imported when first needed, as scipy.stats is above

    n_eff = effective_size(rate, v, n)
    events = rate * n_eff
    alpha = 1 - LEVEL
    low = 0.0 if events <= 0 else float(chi2.ppf(alpha / 2, 2 * events)) / 2 / n_eff
    high = float(chi2.ppf(1 - alpha / 2, 2 * (events + 1))) / 2 / n_eff
    return min(low, rate), max(high, rate)


def quantile_interval(values: np.ndarray, q: float, d: Design) -> tuple[float, float] | None:
    """A percentile's interval by Woodruff's method: the interval of the empirical CDF at the
    estimate (a mean of indicators, so a ratio above), mapped back through the sample's quantile
    function. Asymmetric where the distribution is, and it needs no density estimate."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return None
    estimate = float(np.percentile(x, q, method="linear"))
    below = (x <= estimate).astype(np.float64)
    v = ratio_variance(d, below, np.ones(x.size))  # never None: the denominator is n ones
    half = v.critical * np.sqrt(v.total)
    p = q / 100
    lo, hi = max(0.0, p - half), min(1.0, p + half)
    low, high = np.percentile(x, [100 * lo, 100 * hi], method="linear")
    return float(min(low, estimate)), float(max(high, estimate))


def crossed_weights(d: Design, resamples: int = 1000, seed: int = 20261201) -> Iterator[np.ndarray]:
    """Resamples of crossed clusters (a rater x prompt bootstrap: Owen's pigeonhole bootstrap):
    each draw picks every main factor's clusters with replacement (multinomial counts) and gives a
    row the product of its clusters' counts, the number of times it is kept when the rows of every
    drawn (rater, prompt) combination are kept. A weighted refit of any estimate is one resample."""
    rng = np.random.default_rng(seed)
    codes = [np.unique(code, return_inverse=True)[1].ravel() for _, code, _ in d.clusterings[:len(d.names)]]
    sizes = [int(code.max()) + 1 if code.size else 0 for code in codes]
    for _ in range(resamples):
        w = np.ones(d.rows)
        for code, size in zip(codes, sizes):
            w *= rng.multinomial(size, np.full(size, 1.0 / size))[code]
        yield w


def row_weights(rows: int, resamples: int = 1000, seed: int = 20261201) -> Iterator[np.ndarray]:
    """Resamples of rows as if independent (each row a multinomial count): the i.i.d. bootstrap,
    too narrow for clustered rows; kept so benchmarks can show by how much."""
    rng = np.random.default_rng(seed)
    for _ in range(resamples):
        yield rng.multinomial(rows, np.full(rows, 1.0 / rows)).astype(np.float64)
