"""The rater x prompt clustered bootstrap of the ordinal fit, and the breakdowns built on it."""

from __future__ import annotations

import numpy as np

from support.preference_sim import simulated
from voxwatch.metrics.clustered import crossed_weights, design, row_weights
from voxwatch.metrics.preference import Ratings, ratings
from voxwatch.metrics.preference_bootstrap import board, by_category, by_group, by_rubric, clustered_weights
from voxwatch.metrics.preference_ordinal import cells, fit_cells, fit_ordinal

STRENGTH = np.array([-0.6, -0.2, 0.1, 0.7]) - 0.0


def _labels(r: Ratings) -> dict[str, np.ndarray]:
    return {"rater": np.array(r.raters)[r.rater], "prompt": np.array(r.prompts)[r.prompt],
            "a": np.array(r.configs)[r.a], "b": np.array(r.configs)[r.b]}


def test_a_crossed_draw_weighs_a_row_by_its_raters_count_times_its_prompts_count():
    """On a full crossing (one row per rater and prompt) each resample's weights are the outer product
    of two multinomial counts: R raters drawn R times, P prompts drawn P times."""
    raters, prompts = 7, 5
    rater, prompt = np.repeat(np.arange(raters), prompts), np.tile(np.arange(prompts), raters)
    for w in crossed_weights(design(rater=rater, prompt=prompt), resamples=50, seed=3):
        grid = w.reshape(raters, prompts)
        assert np.linalg.matrix_rank(grid) <= 1
        by_rater, by_prompt = np.rint(grid.sum(axis=1) / grid.sum() * raters), np.rint(grid.sum(axis=0) / grid.sum() * prompts)
        assert by_rater.sum() == raters and by_prompt.sum() == prompts
        assert np.array_equal(grid, np.outer(by_rater, by_prompt))
    assert all(w.sum() == 30 for w in row_weights(30, resamples=5))


def test_a_weighted_refit_is_the_refit_of_the_kept_ratings():
    """A resample as the method says it: keep the ratings whose rater and prompt were drawn, each as many
    times as both were drawn, and refit. The weighted fit must give the same strengths."""
    r = simulated(np.random.default_rng(5), STRENGTH, 600, raters=12, prompts=20)
    w = next(iter(clustered_weights(r, resamples=1, seed=9))).astype(int)
    keep = np.repeat(np.arange(len(r)), w)
    kept = r.subset(keep)
    c = cells(r)
    weighted = fit_cells(c, c.counts(w.astype(float)), start=fit_ordinal(r))
    assert np.nanmax(np.abs(fit_ordinal(kept).strength - weighted.strength)) < 1e-7


def test_resamples_without_a_configuration_are_counted_and_left_out():
    """c04 is rated by one rater only: every resample that does not draw that rater has no c04."""
    rng = np.random.default_rng(6)
    r = simulated(rng, STRENGTH, 800, raters=10, prompts=30)
    lab = _labels(r)
    extra = 40
    rater = np.concatenate([lab["rater"], ["r000"] * extra])
    others = rng.integers(0, 4, extra)
    both = ratings(rater, np.concatenate([lab["prompt"], [f"p{x:03d}" for x in rng.integers(0, 30, extra)]]),
                   np.concatenate([lab["a"], ["c04"] * extra]), np.concatenate([lab["b"], [f"c{x:02d}" for x in others]]),
                   np.concatenate([r.a_first, rng.random(extra) < 0.5]), np.concatenate([r.cmos, rng.integers(-3, 4, extra)]))
    b = board(both, resamples=200, seed=4)
    without = sum(1 for w in clustered_weights(both, 200, 4) if w[len(r):].sum() == 0)
    assert b.missing[4] == without > 0
    assert np.all(b.missing[:4] == 0)
    assert np.all(np.isfinite(b.low)) and np.all(b.low <= b.elo) and np.all(b.elo <= b.high)


def test_clustered_intervals_are_wider_than_row_intervals_when_raters_differ():
    """Each rater has a taste per configuration: ratings of one rater are not independent, and the row
    bootstrap, which treats them so, must come out narrower."""
    r = simulated(np.random.default_rng(8), STRENGTH, 3000, raters=12, prompts=80, rater_sd=0.4)
    clustered = board(r, resamples=300, seed=1)
    rows = board(r, weights=row_weights(len(r), 300, seed=1))
    assert np.all(clustered.missing == 0)
    assert np.mean(clustered.high - clustered.low) > 1.5 * np.mean(rows.high - rows.low)


def test_breakdowns_by_rubric_category_and_group():
    rng = np.random.default_rng(9)
    overall, style = simulated(rng, STRENGTH, 500), simulated(rng, -STRENGTH, 500, rubric="style")
    lab_o, lab_s = _labels(overall), _labels(style)
    r = ratings(*(np.concatenate([lab_o[k], lab_s[k]]) for k in ("rater", "prompt", "a", "b")),
                np.concatenate([overall.a_first, style.a_first]), np.concatenate([overall.cmos, style.cmos]),
                ["overall"] * 500 + ["style"] * 500)
    rubrics = by_rubric(r, resamples=50)
    assert set(rubrics) == {"overall", "style"}
    assert np.argmax(rubrics["overall"].elo) == 3 and np.argmax(rubrics["style"].elo) == 0
    category = {p: ("hard" if int(p[1:]) % 2 else "easy") for p in r.prompts}
    split = by_category(r.of_rubric("overall"), category, resamples=50)
    assert set(split) == {"easy", "hard"} and sum(b.ratings for b in split.values()) == 500
    model = by_group(r.of_rubric("overall"), {"c00": "m0", "c01": "m0", "c02": "m1", "c03": "m1"}, resamples=50)
    assert model.configs == ("m0", "m1") and model.elo[1] > model.elo[0]
    assert abs(model.elo.mean() - 1000.0) < 1e-9


def test_multiway_intervals_are_narrower_than_crossed_ones_when_rating_noise_dominates():
    """No rater or prompt effects: the crossed draw weighs each rating's noise ~3 times over, the
    multiway variance (raters + prompts - cells) once, as the row bootstrap does."""
    r = simulated(np.random.default_rng(10), STRENGTH, 3000, raters=30, prompts=100)
    crossed = board(r, resamples=200, seed=2, interval="percentile")
    multiway = board(r, resamples=200, seed=2)  # the method's interval
    assert np.array_equal(multiway.crossed_low, crossed.low) and np.array_equal(multiway.crossed_high, crossed.high)
    rows = board(r, weights=row_weights(len(r), 200, seed=2))
    assert np.all(multiway.low < multiway.elo) and np.all(multiway.elo < multiway.high)
    width = {k: float(np.mean(b.high - b.low)) for k, b in (("crossed", crossed), ("multiway", multiway), ("rows", rows))}
    assert width["multiway"] < 0.85 * width["crossed"]
    assert 0.8 < width["multiway"] / width["rows"] < 1.25
