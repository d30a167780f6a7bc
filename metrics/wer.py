"""Word error rate (METHOD "WER"): Whisper's English normalizer, jiwer alignment, pooled totals."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import version
from typing import Iterable

import jiwer
from whisper_normalizer.english import EnglishTextNormalizer

NORMALIZER_NAME = "whisper_normalizer.english.EnglishTextNormalizer"
NORMALIZER_VERSION = version("whisper-normalizer")

_normalize = EnglishTextNormalizer()


@dataclass(frozen=True)
class WordErrors:
    substitutions: int
    deletions: int
    insertions: int
    ref_words: int

    @property
    def errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions


def normalize(text: str) -> str:
    return " ".join(_normalize(text or "").split())


def word_errors(reference: str, hypothesis: str) -> WordErrors:
    """S, D, I and N for one clip; empty reference or hypothesis never divides by zero."""
    ref, hyp = normalize(reference), normalize(hypothesis)
    ref_n, hyp_n = len(ref.split()), len(hyp.split())
    if ref_n == 0 or hyp_n == 0:
        return WordErrors(0, ref_n, hyp_n, ref_n)
    out = jiwer.process_words(ref, hyp)
    return WordErrors(out.substitutions, out.deletions, out.insertions, ref_n)


def pooled_wer(parts: Iterable[WordErrors]) -> float | None:
    """Sum of errors over sum of reference words: the headline WER of a set of clips."""
    errors = words = 0
    for p in parts:
        errors += p.errors
        words += p.ref_words
    return errors / words if words else None


def clip_wer(part: WordErrors) -> float | None:
    """Per-clip WER, for distributions only."""
    return part.errors / part.ref_words if part.ref_words else None
