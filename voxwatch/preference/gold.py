"""Careless raters: each rater scored on their answers to gold pairs (ITU-T P.808's gold questions).

A gold answer is a rater's `overall` CMOS on a gold pair (rows.py), in the pair's A/B terms:
- `identical` (one output on both sides): passes when |CMOS| <= 1;
- `broken` (one side silence or clipped noise): passes when the CMOS favours the intact side by 2
  or more (CMOS >= 2 when B is broken, <= -2 when A is).
A rater with at least `min_answers` gold answers whose pass share is below `pass_share` is careless
([preference] gold_pass_share and gold_min_answers). The Elo board fits without the ratings of
careless raters (`careless_raters`); a rater with fewer gold answers is not judged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from voxwatch.store.preference_rows import GOLD_BROKEN, GOLD_IDENTICAL, PairRow, RatingRow

GOLD_RUBRIC = "overall"
PASS_SHARE = 0.8
"""The default share of gold answers a rater must pass ([preference] gold_pass_share)."""
MIN_ANSWERS = 2
"""The default number of gold answers below which a rater is not judged ([preference] gold_min_answers)."""


@dataclass(frozen=True)
class GoldScore:
    """One rater's gold answers: how many, how many passed, and whether that flags them careless."""
    rater_id: int
    answered: int
    passed: int
    careless: bool

    @property
    def share(self) -> float | None:
        return self.passed / self.answered if self.answered else None


def gold_passes(pair: PairRow, cmos: int) -> bool:
    """Whether an overall CMOS (A/B terms) on a gold pair is a right answer."""
    if pair.gold == GOLD_IDENTICAL:
        return abs(cmos) <= 1
    if pair.gold == GOLD_BROKEN:
        return cmos >= 2 if pair.broken_side == "b" else cmos <= -2
    raise ValueError(f"pair {pair.pair_id} is not a gold pair")


def gold_scores(pairs: Iterable[PairRow], ratings: Iterable[RatingRow], raters: Iterable[int] = (),
                pass_share: float = PASS_SHARE, min_answers: int = MIN_ANSWERS) -> dict[int, GoldScore]:
    """Every rater's score (those in `raters` too, with no gold answer), by rater id."""
    gold = {p.pair_id: p for p in pairs if p.gold}
    counts: dict[int, list[int]] = {r: [0, 0] for r in raters}
    for r in ratings:
        if r.rubric == GOLD_RUBRIC and r.pair_id in gold:
            c = counts.setdefault(r.rater_id, [0, 0])
            c[0] += 1
            c[1] += gold_passes(gold[r.pair_id], r.cmos)
    return {rid: GoldScore(rid, n, ok, n >= min_answers and ok < pass_share * n)
            for rid, (n, ok) in sorted(counts.items())}


def store_gold_scores(store, pass_share: float = PASS_SHARE, min_answers: int = MIN_ANSWERS) -> dict[int, GoldScore]:
    """gold_scores over every pair, rating and rater the store holds."""
    return gold_scores(store.preference_pairs(), store.preference_ratings(),
                       [r.rater_id for r in store.preference_raters()], pass_share, min_answers)


def careless_raters(store, pass_share: float = PASS_SHARE, min_answers: int = MIN_ANSWERS) -> set[int]:
    """The rater ids whose ratings the Elo fit leaves out: below `pass_share` on at least `min_answers` gold answers."""
    return {s.rater_id for s in store_gold_scores(store, pass_share, min_answers).values() if s.careless}
