"""Elo with honest intervals: the ordinal fit's strengths with rater x prompt clustered
intervals (METHOD "Preference (Elo)").

Ratings share raters (one rater's taste runs through all their ratings) and prompts (a prompt
that trips one model trips it for every rater), so they are not independent, and resampling
ratings would give intervals far too narrow (benchmarks/preference_recovery.py). The interval is
estimate +- t * sqrt(V), V the multiway variance of METHOD "Uncertainty" (raters + prompts - their
cells), each term a one-way cluster bootstrap of the refit, started from the full fit.

Beside it, the crossed ("pigeonhole") bootstrap's percentile interval: each resample draws raters
and prompts with replacement and keeps the ratings where both were drawn (a rating weighted by its
rater's count times its prompt's count: metrics/clustered.crossed_weights). It gives a rating's own
noise a variance of about 3 where the truth has 1, so where that noise dominates it is too wide
(99.3 % coverage in the benchmark against 95.3 % for the multiway interval); it is reported, not
ranked on. A configuration with no ratings in a crossed resample has no strength there (the others
sum to zero without it); such resamples are counted per configuration and left out of its interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from voxwatch.metrics.clustered import LEVEL, bootstrap_variances, crossed_weights, design
from voxwatch.metrics.preference import Ratings, elo, regroup
from voxwatch.metrics.preference_ordinal import RIDGE, Cells, OrdinalFit, cells, fit_cells

RESAMPLES = 1000
SEED = 20261217


@dataclass(frozen=True)
class Standings:
    """Each configuration's Elo, its 95 % interval (NaN without one), the crossed bootstrap's
    percentile interval beside it, and the number of crossed resamples in which it had no ratings;
    `first` is the shown-first term (logits)."""
    configs: tuple[str, ...]
    elo: np.ndarray
    low: np.ndarray
    high: np.ndarray
    crossed_low: np.ndarray
    crossed_high: np.ndarray
    missing: np.ndarray
    resamples: int
    ratings: int
    first: float


def refits(c: Cells, full: OrdinalFit, weights: Iterable[np.ndarray], ridge: float = RIDGE) -> np.ndarray:
    """One row of strengths per resample's weights (NaN where a configuration had no ratings)."""
    return np.array([fit_cells(c, c.counts(w), ridge, start=full).strength for w in weights]).reshape(-1, c.configs)


def clustered_weights(r: Ratings, resamples: int = RESAMPLES, seed: int = SEED) -> Iterable[np.ndarray]:
    """The rater x prompt bootstrap's weights for these ratings."""
    return crossed_weights(design(rater=r.rater, prompt=r.prompt), resamples, seed)


def percentile_interval(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column, the 2.5th and 97.5th percentiles of the finite draws (NaN with fewer than 2)."""
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.full(draws.shape[1], np.nan), np.full(draws.shape[1], np.nan)
    for j in range(draws.shape[1]):
        x = draws[np.isfinite(draws[:, j]), j]
        if x.size >= 2:
            low[j], high[j] = np.percentile(x, [tail, 100 - tail])
    return low, high


def multiway_interval(r: Ratings, c: Cells, full: OrdinalFit, resamples: int = RESAMPLES, seed: int = SEED,
                      ridge: float = RIDGE) -> tuple[np.ndarray, np.ndarray]:
    """Estimate +- t * sqrt(V), V the multiway variance (raters + prompts - their cells, CGM 2011) of
    one-way cluster bootstraps of the refit. The crossed bootstrap gives a rating's own noise a
    weight of variance ~3 (the rater's count times the prompt's), where the truth has 1: this one
    counts it once."""
    d = design(rater=r.rater, prompt=r.prompt)
    variances = bootstrap_variances(d, lambda w: fit_cells(c, c.counts(w), ridge, start=full).strength,
                                    resamples, seed)
    half = np.array([v.critical * np.sqrt(v.total) for v in variances])
    return full.strength - half, full.strength + half


def board(r: Ratings, resamples: int = RESAMPLES, seed: int = SEED, ridge: float = RIDGE,
          weights: Iterable[np.ndarray] | None = None, interval: str = "multiway") -> Standings:
    """The leaderboard of some ratings (one rubric's): the ordinal fit's Elo with the multiway
    variance's t intervals, and the crossed bootstrap's percentile intervals beside them
    (`interval="percentile"` ranks on those instead). `weights` replaces the crossed resampling
    scheme, and then the percentile interval of those draws is the interval (benchmarks compare
    schemes)."""
    c = cells(r)
    full = fit_cells(c, c.counts(), ridge)
    draws = refits(c, full, clustered_weights(r, resamples, seed) if weights is None else weights, ridge)
    crossed_low, crossed_high = percentile_interval(draws)
    low, high = crossed_low, crossed_high
    if interval == "multiway" and weights is None and resamples > 0:
        low, high = multiway_interval(r, c, full, resamples, seed, ridge)
    missing = np.sum(~np.isfinite(draws), axis=0)
    return Standings(r.configs, elo(full.strength), elo(low), elo(high), elo(crossed_low), elo(crossed_high), missing,
                 draws.shape[0], len(r), full.first)


def by_rubric(r: Ratings, resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, Standings]:
    """A board per rubric (a gated rubric only over the prompts it was asked on)."""
    return {name: board(r.of_rubric(name), resamples, seed) for name in r.rubrics
            if np.any(r.rubric == r.rubrics.index(name))}


def by_category(r: Ratings, category_of: dict[str, str], resamples: int = RESAMPLES,
                seed: int = SEED) -> dict[str, Standings]:
    """A board per prompt category (objective category, difficulty or acoustic condition)."""
    label = np.array([category_of[p] for p in r.prompts])[r.prompt] if len(r) else np.array([], dtype=str)
    return {name: board(r.subset(label == name), resamples, seed) for name in sorted(set(label.tolist()))}


def by_group(r: Ratings, group_of: dict[str, str], resamples: int = RESAMPLES, seed: int = SEED) -> Standings:
    """A board of groups of configurations: the model level (a model over its voices and thinking
    levels), per voice ((model, voice) over thinking levels) or per thinking level."""
    return board(regroup(r, group_of), resamples, seed)
