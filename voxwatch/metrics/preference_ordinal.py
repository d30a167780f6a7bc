"""The primary preference engine: an ordinal Bradley-Terry model of CMOS (METHOD "Preference (Elo)").

P(CMOS <= k) = logistic(c_k - eta), eta = s_A - s_B + gamma * o, with o = +1 where A was shown
first and -1 where B was, over the 7 categories -3..+3. The 6 cut-points are symmetric,
(-t3, -t2, -t1, t1, t2, t3) with 0 < t1 < t2 < t3, so a rating and its mirror (A and B swapped,
CMOS negated, the other side first) have the same likelihood. Strengths sum to zero over the
configurations that have ratings, and a small ridge (lambda / 2 * sum s^2) keeps a configuration
that wins every comparison finite.

Speed: the likelihood depends on a rating only through its cell (pair, side shown first,
category), and 19 configurations have at most 171 x 2 x 7 = 2,394 cells. A fit, and every
bootstrap refit (a weight per rating), first sums the weights per cell, then runs Newton's method
with the analytic Hessian on the cells: a refit of 50,000 ratings takes about a millisecond.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.special import expit

from voxwatch.metrics.preference import CMOS_MAX, Ratings

RIDGE = 0.01
"""lambda: a prior of sd 10 logits on each strength; it moves a fit of a few hundred ratings by
well under 0.001 logit and matters only where a configuration never loses (or never wins)."""
CATEGORIES = 2 * CMOS_MAX + 1
_CUT_SIGN = np.array([-1, -1, -1, 1, 1, 1])
_CUT_T = np.array([2, 1, 0, 0, 1, 2])  # cut-point j is _CUT_SIGN[j] * t[_CUT_T[j]]
_ABOVE = np.minimum(np.arange(CATEGORIES), 5)  # the cut-point above each category (the top's: +inf)
_BELOW = np.maximum(np.arange(CATEGORIES) - 1, 0)  # and below it (the bottom's: -inf)
MAX_ITER = 100


@dataclass(frozen=True)
class Cells:
    """The distinct (a < b, side shown first, category) cells of some ratings, and each rating's
    cell: a fit only needs the weight summed per cell."""
    a: np.ndarray
    b: np.ndarray
    first: np.ndarray  # +1: a (the lower code) shown first, -1: b
    category: np.ndarray  # 0..6 for CMOS -3..+3, from a's side
    of_rating: np.ndarray
    configs: int

    def counts(self, weights: np.ndarray | None = None) -> np.ndarray:
        """The weight per cell (all ones: the number of ratings)."""
        return np.bincount(self.of_rating, weights=weights, minlength=self.a.size).astype(np.float64)


def cells(r: Ratings) -> Cells:
    """Each rating put on its canonical side (the lower configuration code as A): the mirror of a
    rating is the same rating under symmetric cut-points."""
    swap = r.a > r.b
    a, b = np.where(swap, r.b, r.a), np.where(swap, r.a, r.b)
    cmos = np.where(swap, -r.cmos, r.cmos)
    first = np.where(r.a_first != swap, 1, -1)
    k = len(r.configs)
    key = ((a * k + b) * 2 + (first > 0)) * CATEGORIES + (cmos + CMOS_MAX)
    distinct, of_rating = np.unique(key, return_inverse=True)
    category = distinct % CATEGORIES
    rest = distinct // CATEGORIES
    first_code = np.where(rest % 2 == 1, 1, -1)
    pair = rest // 2
    return Cells(pair // k, pair % k, first_code, category, of_rating.ravel(), k)


@dataclass(frozen=True)
class OrdinalFit:
    """Strengths (NaN for a configuration without ratings), the shown-first term, the cut-points
    t1 < t2 < t3, and the parameter vector a refit can start from."""
    strength: np.ndarray
    first: float
    thresholds: tuple[float, float, float]
    params: np.ndarray
    present: np.ndarray
    iterations: int
    converged: bool


def sum_zero_basis(k: int) -> np.ndarray:
    """An orthonormal k x (k - 1) basis of the strengths that sum to zero (Helmert contrasts), so
    the ridge on the strengths is the ridge on the free parameters."""
    z = np.zeros((k, max(k - 1, 0)))
    for j in range(1, k):
        z[:j, j - 1] = 1.0
        z[j, j - 1] = -float(j)
        z[:, j - 1] /= np.sqrt(j * (j + 1))
    return z


def difference_rows(a: np.ndarray, b: np.ndarray, present: np.ndarray) -> np.ndarray:
    """s_a - s_b as rows over the free parameters of the present configurations' sum-zero strengths."""
    index = np.cumsum(present) - 1
    x = np.zeros((a.size, int(present.sum())))
    rows = np.arange(a.size)
    x[rows, index[a]] = 1.0
    x[rows, index[b]] = -1.0
    return x @ sum_zero_basis(int(present.sum()))


