"""Shared by the preference tests: ratings drawn from a cumulative-logit model with known strengths.

Small on purpose (seconds per test): the recovery of the truth at full size, with rater and prompt
effects, is benchmarks/preference_recovery.py's claim.
"""

from __future__ import annotations

import numpy as np

from voxwatch.metrics.preference import Ratings, ratings

CUTS = np.array([-2.4, -1.3, -0.35, 0.35, 1.3, 2.4])
"""Symmetric cut-points on the logit scale: roughly 10 % of ratings at each end and 30 % ties."""


def simulated(rng: np.random.Generator, strength: np.ndarray, n: int, raters: int = 30, prompts: int = 60,
              first: float = 0.2, rater_sd: float = 0.0, rubric: str = "overall") -> Ratings:
    """n ratings of random pairs, each side shown first half the time; `rater_sd` gives each rater
    a taste per configuration (a cluster effect the rater x prompt bootstrap must see)."""
    k = strength.size
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    a_first = rng.random(n) < 0.5
    rater = rng.integers(0, raters, n)
    taste = rng.normal(0.0, rater_sd, (raters, k))
    eta = strength[a] - strength[b] + taste[rater, a] - taste[rater, b] + first * np.where(a_first, 1, -1)
    cmos = np.searchsorted(CUTS, eta + rng.logistic(size=n)) - 3
    return ratings([f"r{x:03d}" for x in rater], [f"p{x:03d}" for x in rng.integers(0, prompts, n)],
                   [f"c{x:02d}" for x in a], [f"c{x:02d}" for x in b], a_first, cmos, [rubric] * n)
