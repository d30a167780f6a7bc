"""Human preference ratings as column arrays (METHOD "Preference (Elo)").

A rating is one rater's CMOS (-3..+3, positive: A better) on one rubric for one pair of model
configurations answering one prompt, with the side shown first. 50,000 ratings are refitted a
thousand times by the bootstrap, so they are held as integer-coded numpy columns, never as
objects; labels sit beside the codes, sorted, so the same ratings give the same codes in every
store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Sequence

import numpy as np

from voxwatch.foundation.rubrics import CMOS_MAX  # the scale a rating is answered on: defined with the rubrics

ELO_BASE = 1000.0
ELO_SCALE = 400.0 / np.log(10.0)
"""Elo points per unit of strength (a logit): 400 points is a 10:1 odds of preference."""


@dataclass(frozen=True)
class Ratings:
    """Ratings as codes into the label tuples; `a_first` is true where A was shown first."""
    rater: np.ndarray
    prompt: np.ndarray
    a: np.ndarray
    b: np.ndarray
    a_first: np.ndarray
    rubric: np.ndarray
    cmos: np.ndarray
    configs: tuple[str, ...]
    raters: tuple[str, ...]
    prompts: tuple[str, ...]
    rubrics: tuple[str, ...]

    def __len__(self) -> int:
        return int(self.cmos.size)

    def subset(self, keep: np.ndarray) -> "Ratings":
        """The ratings where `keep` is true, with every label kept (codes stay comparable)."""
        cols = {name: getattr(self, name)[keep] for name in COLUMNS}
        return Ratings(**cols, configs=self.configs, raters=self.raters, prompts=self.prompts, rubrics=self.rubrics)

    def of_rubric(self, rubric: str) -> "Ratings":
        return self.subset(self.rubric == self.rubrics.index(rubric))


COLUMNS = ("rater", "prompt", "a", "b", "a_first", "rubric", "cmos")


def _codes(labels: Sequence[Hashable], universe: Sequence[str] | None = None) -> tuple[np.ndarray, tuple[str, ...]]:
    values = np.asarray([str(x) for x in labels])
    names = np.unique(values) if universe is None else np.asarray(universe)
    order = np.argsort(names)
    pos = np.searchsorted(names[order], values)
    if values.size and (pos.max() >= names.size or np.any(names[order][np.minimum(pos, names.size - 1)] != values)):
        raise ValueError("a label is not among the given labels")
    return order[pos].astype(np.int64), tuple(str(x) for x in names)


def ratings(rater: Sequence[Hashable], prompt: Sequence[Hashable], a: Sequence[Hashable], b: Sequence[Hashable],
            a_first: Sequence[bool], cmos: Sequence[int], rubric: Sequence[Hashable] | None = None,
            configs: Sequence[str] | None = None) -> Ratings:
    """Ratings from one label per rating and column; `configs` fixes the configurations' order
    (a configuration nobody rated still gets a code, and no strength from any engine)."""
    score = np.asarray(cmos, dtype=np.int64)
    if score.size and np.abs(score).max() > CMOS_MAX:
        raise ValueError("CMOS is -3..+3")
    a_code, b_code = np.asarray([str(x) for x in a]), np.asarray([str(x) for x in b])
    if np.any(a_code == b_code):
        raise ValueError("a configuration rated against itself")
    universe = tuple(configs) if configs is not None else tuple(np.unique(np.concatenate([a_code, b_code])))
    a_idx, names = _codes(a_code, universe)
    b_idx, _ = _codes(b_code, universe)
    rater_idx, raters = _codes(rater)
    prompt_idx, prompts = _codes(prompt)
    rubric_idx, rubrics = _codes(["overall"] * score.size if rubric is None else rubric)
    return Ratings(rater_idx, prompt_idx, a_idx, b_idx, np.asarray(a_first, dtype=bool), rubric_idx, score,
                   names, raters, prompts, rubrics)


def regroup(r: Ratings, group_of: dict[str, str]) -> Ratings:
    """The ratings between groups of configurations (a model over its voices and thinking levels):
    each configuration becomes its group, and a rating within one group (a model against itself)
    carries nothing about the groups and is dropped."""
    groups = tuple(sorted(set(group_of[c] for c in r.configs)))
    code = np.array([groups.index(group_of[c]) for c in r.configs], dtype=np.int64)
    a, b = code[r.a], code[r.b]
    keep = a != b
    return Ratings(r.rater[keep], r.prompt[keep], a[keep], b[keep], r.a_first[keep], r.rubric[keep], r.cmos[keep],
                   groups, r.raters, r.prompts, r.rubrics)


def elo(strength: np.ndarray) -> np.ndarray:
    """Elo = 1000 + (400 / ln 10) * s: a strength difference of ln 10 is 400 points."""
    return ELO_BASE + ELO_SCALE * np.asarray(strength, dtype=np.float64)
