"""A small simulated rating study written into a real store, as `preference fit` reads one.

Five configurations of three models (m1 in two voices, m2 at two thinking levels, m3 alone) with
known strengths; twelve prompts over two categories, two difficulties and two conditions; every pair
of configurations on every prompt, plus one gold pair (left out of every board); eight raters rate a
random half of the pairs on three rubrics, CMOS drawn from tests/support/preference_sim.py's cumulative-logit
model. Rater 8 is careless: uniform noise on every pair, the kind the gold pairs catch.
"""

from __future__ import annotations

import itertools
import json

import numpy as np

from voxwatch.store.preference_rows import PairRow, PromptRow, RatingRow
from support.preference_sim import CUTS

CONFIGS = {"m1|none|alto": -0.6, "m1|none|bass": -0.5, "m2|low|alto": 0.0, "m2|high|alto": 0.45, "m3|none|tenor": 0.65}
RUBRICS = ("overall", "naturalness", "prosody")
PROMPTS = 12
RATERS = 8
CARELESS = 8
SET = "sim"


def seed_store(store, seed: int = 7) -> dict[str, int]:
    """Write the study into `store`; returns counts of what was written."""
    rng = np.random.default_rng(seed)
    store.add_prompts([PromptRow(SET, f"q{j:02d}", "pin", "sha", f"prompt {j}", "factual" if j % 2 else "reasoning",
                                 "L1" if j < 6 else "L3", "clean" if j % 3 else "indoor-noise", json.dumps([]), True)
                       for j in range(PROMPTS)])
    pairs = [PairRow(None, "sim:seed0", SET, f"q{j:02d}", 0, 0, a, b, "a" if (j + i) % 2 else "b", 0.0)
             for j in range(PROMPTS) for i, (a, b) in enumerate(itertools.combinations(CONFIGS, 2))]
    gold = PairRow(None, "sim:seed0", SET, "q00", 0, 0, "m3|none|tenor", "m3|none|tenor", "a", 0.0, gold="identical",
                   expected_cmos=0)
    ids = store.add_pairs(pairs + [gold])
    for p, pair_id in zip(pairs + [gold], ids):
        p.pair_id = pair_id
    raters = [store.add_rater(f"token-{k}", 0.0, f"rater {k}").rater_id for k in range(1, RATERS + 1)]
    assert raters == list(range(1, RATERS + 1))
    rows = []
    for rater in raters:
        for p in [pairs[i] for i in rng.permutation(len(pairs))[: len(pairs) // 2]] + [gold]:
            a_first = rng.random() < 0.5
            for rubric in RUBRICS:
                eta = CONFIGS[p.config_a] - CONFIGS[p.config_b] + 0.2 * (1 if a_first else -1)
                cmos = (int(rng.integers(-3, 4)) if rater == CARELESS or p.gold
                        else int(np.searchsorted(CUTS, eta + rng.logistic())) - 3)
                rows.append(RatingRow(None, rater, p.pair_id, rubric, cmos, 100.0, "a" if a_first else "b"))
    store.add_ratings(rows)
    return {"pairs": len(pairs), "ratings": len(rows)}
