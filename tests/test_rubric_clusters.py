"""Rubric clustering: planted groups are found and trusted, and no groups are not invented."""

from __future__ import annotations

import numpy as np
import pytest

from voxwatch.metrics.preference import ratings
from voxwatch.metrics.rubric_clusters import adjusted_rand, partition, rubric_clusters

CUTS = np.array([-2.4, -1.3, -0.35, 0.35, 1.3, 2.4])
CONFIGS, RUBRICS = 8, 6


def test_adjusted_rand_on_a_hand_example():
    """x = {0,1}{2,3}, y = {0,1}{2}{3}: agreeing pairs 1, expected 2 * 1 / 6 = 1/3, maximum (2 + 1) / 2,
    so ARI = (1 - 1/3) / (3/2 - 1/3) = 4/7."""
    assert adjusted_rand(np.array([0, 0, 1, 1]), np.array([0, 0, 1, 2])) == pytest.approx(4 / 7)
    assert adjusted_rand(np.array([0, 0, 1, 1, 2]), np.array([5, 5, 3, 3, 9])) == pytest.approx(1.0)
    assert adjusted_rand(np.array([0, 1, 0, 1]), np.array([0, 0, 1, 1])) == pytest.approx(-0.5)


def test_partition_numbers_clusters_by_first_appearance():
    c = np.array([[1.0, 0.9, -0.5], [0.9, 1.0, -0.4], [-0.5, -0.4, 1.0]])
    assert partition(c, 2) == (0, 0, 1)


def _study(rng: np.random.Generator, truth: np.ndarray, pairs: int = 2500, raters: int = 40, prompts: int = 120,
           shared_sd: float = 0.8):
    """Every pair rated on every rubric by the same rater, with an impression shared by the rubrics of
    one rating (noise that makes all rubrics look alike unless corrected)."""
    a = rng.integers(0, CONFIGS, pairs)
    b = (a + rng.integers(1, CONFIGS, pairs)) % CONFIGS
    rater, prompt = rng.integers(0, raters, pairs), rng.integers(0, prompts, pairs)
    a_first = rng.random(pairs) < 0.5
    shared = rng.normal(0.0, shared_sd, pairs)
    cols = {k: [] for k in ("rater", "prompt", "a", "b", "a_first", "cmos", "rubric")}
    for i in range(truth.shape[0]):
        cmos = np.searchsorted(CUTS, truth[i, a] - truth[i, b] + shared + rng.logistic(size=pairs)) - 3
        for k, v in (("rater", rater), ("prompt", prompt), ("a", a), ("b", b), ("a_first", a_first), ("cmos", cmos),
                     ("rubric", np.full(pairs, i))):
            cols[k].append(v)
    col = {k: np.concatenate(v) for k, v in cols.items()}
    return ratings(col["rater"], col["prompt"], [f"c{x}" for x in col["a"]], [f"c{x}" for x in col["b"]],
                   col["a_first"], col["cmos"], [f"q{x}" for x in col["rubric"]])


def _halo(rng: np.random.Generator) -> np.ndarray:
    quality = np.linspace(-1.0, 1.0, CONFIGS)
    return np.outer(rng.uniform(0.8, 1.2, RUBRICS), quality)


def test_planted_groups_under_a_halo_are_found_and_reliable():
    rng = np.random.default_rng(11)
    group = np.array([0, 0, 0, 1, 1, 1])
    profile = rng.normal(0.0, 0.5, (2, CONFIGS))
    result = rubric_clusters(_study(rng, _halo(rng) + profile[group]), clusters=2, resamples=100, splits=10, seed=3)
    assert result.labels == (0, 0, 0, 1, 1, 1)
    assert result.reliability >= 0.8 and result.chance <= 0.1
    assert result.split_half_ari >= 0.6
    assert result.structure


def test_a_halo_alone_shows_no_structure():
    rng = np.random.default_rng(12)
    result = rubric_clusters(_study(rng, _halo(rng)), clusters=2, resamples=100, splits=10, seed=3)
    assert not result.structure
    assert result.reliability < 0.5
    assert result.split_half_ari < 0.3
