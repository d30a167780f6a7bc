"""Which rubrics measure the same thing? Rubric clustering with its reliability (METHOD "Preference (Elo)").

Per-rubric strengths from the ordinal fit form a rubric x configuration matrix. Every rubric
mostly says "this model is better" (the halo of general quality), so rows are centred and the
first principal component over configurations is projected out; what is left is how a rubric
orders the configurations differently from the others. Two rubrics rated by the same rater on
the same pair share noise (one impression, answered group by group), which makes them look alike:
the shared part of each pair's similarity is estimated from the rater x prompt clustered
bootstrap (the covariance of their refitted rows) and subtracted. Average-linkage clustering on
1 - the corrected correlation gives the partition.

Is the partition real? Reliability: the share of bootstrap resamples (each clustered afresh) that
reproduce it exactly, against the chance rate: the share of signal-removed resamples (each
resample minus the estimate: noise with the same shared structure) that produce it. Split-half:
the raters cut into two random halves, each clustered, their adjusted Rand index averaged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform

from voxwatch.metrics.preference import Ratings
from voxwatch.metrics.preference_bootstrap import SEED, clustered_weights
from voxwatch.metrics.preference_ordinal import RIDGE, cells, fit_cells

RELIABLE = 0.5
"""A partition is structure when at least half the resamples reproduce it, and chance does at most
half as often."""


@dataclass(frozen=True)
class RubricClusters:
    """The rubrics' partition (a cluster number per rubric, numbered in order of first appearance),
    the corrected correlations it came from, and how far it can be trusted."""
    rubrics: tuple[str, ...]
    labels: tuple[int, ...]
    correlation: np.ndarray
    reliability: float
    chance: float
    split_half_ari: float

    @property
    def structure(self) -> bool:
        return self.reliability >= RELIABLE and self.chance <= self.reliability / 2


class RubricFits:
    """The ordinal fit of every rubric, refittable under any weights of the ratings."""

    def __init__(self, r: Ratings, ridge: float = RIDGE):
        self.masks = [r.rubric == i for i in range(len(r.rubrics))]
        self.cells = [cells(r.subset(m)) for m in self.masks]
        self.ridge = ridge
        self.full = [fit_cells(c, c.counts(), ridge) for c in self.cells]

    def strengths(self, weights: np.ndarray | None = None) -> np.ndarray:
        """The rubric x configuration strengths (NaN where a rubric has no rating of a configuration)."""
        if weights is None:
            return np.array([f.strength for f in self.full])
        return np.array([fit_cells(c, c.counts(weights[m]), self.ridge, start=f).strength
                         for c, m, f in zip(self.cells, self.masks, self.full)])


def adjusted_rand(x: np.ndarray, y: np.ndarray) -> float:
    """Hubert and Arabie's adjusted Rand index of two partitions of the same items: 1 identical,
    about 0 for partitions no more alike than chance."""
    _, xi = np.unique(x, return_inverse=True)
    _, yi = np.unique(y, return_inverse=True)
    table = np.zeros((xi.max() + 1, yi.max() + 1))
    np.add.at(table, (xi.ravel(), yi.ravel()), 1)

    def pairs(v: np.ndarray) -> float:
        return float(np.sum(v * (v - 1) / 2))

    index, rows, cols, total = pairs(table), pairs(table.sum(axis=1)), pairs(table.sum(axis=0)), pairs(np.array([xi.size]))
    expected = rows * cols / total if total else 0.0
    top = (rows + cols) / 2
    return 1.0 if top == expected else float((index - expected) / (top - expected))


def halo_removed(m: np.ndarray, halo: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Rows centred, then the first principal component over configurations (the halo, or the one
    given) projected out; returns the residual and the halo direction."""
    centred = m - m.mean(axis=1, keepdims=True)
    if halo is None:
        halo = np.linalg.svd(centred, full_matrices=False)[2][0]
    return centred - np.outer(centred @ halo, halo), halo


def corrected_correlation(residual: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """The rubrics' similarity (residual covariance over configurations) less their shared noise, as
    a correlation. A rubric's variance is taken as at least its noise variance: one with no signal
    left (its corrected variance near 0, or below) then has correlations near 0, not +-1."""
    s = residual @ residual.T / residual.shape[1] - noise
    scale = np.sqrt(np.maximum(np.diag(s), np.maximum(np.diag(noise), 1e-300)))
    correlation = np.clip(s / np.outer(scale, scale), -1.0, 1.0)
    np.fill_diagonal(correlation, 1.0)
    return correlation


def partition(correlation: np.ndarray, clusters: int) -> tuple[int, ...]:
    """Average-linkage clusters on 1 - correlation, numbered in order of first appearance."""
    distance = 1.0 - correlation
    np.fill_diagonal(distance, 0.0)
    raw = fcluster(linkage(squareform(distance, checks=False), method="average"), clusters, criterion="maxclust")
    order: dict[int, int] = {}
    return tuple(order.setdefault(int(x), len(order)) for x in raw)


def _cluster(m: np.ndarray, noise: np.ndarray, clusters: int) -> tuple[int, ...]:
    residual, _ = halo_removed(m)
    return partition(corrected_correlation(residual, noise), clusters)


def _complete(m: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The configurations every rubric rated, a resample's missing ones at the estimate's centre."""
    out = m[:, keep]
    return np.where(np.isfinite(out), out, 0.0)


def rubric_clusters(r: Ratings, clusters: int = 2, resamples: int = 1000, splits: int = 500,
                    seed: int = SEED) -> RubricClusters:
    """The rubrics' partition into `clusters` groups, its bootstrap reliability against chance and its
    split-half agreement (the source's 500 splits by default)."""
    fits = RubricFits(r)
    full = fits.strengths()
    keep = np.all(np.isfinite(full), axis=0)
    m = full[:, keep]
    residual, halo = halo_removed(m)
    draws = np.array([_complete(fits.strengths(w), keep) for w in clustered_weights(r, resamples, seed)])
    # the noise of each pair of rubrics' residual rows, under the estimate's own halo direction
    projected = np.array([halo_removed(d, halo)[0] for d in draws])
    deviation = projected - projected.mean(axis=0)
    noise = np.einsum("bik,bjk->ij", deviation, deviation) / (max(resamples - 1, 1) * m.shape[1])
    correlation = corrected_correlation(residual, noise)
    found = partition(correlation, clusters)
    reliability = float(np.mean([_cluster(d, noise, clusters) == found for d in draws]))
    chance = float(np.mean([_cluster(d - m, noise, clusters) == found for d in draws]))
    return RubricClusters(r.rubrics, found, correlation, reliability, chance,
                          split_half(r, fits, keep, noise, clusters, splits, seed))


def split_half(r: Ratings, fits: RubricFits, keep: np.ndarray, noise: np.ndarray, clusters: int, splits: int,
               seed: int) -> float:
    """The mean adjusted Rand index of the partitions of two disjoint random halves of the raters;
    each half has about twice the full data's noise, so twice its shared-noise correction."""
    rng = np.random.default_rng(seed)
    raters = len(r.raters)
    scores = []
    for _ in range(splits):
        half = np.zeros(raters, dtype=bool)
        half[rng.permutation(raters)[:raters // 2]] = True
        first = half[r.rater].astype(np.float64)
        parts = [_cluster(_complete(fits.strengths(w), keep), 2 * noise, clusters) for w in (first, 1.0 - first)]
        scores.append(adjusted_rand(np.array(parts[0]), np.array(parts[1])))
    return float(np.mean(scores)) if scores else float("nan")
