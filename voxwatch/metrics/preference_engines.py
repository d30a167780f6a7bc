"""The two cross-check engines beside the ordinal fit, and their agreement (METHOD "Preference (Elo)").

A leaderboard is only as good as its model: if two simpler readings of the same ratings order
the configurations differently from the ordinal fit, the ordinal fit's ranking is not to be
trusted. Massey reads CMOS as a margin on its own scale (least squares); classic Bradley-Terry
reads it as a partial win, CMOS / 3 in [-1, 1] worth a share (1 + m) / 2 of a win for A. Both
ignore the side shown first (a balanced design shows each side first half of the time) and sum
their strengths to zero over the configurations that have ratings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit
from scipy.stats import spearmanr

from voxwatch.metrics.preference import CMOS_MAX, Ratings
from voxwatch.metrics.preference_ordinal import RIDGE, difference_rows, fit_ordinal, sum_zero_basis


@dataclass(frozen=True)
class PairTotals:
    """Per unordered pair (a < b): the ratings' weight, and A's summed CMOS and win share."""
    a: np.ndarray
    b: np.ndarray
    n: np.ndarray
    cmos: np.ndarray
    wins: np.ndarray
    configs: int


def pair_totals(r: Ratings, weights: np.ndarray | None = None) -> PairTotals:
    """Each rating on its canonical side (the lower configuration code as A), summed per pair."""
    w = np.ones(len(r)) if weights is None else np.asarray(weights, dtype=np.float64)
    swap = r.a > r.b
    a, b = np.where(swap, r.b, r.a), np.where(swap, r.a, r.b)
    cmos = np.where(swap, -r.cmos, r.cmos).astype(np.float64)
    k = len(r.configs)
    pair, index = np.unique(a * k + b, return_inverse=True)
    index = index.ravel()
    n = np.bincount(index, weights=w, minlength=pair.size)
    total = np.bincount(index, weights=w * cmos, minlength=pair.size)
    share = np.bincount(index, weights=w * (1 + cmos / CMOS_MAX) / 2, minlength=pair.size)
    return PairTotals(pair // k, pair % k, n, total, share, k)


def _design(t: PairTotals) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs that have weight, their (present-configuration) difference rows in the sum-zero
    basis, and which configurations are present."""
    used = t.n > 0
    present = np.zeros(t.configs, dtype=bool)
    present[t.a[used]] = present[t.b[used]] = True
    return used, difference_rows(t.a[used], t.b[used], present), present


def _spread(t: PairTotals, present: np.ndarray, z_beta: np.ndarray) -> np.ndarray:
    strength = np.full(t.configs, np.nan)
    strength[present] = z_beta
    return strength


def massey(r: Ratings, weights: np.ndarray | None = None) -> np.ndarray:
    """Least squares on the CMOS margins: CMOS = s_A - s_B + noise, strengths in CMOS points."""
    t = pair_totals(r, weights)
    used, xz, present = _design(t)
    n, total = t.n[used], t.cmos[used]
    beta = np.linalg.lstsq((xz.T * n) @ xz, xz.T @ total, rcond=None)[0]
    return _spread(t, present, sum_zero_basis(int(present.sum())) @ beta)


def classic_bt(r: Ratings, ridge: float = RIDGE, weights: np.ndarray | None = None,
               tol: float = 1e-12) -> np.ndarray:
    """Bradley-Terry on partial wins (a share (1 + CMOS / 3) / 2 of a win for A), maximum
    likelihood with the ridge lambda / 2 * sum s^2, by Newton's method (the log-likelihood is
    concave, so full steps from zero converge)."""
    t = pair_totals(r, weights)
    used, xz, present = _design(t)
    n, wins = t.n[used], t.wins[used]
    beta = np.zeros(xz.shape[1])
    for _ in range(200):
        p = expit(xz @ beta)
        grad = xz.T @ (wins - n * p) - ridge * beta
        hess = (xz.T * (n * p * (1 - p))) @ xz + ridge * np.eye(beta.size)
        step = np.linalg.solve(hess, grad)
        beta += step
        if float(grad @ step) < tol:
            break
    return _spread(t, present, sum_zero_basis(int(present.sum())) @ beta)


@dataclass(frozen=True)
class Agreement:
    """The three engines' strengths and the Spearman correlation of each pair of them."""
    ordinal: np.ndarray
    massey: np.ndarray
    classic: np.ndarray
    spearman: dict[str, float]


def agreement(r: Ratings) -> Agreement:
    """All three engines on the same ratings, and how well they agree on the order."""
    fits = {"ordinal": fit_ordinal(r).strength, "massey": massey(r), "classic": classic_bt(r)}
    rho = {}
    names = list(fits)
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            ok = np.isfinite(fits[x]) & np.isfinite(fits[y])
            rho[f"{x}~{y}"] = float(spearmanr(fits[x][ok], fits[y][ok]).statistic) if ok.sum() > 2 else float("nan")
    return Agreement(fits["ordinal"], fits["massey"], fits["classic"], rho)
