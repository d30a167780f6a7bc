"""Entity accuracy (METHOD "Entity accuracy"): did the transcript keep the order numbers, dates,
amounts and names a voice agent must act on?

WER counts "4 5 2 7 1" against "four five two seven one" as five errors; an agent reading either
gets the same order number. So an entity is compared on a canonical form instead of word by word:
both sides go through the WER normalizer (which already turns spelled numbers into digits), then
runs of digits are joined ("4 5 2 7 1" and "45271" agree), currency signs, decimal points and
ordinal suffixes dropped ("$12.50", "$12 50" and "1250" agree; "14th" is "14"), and runs of single
letters joined (a spelled "S M I T H" is "smith"). An entity is found when its canonical tokens
appear, in order and adjacent, among the hypothesis' canonical tokens; a date or a time when all
its tokens but fillers appear in any order ("fourteenth of March" and "March 14th" agree); an id
when its characters are those of adjacent hypothesis tokens ("ORD-24589" and "O R D 2 4 5 8 9");
a phone number when its digits are one digit run; an email when its words but "at" and "dot" do.
The entity error rate of a set of clips is missed entities over tagged entities, pooled like WER.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from voxwatch.metrics.wer import WORD, normalize, scorer_for

ENTITY_TYPES = ("number", "amount", "date", "time", "name", "address", "phone", "id", "email")
"""What a manifest may tag: digit strings (order, tracking, account numbers), currency amounts,
dates, times of day, people's names, addresses, phone numbers, alphanumeric ids ("ORD-24589") and
email addresses."""
UNORDERED_TYPES = frozenset({"date", "time"})
"""Types said in either order ("March 14th", "the 14th of March"): matched as a set of tokens."""
FILLERS = frozenset({"the", "of", "on", "at", "in"})
"""Words a date or time may be said with or without."""

_LONE_ONE = {"one": "1"}  # the normalizer spells every other digit as digits, but leaves a lone "one" (and 1) a word
_ORDINAL = re.compile(r"^(\d+)(?:st|nd|rd|th)$")
_MONEY = re.compile(r"^[$£€]?(\d+)(?:\.(\d+))?$")
_PERCENT = re.compile(r"^(\d+)%$")
_RANGE = re.compile(r"(?<!\d[ -])(?<![\d-])(\d+)-(\d+)(?![ -]?\d)")
"""Two numbers joined by a hyphen, "24-48": a range, read "24 to 48" (a chain, "555-123-4567", is not)."""
_DOTTED = re.compile(r"(?<![\d.])\d+(?:\.\d+){2,}(?![\d]|\.\d)")
"""Three or more digit groups joined by dots, "12.4.1": a version, read "12 dot 4 dot 1" (its dots
count: "12.41" is another number, where "$12.50" and "12 50" are one amount)."""
ID_SPOKEN = frozenset({"dash", "hyphen"})
"""Words an id may be read with between its characters ("E dash 1047")."""
EMAIL_SPOKEN = frozenset({"at", "dot"})
"""Words an email is read with in place of "@" and "." ("jane dot doe at example dot com")."""


@dataclass(frozen=True)
class EntityErrors:
    """One clip's tagged entities and how many of them the hypothesis missed."""
    total: int
    missed: int


def _tokens(word: str) -> list[str]:
    percent = _PERCENT.match(word)  # "30%" is "30 percent"
    return [percent.group(1), "percent"] if percent else [_token(word)]


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
    spoken = _DOTTED.sub(lambda m: m.group(0).replace(".", " dot "), _RANGE.sub(r"\1 to \2", text))
    for word in (t for w in normalize(spoken, language).split() for t in _tokens(w)):
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
    if entity_type == "id":
        return _id_found(entity_text, hypothesis, language)
    if entity_type == "phone":  # the normalizer drops a parenthesized "(555)" as an aside; its digits count
        digits = "".join(c for c in "".join(canonical_tokens(re.sub(r"[()]", " ", entity_text), language)) if c.isdigit())
        wanted = [digits] if digits else []
    else:
        wanted = canonical_tokens(entity_text, language)
    if entity_type in UNORDERED_TYPES:
        return set(wanted) - FILLERS <= set(hypothesis)
    if entity_type == "email":
        wanted = [t for t in wanted if t not in EMAIL_SPOKEN]
        hypothesis = [t for t in hypothesis if t not in EMAIL_SPOKEN]
    return _adjacent(wanted, hypothesis)


def _id_characters(tokens: Sequence[str]) -> str:
    """An id's characters as compared: letters and digits only, a letter O as the digit 0 (the
    normalizer reads a lone "o" as zero, and readers say "oh" for it)."""
    return "".join(c for t in tokens for c in t if c.isalnum()).replace("o", "0")


def _id_found(entity_text: str, hypothesis: Sequence[str], language: str | None) -> bool:
    """Whether the id's characters are exactly those of some run of adjacent hypothesis tokens."""
    wanted = _id_characters(canonical_tokens(entity_text, language))
    tokens = [_id_characters([t]) for t in hypothesis if t not in ID_SPOKEN]
    if not wanted:
        return False
    for i in range(len(tokens)):
        joined = ""
        for t in tokens[i:]:
            joined += t
            if joined == wanted:
                return True
            if not wanted.startswith(joined):
                break
    return False


def _adjacent(wanted: Sequence[str], hypothesis: Sequence[str]) -> bool:
    """Whether the wanted tokens appear in the hypothesis in order and adjacent."""
    n = len(wanted)
    return n > 0 and any(list(hypothesis[i:i + n]) == list(wanted) for i in range(len(hypothesis) - n + 1))


def entity_errors(entities: Iterable[Mapping[str, str]], hypothesis: str, language: str | None = "en") -> EntityErrors:
    """Tagged entities and those the hypothesis missed, for one clip in its dataset's language."""
    tokens = canonical_tokens(hypothesis, language)
    tagged = list(entities)
    return EntityErrors(len(tagged), sum(not found(e["type"], e["text"], tokens, language) for e in tagged))
