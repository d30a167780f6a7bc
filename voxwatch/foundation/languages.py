"""A dataset's language (a BCP 47 tag such as "en", "en-GB", "es", "zh-Hans"), read one way everywhere:
the scorer (metrics.wer), the adapters that declare it to a vendor, and the boards that never pool two."""

from __future__ import annotations

import re

ENGLISH = "en"
_TAG = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*")


def checked(tag: str) -> str:
    """The tag itself, or ValueError naming it when it is not shaped like a BCP 47 tag (a language
    subtag of 2-3 letters, then subtags): a typo in dataset.json must stop its load, not a run."""
    if not isinstance(tag, str) or not _TAG.fullmatch(tag):
        raise ValueError(f"language {tag!r} is not a BCP 47 tag (such as en, es-MX, zh-Hans)")
    return tag


def primary(tag: str) -> str:
    """The primary language subtag, lower case ("es-MX" -> "es", "zh_Hans" -> "zh"): what vendors'
    ISO 639-1 `language` parameters take; a region or script subtag is not a different language."""
    return (tag or "").replace("_", "-").split("-", 1)[0].strip().lower()


def is_english(tag: str) -> bool:
    """"en" and every "en-*": the language every voxwatch adapter took before datasets had one."""
    return primary(tag) == ENGLISH
