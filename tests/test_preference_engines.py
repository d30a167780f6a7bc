"""The three preference engines against independent implementations and against each other."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from support.preference_sim import simulated
from voxwatch.metrics.preference import elo, ratings, regroup
from voxwatch.metrics.preference_engines import agreement, classic_bt, massey
from voxwatch.metrics.preference_ordinal import fit_ordinal

STRENGTH = np.array([-0.9, -0.5, -0.2, 0.1, 0.45, 1.05])


@pytest.fixture(scope="module")
def sample():
    return simulated(np.random.default_rng(7), STRENGTH - STRENGTH.mean(), 2500)


def test_ordinal_equals_statsmodels_ordered_model(sample):
    """OrderedModel has free cut-points and no sum-to-zero constraint, so the design is made to express
    ours: every rating enters twice, as rated and mirrored (A and B swapped, CMOS negated, the other
    side first). The mirrored data's likelihood is unchanged by reflecting the cut-points, and it is
    concave with one optimum, so OrderedModel's free cut-points come out symmetric and its fit is our
    symmetric fit of the original ratings. Strengths enter as +1 (A) / -1 (B) columns with the last
    configuration's column dropped (its strength 0), then are centred; ridge 0 on our side."""
    from statsmodels.miscmodels.ordinal_model import OrderedModel

    r, k = sample, len(sample.configs)
    n = len(r)
    x = np.zeros((n, k))
    x[np.arange(n), r.a] += 1.0
    x[np.arange(n), r.b] -= 1.0
    side = np.where(r.a_first, 1.0, -1.0)
    exog = np.hstack([x[:, :-1], side[:, None]])
    model = OrderedModel(np.concatenate([r.cmos, -r.cmos]), np.vstack([exog, -exog]), distr="logit")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bfgs reports gtol=1e-10 as unmet at machine precision
        result = model.fit(method="bfgs", disp=False, maxiter=10000, gtol=1e-10)
    theirs = np.append(result.params[:k - 1], 0.0)
    ours = fit_ordinal(r, ridge=0.0)
    assert np.abs((theirs - theirs.mean()) - ours.strength).max() < 1e-4
    assert abs(result.params[k - 1] - ours.first) < 1e-4
    cuts = model.transform_threshold_params(result.params)[1:-1]
    t1, t2, t3 = ours.thresholds
    assert np.abs(cuts - np.array([-t3, -t2, -t1, t1, t2, t3])).max() < 1e-4


@pytest.mark.parametrize("ridge", [0.0, 0.05])
def test_classic_bt_equals_choix_on_the_same_wins(sample, ridge):
    """A share (3 + CMOS) / 6 of a win is (3 + CMOS) whole wins out of 6 comparisons: choix's likelihood
    on those is 6 times ours. choix's penalty is alpha * sum(theta^2) on that, so alpha = 3 * lambda."""
    import choix

    r = sample
    data = []
    for a, b, y in zip(r.a.tolist(), r.b.tolist(), r.cmos.tolist()):
        data += [(a, b)] * (3 + y) + [(b, a)] * (3 - y)
    theirs = choix.opt_pairwise(len(r.configs), data, alpha=3 * ridge, tol=1e-12)
    assert np.abs((theirs - theirs.mean()) - classic_bt(r, ridge=ridge)).max() < 1e-6


def test_massey_equals_minimum_norm_least_squares(sample):
    """The minimum-norm least-squares solution of one row per rating is orthogonal to the all-ones null
    space (a connected design), so it sums to zero: Massey's constraint, solved another way."""
    r = sample
    x = np.zeros((len(r), len(r.configs)))
    x[np.arange(len(r)), r.a] = 1.0
    x[np.arange(len(r)), r.b] = -1.0
    theirs = np.linalg.pinv(x) @ r.cmos
    assert np.abs(theirs - massey(r)).max() < 1e-9


def test_a_mirrored_rating_is_the_same_rating(sample):
    r = sample
    mirrored = ratings(np.array(r.raters)[r.rater], np.array(r.prompts)[r.prompt], np.array(r.configs)[r.b],
                       np.array(r.configs)[r.a], ~r.a_first, -r.cmos)
    for engine in (lambda x: fit_ordinal(x).strength, massey, classic_bt):
        assert np.abs(engine(r) - engine(mirrored)).max() < 1e-9


def test_the_ordinal_fit_recovers_strengths_and_the_shown_first_term():
    r = simulated(np.random.default_rng(3), STRENGTH - STRENGTH.mean(), 40000, first=0.3)
    f = fit_ordinal(r)
    assert f.converged
    assert np.abs(f.strength - (STRENGTH - STRENGTH.mean())).max() < 0.06
    assert abs(f.first - 0.3) < 0.04
    assert abs(f.strength.sum()) < 1e-9


def test_engines_agree_on_order(sample):
    a = agreement(sample)
    assert min(a.spearman.values()) >= 0.99
    assert list(np.argsort(a.ordinal)) == list(np.argsort(STRENGTH))


def test_the_ridge_keeps_an_unbeaten_configuration_finite():
    """c0 wins every rating it is in: its maximum-likelihood strength is infinite; the ridge keeps it
    finite and first."""
    rng = np.random.default_rng(1)
    r = simulated(rng, np.zeros(4), 400)
    cmos = np.where(r.a == 0, 3, np.where(r.b == 0, -3, r.cmos))
    unbeaten = ratings(np.array(r.raters)[r.rater], np.array(r.prompts)[r.prompt], np.array(r.configs)[r.a],
                       np.array(r.configs)[r.b], r.a_first, cmos)
    for s in (fit_ordinal(unbeaten).strength, classic_bt(unbeaten)):
        assert np.all(np.isfinite(s)) and np.argmax(s) == 0


def test_a_configuration_without_ratings_has_no_strength():
    r = simulated(np.random.default_rng(2), np.zeros(3), 300)
    named = ratings(np.array(r.raters)[r.rater], np.array(r.prompts)[r.prompt], np.array(r.configs)[r.a],
                    np.array(r.configs)[r.b], r.a_first, r.cmos, configs=("c00", "c01", "c02", "c99"))
    for s in (fit_ordinal(named).strength, massey(named), classic_bt(named)):
        assert np.isnan(s[3]) and abs(np.nansum(s)) < 1e-9


def test_regroup_drops_ratings_within_a_group_and_elo_scale():
    r = simulated(np.random.default_rng(4), np.zeros(4), 500)
    model = regroup(r, {"c00": "m0", "c01": "m0", "c02": "m1", "c03": "m1"})
    assert model.configs == ("m0", "m1")
    assert len(model) == int(np.sum((r.a < 2) != (r.b < 2)))
    assert np.all(model.a != model.b)
    assert elo(np.array([0.0, np.log(10.0)])).tolist() == pytest.approx([1000.0, 1400.0])
