"""The entity tagger (METHOD "Entity accuracy", "Tagging"): which spans of a text an agent must get
right, found by fixed rules, so an imported prompt or transcript has an entity error rate without
anyone tagging it by hand.

Rules run in a fixed order (emails, ids, phone numbers, amounts, times, dates, written numbers,
spelled digit strings); a span is kept when it overlaps no span an earlier rule kept. The output is
a function of the text alone: the same text always gives the same tags. Names and addresses have no
rule (no fixed pattern tells them apart); they stay hand-tagged. A change of any rule is a new
TAGGER_VERSION, recorded in every dataset whose tags it wrote.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TAGGER_NAME = "voxwatch.metrics.entity_tagger"
TAGGER_VERSION = "1"
TAGGER_ID = f"{TAGGER_NAME} {TAGGER_VERSION}"
"""What a dataset records as the author of the tags the tagger wrote (dataset.json extra)."""


def _any(words: str) -> str:
    """A group matching any of the space-separated words."""
    return "(?:" + "|".join(words.split()) + ")"


_HOURS = "one two three four five six seven eight nine ten eleven twelve"
_HOUR = _any(_HOURS)
_DIGIT = _any("zero one two three four five six seven eight nine")
_UNIT = _any(f"{_HOURS} thirteen fourteen fifteen sixteen seventeen eighteen nineteen")
_TENS = _any("twenty thirty forty fifty sixty seventy eighty ninety")
_NUMBER_WORD = rf"(?:{_UNIT}|{_TENS}|zero|hundred|thousand|million)\b"
_SPELLED = rf"{_NUMBER_WORD}(?:(?: and)?[ -]{_NUMBER_WORD})*"
"""A spelled number: "forty five", "one hundred and twenty", "two thousand": a run of number words,
each matched one way only (a run that could be split two ways backtracks exponentially)."""
_ORDINAL_UNIT = _any("first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
                     "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth")
_ORDINAL = rf"(?:(?:twenty|thirty)[- ]{_ORDINAL_UNIT}|twentieth|thirtieth|{_ORDINAL_UNIT})"
"""A spelled day of the month: "second", "fourteenth", "twenty first"."""
_DAY_DIGITS = r"\d{1,2}(?:st|nd|rd|th)?"
_MONTH = _any("January February March April May June July August September October November December")
_WEEKDAY = _any("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
_MERIDIEM = r"(?:[ap]\.m\.|[ap]m\b)"
_CLOCK = rf"\d{{1,2}}:\d{{2}}(?:\s?{_MERIDIEM})?|\d{{1,2}}\s?{_MERIDIEM}"
_DAY_OF_MONTH = (rf"{_MONTH} (?:the )?(?:{_DAY_DIGITS}|{_ORDINAL})\b(?:,? \d{{4}})?"
                 rf"|(?:{_DAY_DIGITS}|{_ORDINAL}) of {_MONTH}")


@dataclass(frozen=True)
class Rule:
    """One pattern and the entity type its matches are; `span` names the group tagged (0: all)."""
    name: str
    type: str
    pattern: re.Pattern[str]
    span: int | str = 0


def _rule(name: str, entity_type: str, pattern: str, span: int | str = 0, case: bool = False) -> Rule:
    return Rule(name, entity_type, re.compile(pattern, 0 if case else re.IGNORECASE), span)


RULES: tuple[Rule, ...] = (
    _rule("email", "email", r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"),
    _rule("id", "id", r"(?<![\w-])(?=[A-Z0-9-]*[0-9])(?=[A-Z0-9-]*[A-Z])[A-Z0-9]+(?:-[A-Z0-9]+)*(?![\w-])",
          case=True),
    _rule("phone", "phone", r"(?<![\w-])(?:\+?1[ .-]?)?(?:\(\d{3}\) ?|\d{3}[ .-])\d{3}[ .-]\d{4}(?![\w-])"),
    _rule("amount", "amount", r"[$£€]\d{1,3}(?:,\d{3})+(?:\.\d{2})?(?!\d|,\d)|[$£€]\d+(?:\.\d{2})?(?!\d|,\d)"
                              r"|\b\d+(?:\.\d{2})? (?:dollars?|euros?|pounds?|cents?)\b"),
    _rule("spelled amount", "amount", rf"\b{_SPELLED} (?:dollars?|euros?|pounds?)(?: and {_SPELLED} cents?)?\b"
                                      rf"|\b{_SPELLED} cents?\b"),
    _rule("clock time", "time", rf"(?<![\w:.]){_CLOCK}(?![\w:])|\b(?:noon|midnight)\b"),
    _rule("spelled time", "time", rf"\b(?:(?:half|quarter) (?:past|to) {_HOUR}"
                                  rf"|{_HOUR}(?: o'clock)? (?:in the|this) (?:morning|afternoon|evening|night)"
                                  rf"|{_HOUR} o'clock)\b"),
    _rule("hour after at", "time", rf"\bat ({_HOUR})(?=[.,?!;]|$| (?:on|today|tomorrow|tonight)\b)", span=1),
    _rule("end of a time range", "time", rf"\b(?:noon|midnight|{_CLOCK}) (?:and|to|until) ({_HOUR}|\d{{1,2}})\b"
                                         rf"(?![:\w]| ?{_MERIDIEM})", span=1),
    _rule("date", "date", rf"\b(?:{_WEEKDAY}(?:,? (?:{_DAY_OF_MONTH}|the (?:{_DAY_DIGITS}|{_ORDINAL})\b))?"
                          rf"|{_DAY_OF_MONTH})"
                          r"|(?<![\w/])\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})(?![\w/])|\b\d{4}-\d{2}-\d{2}\b"),
    _rule("ordinal day", "date", rf"\b\d{{1,2}}(?:st|nd|rd|th)\b|\bon the ({_ORDINAL})\b", span="day"),
    _rule("written number", "number", r"(?<![\w.,])\d+(?:[.,]\d+)*%?(?![\w])"),
    _rule("spelled digits", "number", rf"\b{_DIGIT}(?: {_DIGIT}){{2,}}\b"),
)
"""The rules in the order they claim text. "ordinal day"'s span is the ordinal alone ("on the
twenty first" tags "twenty first")."""


@dataclass(frozen=True)
class Tag:
    """One entity found: its type, its text (a span of the input) and where it starts and ends."""
    type: str
    text: str
    start: int
    end: int
    rule: str

    def as_record(self) -> dict[str, str]:
        """As a manifest holds it (METHOD "Entity accuracy": {"type", "text"})."""
        return {"type": self.type, "text": self.text}


def _bounds(rule: Rule, match: re.Match[str]) -> tuple[int, int]:
    if rule.span == "day":  # "on the twenty first": the ordinal; "24th": the whole match
        return match.span(1) if match.group(1) else match.span(0)
    return match.span(rule.span)  # type: ignore[arg-type]


def tag(text: str) -> list[Tag]:
    """Every entity the rules find in the text, in the order they appear."""
    kept: list[Tag] = []
    for rule in RULES:
        for match in rule.pattern.finditer(text):
            start, end = _bounds(rule, match)
            if end > start and not any(start < t.end and t.start < end for t in kept):
                kept.append(Tag(rule.type, text[start:end], start, end, rule.name))
    return sorted(kept, key=lambda t: t.start)


def tag_records(text: str) -> tuple[dict[str, str], ...]:
    """The text's entities as a manifest's `entities` list."""
    return tuple(t.as_record() for t in tag(text))