def _start(counts: np.ndarray, category: np.ndarray, free: int) -> np.ndarray:
    """Strengths 0, no order effect, cut-points from the symmetrised share of each category."""
    share = np.bincount(category, weights=counts, minlength=CATEGORIES) + 0.5
    share = (share + share[::-1]) / (2 * share.sum())
    cum = np.cumsum(share)[CMOS_MAX:CATEGORIES - 1]
    t = np.log(cum / (1 - cum))
    t = np.maximum.accumulate(np.maximum(t, 1e-3) + np.array([0.0, 1e-3, 2e-3]))
    return np.concatenate([np.zeros(free + 1), np.log(np.diff(np.concatenate([[0.0], t])))])


def _thresholds(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cut-points from the log-increments u (t1 = e^u1, t2 = t1 + e^u2, ...) and their
    derivatives (6 x 3). u is clipped at +-30 (a cut-point of e^30 logits is no cut at all): a
    Newton step on a degenerate resample (two raters, one-sided answers) must not overflow."""
    e = np.exp(np.clip(u, -30.0, 30.0))
    t = np.cumsum(e)
    dt = np.tril(np.ones((3, 3))) * e  # dt_m / du_l = e^u_l for l <= m
    return _CUT_SIGN * t[_CUT_T], _CUT_SIGN[:, None] * dt[_CUT_T]


@dataclass(frozen=True)
class _Problem:
    """The cells with weight, coded over the present configurations, their sum-zero basis, and what
    every Newton step reuses: each cell's (configuration, category) codes and the basis of all the
    parameters (free strengths, gamma, u) in (strengths, gamma, u)."""
    a: np.ndarray
    b: np.ndarray
    first: np.ndarray
    category: np.ndarray
    counts: np.ndarray
    z: np.ndarray
    a_category: np.ndarray
    b_category: np.ndarray
    basis: np.ndarray


def _problem(a: np.ndarray, b: np.ndarray, first: np.ndarray, category: np.ndarray, counts: np.ndarray,
             k: int) -> _Problem:
    z = sum_zero_basis(k)
    basis = np.zeros((k + 4, k + 3))
    basis[:k, :k - 1] = z
    basis[k:, k - 1:] = np.eye(4)
    return _Problem(a, b, first, category, counts, z, a * CATEGORIES + category, b * CATEGORIES + category, basis)


def _by_config(index: np.ndarray, values: np.ndarray, k: int) -> np.ndarray:
    return np.bincount(index, weights=values, minlength=k)


def _loglik_parts(theta: np.ndarray, q: _Problem, ridge: float, with_derivatives: bool):
    """The penalised log-likelihood, and its gradient and Hessian over (free strengths, gamma, u).

    Derivatives are taken over (s, gamma, u) first: a rating's s_A - s_B makes the strength block
    a weighted graph Laplacian, summed by bincount over the configurations. No matrix product is
    larger than the parameters, so a busy machine's BLAS threads (which made the cells-by-parameters
    products 15 times slower) never enter."""
    k = q.z.shape[0]
    free = k - 1
    beta, gamma, u = theta[:free], theta[free], theta[free + 1:]
    strength = q.z @ beta
    cut, dcut = _thresholds(u)
    eta = strength[q.a] - strength[q.b] + gamma * q.first
    top, bottom = q.category == CATEGORIES - 1, q.category == 0
    upper = np.where(top, np.inf, cut[np.minimum(q.category, 5)] - eta)
    lower = np.where(bottom, -np.inf, cut[np.maximum(q.category - 1, 0)] - eta)
    fu, fl = expit(upper), expit(lower)
    # both cut-points far to the right: the difference of the upper tails has no cancellation
    p = np.maximum(np.where(lower > 0, expit(-lower) - expit(-upper), fu - fl), 1e-300)
    n = q.counts
    value = float(np.sum(n * np.log(p))) - 0.5 * ridge * float(np.sum(beta * beta))
    if not with_derivatives:
        return value, None, None
    # d log p / d(upper), d(lower) and second derivatives; an infinite cut-point's are all 0
    du, dl = fu * (1 - fu), fl * (1 - fl)
    au, al = du / p, -dl / p
    huu = du * (1 - 2 * fu) / p - au * au
    hll = -dl * (1 - 2 * fl) / p - al * al
    hul = -au * al
    # a cell's cut-points are its category's: the u-derivatives are summed per category (and per
    # configuration and category) first, and meet the 7 x 3 derivatives of the cut-points once
    above, below = dcut[_ABOVE], dcut[_BELOW]

    def per_category(v: np.ndarray) -> np.ndarray:
        return np.bincount(q.category, weights=v, minlength=CATEGORIES)

    def per_config_category(v: np.ndarray) -> np.ndarray:
        return (np.bincount(q.a_category, weights=v, minlength=k * CATEGORIES)
                - np.bincount(q.b_category, weights=v, minlength=k * CATEGORIES)).reshape(k, CATEGORIES)

    # upper = c_k - eta and lower = c_(k-1) - eta: eta's derivatives enter with a minus
    e = n * (au + al)
    grad = np.concatenate([-(_by_config(q.a, e, k) - _by_config(q.b, e, k)), [-np.sum(e * q.first)],
                           above.T @ per_category(n * au) + below.T @ per_category(n * al)])
    hxx = n * (huu + hll + 2 * hul)
    pair = np.bincount(q.a * k + q.b, weights=hxx, minlength=k * k).reshape(k, k)
    pair = pair + pair.T
    hess = np.zeros((k + 4, k + 4))
    hess[:k, :k] = np.diag(pair.sum(axis=1)) - pair
    side = hxx * q.first
    hess[:k, k] = hess[k, :k] = _by_config(q.a, side, k) - _by_config(q.b, side, k)
    hess[k, k] = np.sum(hxx)
    wu, wl = n * (huu + hul), n * (hll + hul)  # a cell's mixed derivative: wu * d(upper) + wl * d(lower)
    hess[:k, k + 1:] = -(per_config_category(wu) @ above + per_config_category(wl) @ below)
    hess[k, k + 1:] = -(per_category(wu * q.first) @ above + per_category(wl * q.first) @ below)
    hess[k + 1:, :k + 1] = hess[:k + 1, k + 1:].T
    cross = (above.T * per_category(n * hul)) @ below
    # + diag(grad): d2 t / du2 = dt / du, the chain rule's second term
    hess[k + 1:, k + 1:] = ((above.T * per_category(n * huu)) @ above + (below.T * per_category(n * hll)) @ below
                            + cross + cross.T + np.diag(grad[k + 1:]))
    grad, hess = q.basis.T @ grad, q.basis.T @ hess @ q.basis
    grad[:free] -= ridge * beta
    hess[:free, :free] -= ridge * np.eye(free)
    return value, grad, hess


def _newton_direction(grad: np.ndarray, hess: np.ndarray) -> np.ndarray:
    """The Newton step, damped (Levenberg) where -H is not positive definite far from the optimum."""
    neg = -hess
    damping = 0.0
    for _ in range(30):
        try:
            return cho_solve(cho_factor(neg + damping * np.eye(neg.shape[0])), grad)
        except np.linalg.LinAlgError:
            damping = max(1e-8, 10 * damping) if damping else 1e-6 * (1 + np.abs(np.diag(neg)).max())
    return grad


def fit_cells(c: Cells, counts: np.ndarray, ridge: float = RIDGE, start: OrdinalFit | None = None,
              tol: float = 1e-10) -> OrdinalFit:
    """The penalised maximum-likelihood fit of the weights per cell, by Newton's method with step
    halving; `start` (the full-data fit) makes a bootstrap refit converge in a few steps."""
    appear = np.bincount(c.a, weights=counts, minlength=c.configs) + np.bincount(c.b, weights=counts, minlength=c.configs)
    present = appear > 0
    used = counts > 0
    k = int(present.sum())
    index = np.cumsum(present) - 1
    q = _problem(index[c.a[used]], index[c.b[used]], c.first[used].astype(np.float64), c.category[used],
                 counts[used], k)
    n = q.counts
    if start is not None and np.array_equal(start.present, present):
        theta = start.params.copy()
    else:
        theta = _start(n, q.category, k - 1)
    value, grad, hess = _loglik_parts(theta, q, ridge, True)
    converged, iterations = False, 0
    for iterations in range(1, MAX_ITER + 1):
        step = _newton_direction(grad, hess)
        decrement = float(grad @ step)
        if decrement < tol * max(1.0, float(n.sum())) * 1e-3:
            converged = True
            break
        size = 1.0
        while size > 1e-10:
            candidate = theta + size * step
            new_value = _loglik_parts(candidate, q, ridge, False)[0]
            if np.isfinite(new_value) and new_value >= value + 1e-4 * size * decrement:
                break
            size /= 2
        else:
            converged = True  # no ascent left along the direction: at the optimum to rounding
            break
        theta = candidate
        value, grad, hess = _loglik_parts(theta, q, ridge, True)
    strength = np.full(c.configs, np.nan)
    strength[present] = q.z @ theta[:k - 1]
    t = np.cumsum(np.exp(theta[k:]))
    return OrdinalFit(strength, float(theta[k - 1]), (float(t[0]), float(t[1]), float(t[2])), theta, present,
                      iterations, converged)


def fit_ordinal(r: Ratings, ridge: float = RIDGE, weights: np.ndarray | None = None) -> OrdinalFit:
    """The ordinal fit of some ratings (one rubric's, usually), each counted `weights` times."""
    c = cells(r)
    return fit_cells(c, c.counts(weights), ridge)
