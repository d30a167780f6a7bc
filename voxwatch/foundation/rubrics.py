"""The twelve rubrics a pair is rated on, as data: the one definition every reader uses.

A rater answers group by group (PREFERENCE.md "Data"). Three rubrics are gated: asked only where
the prompt's tags (or its acoustic condition) apply; elsewhere the rating is absent, never zero,
so storing one for a prompt the gate excludes is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterable

CMOS_MIN, CMOS_MAX = -3, 3
"""Comparative MOS: -3 (B much better) .. +3 (A much better), 0 about the same; always in the
pair's own A/B terms, whatever order the two were shown in."""

GROUPS = ("overall", "speech", "content", "delivery", "conditional")
"""The order the groups are asked in."""

DEGRADED = "degraded"
"""A pseudo-tag every prompt recorded in a degraded condition carries (prompt_tags)."""


@dataclass(frozen=True)
class Rubric:
    name: str
    group: str
    question: str
    gate: str | None = None  # the prompt tag that must be present for the rubric to be asked

    def applies(self, tags: Iterable[str]) -> bool:
        return self.gate is None or self.gate in set(tags)


RUBRICS: tuple[Rubric, ...] = (
    Rubric("overall", "overall", "Which reply is better overall?"),
    Rubric("naturalness", "speech", "Which voice sounds more natural and human?"),
    Rubric("prosody", "speech", "Which has the more fitting rhythm, stress and intonation?"),
    Rubric("pronunciation", "speech", "Which pronounces the words more clearly and correctly?"),
    Rubric("content_accuracy", "content", "Which reply is more factually correct?"),
    Rubric("helpfulness", "content", "Which reply helps the caller more?"),
    Rubric("instruction_following", "content", "Which reply does more exactly what the caller asked?"),
    Rubric("conciseness", "delivery", "Which reply is better sized for speech (no padding, nothing missing)?"),
    Rubric("emotional_appropriateness", "delivery", "Which reply's tone suits the caller's situation better?"),
    Rubric("reasoning", "conditional", "Which reply reasons its way to the answer more soundly?", gate="needs_reasoning"),
    Rubric("noise_robustness", "conditional", "Which reply copes better with the noisy or distant recording?",
           gate=DEGRADED),
    Rubric("multilingual", "conditional", "Which reply handles the other language better?", gate="multilingual"),
)
BY_NAME = {r.name: r for r in RUBRICS}
GATED = tuple(r for r in RUBRICS if r.gate is not None)
assert len(RUBRICS) == 12 and len(GATED) == 3 and {r.group for r in RUBRICS} == set(GROUPS)


class RatingError(ValueError):
    """A rating that cannot be stored: the message says which field and why."""


class AlreadyRated(RatingError):
    """A different answer to a (rater, pair, rubric) already answered: a rating is not changed."""


LATEST_ANSWER = 253_402_300_799.0
"""9999-12-31 23:59:59 UTC: an answer time past it (or before 1970, or not finite) is no time at all,
and JSON has no spelling for infinity."""


def check_answered_at(answered_at: float) -> None:
    """Raise RatingError unless `answered_at` is unix seconds between 1970 and 9999."""
    if not (math.isfinite(answered_at) and 0 <= answered_at <= LATEST_ANSWER):
        raise RatingError(f"answered_at must be unix seconds from 0 to {LATEST_ANSWER:.0f}, got {answered_at!r}")


def answered_text(answered_at: float) -> str:
    """An answer time as ISO 8601 UTC to the second (a stored time outside check_answered_at's range as is)."""
    try:
        return datetime.fromtimestamp(answered_at, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return repr(answered_at)


def prompt_tags(tags: Iterable[str], condition: str) -> frozenset[str]:
    """The tags a prompt's gates are read against: its own, plus DEGRADED when it is not clean."""
    return frozenset(tags) | ({DEGRADED} if condition != "clean" else set())


def pair_terms(cmos_shown: int, shown_first: str) -> int:
    """A CMOS answered in shown terms (positive: the first played better) in the pair's A/B terms."""
    if shown_first not in ("a", "b"):
        raise RatingError(f"shown_first must be 'a' or 'b', got {shown_first!r}")
    return cmos_shown if shown_first == "a" else -cmos_shown


def asked(tags: Iterable[str], condition: str) -> tuple[Rubric, ...]:
    """The rubrics asked on a prompt, in group order (what a rating page shows)."""
    have = prompt_tags(tags, condition)
    return tuple(sorted((r for r in RUBRICS if r.applies(have)), key=lambda r: GROUPS.index(r.group)))


def check_rating(rubric: str, cmos: object, tags: Iterable[str], condition: str) -> None:
    """Raise RatingError unless `cmos` is an integer in range for a rubric asked on this prompt."""
    if rubric not in BY_NAME:
        raise RatingError(f"rubric {rubric!r} is not one of {', '.join(BY_NAME)}")
    if isinstance(cmos, bool) or not isinstance(cmos, int) or not CMOS_MIN <= cmos <= CMOS_MAX:
        raise RatingError(f"cmos {cmos!r}: an integer from {CMOS_MIN} to {CMOS_MAX}")
    gate = BY_NAME[rubric].gate
    if gate is not None and gate not in prompt_tags(tags, condition):
        raise RatingError(f"rubric {rubric!r} is asked only on prompts tagged {gate!r}; this prompt is not "
                          "(a gated rubric is absent there, never zero)")
