"""Word error rate (METHOD "WER"): a normalizer chosen by the dataset's language, jiwer alignment,
pooled totals. English keeps Whisper's English normalizer; every other language uses Whisper's basic
normalizer; languages written without spaces between words are scored by characters (CER)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import version
from typing import Callable, Iterable

import jiwer
from whisper_normalizer.basic import BasicTextNormalizer
from whisper_normalizer.english import EnglishTextNormalizer

from voxwatch.foundation.languages import ENGLISH, checked, is_english, primary

NORMALIZER_VERSION = version("whisper-normalizer")
NORMALIZER_NAME = "whisper_normalizer.english.EnglishTextNormalizer"
"""English's normalizer (every row before METHOD v7 was scored with it)."""
BASIC_NAME = "whisper_normalizer.basic.BasicTextNormalizer(preserve_marks=True)"
"""Every other language's: Whisper's basic normalizer (lower case, bracketed asides dropped, symbols
and punctuation to spaces), keeping combining marks: its default erases the vowel signs and viramas
of Brahmic and Thai scripts (its own docstring warns of it); Latin accents are composed by NFKC
before the marks test, so French or Spanish text is the same either way."""
CHARACTERS_NAME = "whisper_normalizer.basic.BasicTextNormalizer(preserve_marks=True, split_letters=True)"
"""A character-scored language's: the same normalizer, then split into grapheme clusters (Whisper's
`split_letters`); spaces are dropped, so every grapheme is one token."""

CHARACTER_LANGUAGES = frozenset({"zh", "yue", "ja", "th", "lo", "km", "my", "bo", "dz"})
"""Languages written without spaces between words (Chinese and Cantonese, Japanese, Thai, Lao,
Khmer, Burmese, Tibetan, Dzongkha): a "word" there is whatever a tokenizer decides, so a word error
rate would measure the tokenizer. They are scored as character error rate, as Whisper's paper does."""

WORD, CHARACTER = "word", "character"


@dataclass(frozen=True)
class Scoring:
    """How one language is scored: the normalizer (its stored name and version) and the unit counted."""
    language: str
    normalizer: str
    normalizer_version: str
    unit: str  # WORD (WER) or CHARACTER (CER)
    normalize: Callable[[str], str]

    @property
    def error_rate_label(self) -> str:
        return "CER" if self.unit == CHARACTER else "WER"


@lru_cache(maxsize=None)
def _scoring(language: str) -> Scoring:
    if language == ENGLISH:
        return Scoring(ENGLISH, NORMALIZER_NAME, NORMALIZER_VERSION, WORD, EnglishTextNormalizer())
    if language in CHARACTER_LANGUAGES:
        return Scoring(language, CHARACTERS_NAME, NORMALIZER_VERSION, CHARACTER,
                       BasicTextNormalizer(preserve_marks=True, split_letters=True))
    return Scoring(language, BASIC_NAME, NORMALIZER_VERSION, WORD, BasicTextNormalizer(preserve_marks=True))


def scorer_for(language: str | None = ENGLISH) -> Scoring:
    """The one scoring of a language (a BCP 47 tag; None or "" is English, as every row before v7)."""
    if not language or is_english(language):
        return _scoring(ENGLISH)
    return _scoring(primary(checked(language)))


@dataclass(frozen=True)
class WordErrors:
    """S, D, I and N of one clip, counted in its language's unit: words, or characters (CER)."""
    substitutions: int
    deletions: int
    insertions: int
    ref_words: int  # N: reference words, or reference characters for a character-scored language

    @property
    def errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions


def normalize(text: str, language: str | None = ENGLISH) -> str:
    """The text as scored: the language's normalizer, one space between tokens."""
    return " ".join(scorer_for(language).normalize(text or "").split())


def word_errors(reference: str, hypothesis: str, language: str | None = ENGLISH) -> WordErrors:
    """S, D, I and N for one clip in its language's unit; empty reference or hypothesis never divides by zero."""
    ref, hyp = normalize(reference, language), normalize(hypothesis, language)
    ref_n, hyp_n = len(ref.split()), len(hyp.split())
    if ref_n == 0 or hyp_n == 0:
        return WordErrors(0, ref_n, hyp_n, ref_n)
    out = jiwer.process_words(ref, hyp)
    return WordErrors(out.substitutions, out.deletions, out.insertions, ref_n)


def pooled_wer(parts: Iterable[WordErrors]) -> float | None:
    """Sum of errors over sum of reference words (or characters): the headline WER (CER) of a set of clips."""
    errors = words = 0
    for p in parts:
        errors += p.errors
        words += p.ref_words
    return errors / words if words else None


def clip_wer(part: WordErrors) -> float | None:
    """Per-clip WER, for distributions only."""
    return part.errors / part.ref_words if part.ref_words else None
