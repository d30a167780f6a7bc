"""How well an alert rule does, and how well any rule could (benchmarks/alert_roc.py).

A false-alarm rate is a count over an exposure (series-months), so a rate of 0 is only "fewer
than the Poisson upper bound"; and a detection target is only reachable if the step stands far
enough above the noise of what a rule can see in the time it has. Both are defined here once.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import chi2, norm


def poisson_upper(count: int, exposure: float, level: float = 0.95) -> float:
    """The exact one-sided upper confidence bound of a Poisson rate (events per unit of exposure):
    with 0 events it is -ln(1 - level) / exposure, i.e. 3.0 / exposure at 95 %."""
    return float(chi2.ppf(level, 2 * (count + 1)) / 2 / exposure)


def ideal_power(z: float, alpha: float) -> float:
    """The detection probability of the best one-sided test of a known shift on Gaussian noise:
    the shift is z standard deviations, the test's false-alarm level alpha. No rule on the same
    data can do better (Neyman-Pearson), so a target above this is out of reach."""
    return float(norm.sf(norm.isf(alpha) - z))


def robust_sd(x: np.ndarray) -> float:
    """1.4826 x the median absolute deviation: the standard deviation of the noise's Gaussian core,
    which the rare outliers (a slow tick) do not inflate; the optimistic figure for ideal_power."""
    x = np.asarray(x, dtype=np.float64)
    return float(1.4826 * np.median(np.abs(x - np.median(x))))
