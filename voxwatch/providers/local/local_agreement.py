"""LocalAgreement-2, the stable-partial policy of whisper_streaming (Machacek et al., 2023).

A streaming Whisper re-decodes a growing audio buffer, and each decode may rewrite the words it
heard last. A word is committed (stable, never retracted) once two successive hypotheses agree on
it: the committed text grows by the longest common prefix of the last two hypotheses, after the
words already committed are dropped from the new one (by time, then by an n-gram overlap check at
the seam). Pure data in, data out, so the rule is tested on hand-built hypotheses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SEAM_S = 0.1
"""A new word must start after the last committed word's end, less this much (timestamps jitter)."""

MAX_OVERLAP_WORDS = 5
"""Longest n-gram at the seam checked against the committed tail (whisper_streaming's value)."""


@dataclass(frozen=True)
class Word:
    start: float  # seconds from the start of the stream
    end: float
    text: str


def _key(text: str) -> str:
    return re.sub(r"[^\w']", "", text.lower())


@dataclass
class LocalAgreement:
    committed: list[Word] = field(default_factory=list)
    unstable: list[Word] = field(default_factory=list)  # the last hypothesis's words not yet agreed on

    @property
    def committed_end(self) -> float:
        return self.committed[-1].end if self.committed else 0.0

    def _fresh(self, hypothesis: list[Word]) -> list[Word]:
        """The hypothesis without what is already committed."""
        fresh = [w for w in hypothesis if w.start > self.committed_end - SEAM_S]
        if fresh and self.committed and abs(fresh[0].start - self.committed_end) < 1.0:
            for n in range(min(len(self.committed), len(fresh), MAX_OVERLAP_WORDS), 0, -1):
                if [_key(w.text) for w in self.committed[-n:]] == [_key(w.text) for w in fresh[:n]]:
                    return fresh[n:]
        return fresh

    def insert(self, hypothesis: list[Word]) -> list[Word]:
        """Take the newest decode of the buffer; return the words it commits (possibly none)."""
        fresh = self._fresh(hypothesis)
        agreed = 0
        while (agreed < min(len(fresh), len(self.unstable))
               and _key(fresh[agreed].text) == _key(self.unstable[agreed].text)):
            agreed += 1
        newly = fresh[:agreed]
        self.committed.extend(newly)
        self.unstable = fresh[agreed:]
        return newly

    def finish(self, hypothesis: list[Word]) -> list[Word]:
        """End of stream: the last decode has no successor to agree with, so all of it is taken."""
        self.committed.extend(self._fresh(hypothesis))
        self.unstable = []
        return self.committed

    def text(self) -> str:
        """Committed words, then the unstable tail: what a partial shows."""
        return " ".join(w.text.strip() for w in self.committed + self.unstable).strip()
