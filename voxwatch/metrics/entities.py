"""Entity accuracy (METHOD "Entity accuracy"): did the transcript keep the order numbers, dates,
amounts and names a voice agent must act on?

WER counts "4 5 2 7 1" against "four five two seven one" as five errors; an agent reading either
gets the same order number. So an entity is compared on a canonical form instead of word by word:
both sides go through the WER normalizer (which already turns spelled numbers into digits), then
runs of digits are joined ("4 5 2 7 1" and "45271" agree), currency signs, decimal points and
ordinal suffixes dropped ("$12.50", "$12 50" and "1250" agree; "14th" is "14"), and runs of single
letters joined (a spelled "S M I T H" is "smith"). An entity is found when its canonical tokens
appear, in order and adjacent, among the hypothesis' canonical tokens; a date or a time when all
its tokens but fillers appear in any order ("fourteenth of March" and "March 14th" agree).
The entity error rate of a set of clips is missed entities over tagged entities, pooled like WER.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from voxwatch.metrics.wer import WORD, normalize, scorer_for

ENTITY_TYPES = ("number", "amount", "date", "time", "name", "address")
"""What a manifest may tag: digit strings (order, tracking, account numbers), currency amounts,
dates, times of day, people's names and addresses."""
UNORDERED_TYPES = frozenset({"date", "time"})
"""Types said in either order ("March 14th", "the 14th of March"): matched as a set of tokens."""
FILLERS = frozenset({"the", "of", "on", "at", "in"})
"""Words a date or time may be said with or without."""

_LONE_ONE = {"one": "1"}  # the normalizer spells every other digit as digits, but leaves a lone "one" (and 1) a word
_ORDINAL = re.compile(r"^(\d+)(?:st|nd|rd|th)$")
_MONEY = re.compile(r"^[$£€]?(\d+)(?:\.(\d+))?$")


@dataclass(frozen=True)
class EntityErrors:
    """One clip's tagged entities and how many of them the hypothesis missed."""
    total: int
    missed: int


def _token(word: str) -> str:
    word = _LONE_ONE.get(word, word)
    ordinal = _ORDINAL.match(word)
    if ordinal:
        return ordinal.group(1)
    money = _MONEY.match(word)
    if money:
        whole, cents = money.groups()
        return whole + (cents if cents and int(cents) else "")
    return word


def canonical_tokens(text: str, language: str | None = "en") -> list[str]:
    """The text as compared: normalized (the language's WER normalizer), digit runs joined,
    single-letter runs joined. The English rules (spelled numbers, "$12.50") apply as written; in
    another language the basic normalizer keeps digits as digits and words as words."""
    out: list[str] = []
    spelling = False  # is the last token a run of single letters?
    by_words = scorer_for(language).unit == WORD  # by characters every token is a single letter
    for word in (_token(w) for w in normalize(text, language).split()):
        letter = by_words and len(word) == 1 and word.isalpha()
        if word.isdigit() and out and out[-1].isdigit():
            out[-1] += word
        elif letter and spelling:
            out[-1] += word
        else:
            out.append(word)
        spelling = letter
    return out


def found(entity_type: str, entity_text: str, hypothesis: Sequence[str], language: str | None = "en") -> bool:
    """Whether an entity (its type and reference text) is in the hypothesis' canonical tokens."""
    wanted = canonical_tokens(entity_text, language)
    if entity_type in UNORDERED_TYPES:
        return set(wanted) - FILLERS <= set(hypothesis)
    n = len(wanted)
    return n > 0 and any(list(hypothesis[i:i + n]) == wanted for i in range(len(hypothesis) - n + 1))


def entity_errors(entities: Iterable[Mapping[str, str]], hypothesis: str, language: str | None = "en") -> EntityErrors:
    """Tagged entities and those the hypothesis missed, for one clip in its dataset's language."""
    tokens = canonical_tokens(hypothesis, language)
    tagged = list(entities)
    return EntityErrors(len(tagged), sum(not found(e["type"], e["text"], tokens, language) for e in tagged))
