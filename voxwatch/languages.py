"""A dataset's language (a BCP 47 tag such as "en", "en-GB", "es", "zh-Hans"), read one way everywhere:
the scorer (metrics.wer), the adapters that declare it to a vendor, and the boards that never pool two."""

from __future__ import annotations

ENGLISH = "en"


def primary(tag: str) -> str:
    """The primary language subtag, lower case ("es-MX" -> "es", "zh_Hans" -> "zh"): what vendors'
    ISO 639-1 `language` parameters take; a region or script subtag is not a different language."""
    return (tag or "").replace("_", "-").split("-", 1)[0].strip().lower()


def is_english(tag: str) -> bool:
    """"en" and every "en-*": the language every voxwatch adapter took before datasets had one."""
    return primary(tag) == ENGLISH
