"""Answer accuracy (METHOD "Answer accuracy (S2S single turn)"): did a spoken reply say the answer?

A question of the bundled set has a known short answer, written in several surface forms
("twelve", "12"). A reply is correct when one of them occurs in the instrument's transcript of the
reply, both compared on the entity canonical form (metrics.entities.canonical_tokens: Whisper's
English normalizer, number words as digits, digit runs joined, single letters joined), as adjacent
tokens in order within one clause of the reply, and the occurrence is not negated (the token before
it, articles skipped, is not "not" or "never": "it is not twelve" is wrong; the normalizer spells
"isn't" as "is not"). A clause ends at punctuation followed by a space (". , ; : ! ?"), so numbers in
two clauses stay two numbers ("Not thirteen: twelve." says twelve; the canonical form alone would
join "13 12" into one digit run), while "1,200" and "12.5" stay whole numbers.

So "Twelve.", "The answer is 12!" and "seven plus five is twelve" are correct for "twelve"; "112",
"12.5" and "1 2 0" are other numbers (digit runs are whole tokens), and "thirteen" is wrong. A reply
that names the answer and another candidate ("twelve or thirteen") counts as correct: the rule reads
whether the answer was said, not whether it was committed to.
"""

from __future__ import annotations

import re
from typing import Sequence

from voxwatch.metrics.entities import canonical_tokens

NEGATIONS = frozenset({"not", "never"})
"""Words that, just before an answer, say it is not the answer."""
SKIPPED_BEFORE = frozenset({"a", "an", "the"})
"""Articles between a negation and the answer ("not the Pacific")."""
_CLAUSE_END = re.compile(r"[.,;:!?]+(?=\s|$)")
"""Punctuation that ends a clause: followed by a space or the end (not the comma of "1,200")."""


def _negated(tokens: Sequence[str], at: int) -> bool:
    """Whether the occurrence starting at `at` follows a negation (articles in between skipped)."""
    i = at - 1
    while i >= 0 and tokens[i] in SKIPPED_BEFORE:
        i -= 1
    return i >= 0 and tokens[i] in NEGATIONS


def says(answer: str, tokens: Sequence[str], language: str | None = "en") -> bool:
    """Whether the canonical tokens of a reply say `answer` (one accepted form) un-negated."""
    wanted = canonical_tokens(answer, language)
    n = len(wanted)
    if n == 0:
        return False
    return any(list(tokens[i:i + n]) == wanted and not _negated(tokens, i) for i in range(len(tokens) - n + 1))


def clauses(text: str, language: str | None = "en") -> list[list[str]]:
    """The canonical tokens of each clause of a text (clauses split at _CLAUSE_END)."""
    return [tokens for part in _CLAUSE_END.split(text or "") if (tokens := canonical_tokens(part, language))]


def answer_correct(accepted: Sequence[str], reply: str, language: str | None = "en") -> bool:
    """Whether the reply transcript says any accepted form of the answer (the module's rule)."""
    parts = clauses(reply, language)
    return any(says(answer, tokens, language) for answer in accepted for tokens in parts)


def _unsigned(tokens: Sequence[str]) -> list[str]:
    """Tokens with a number's sign dropped: the normalizer reads "minus five" as "-5"."""
    return [t[1:] if t[:1] in "+-" and t[1:].isdigit() else t for t in tokens]


def checked_answers(accepted: object, question: str, language: str | None = "en") -> tuple[str, ...]:
    """A question's accepted answers as a tuple of non-empty strings that the question itself does not
    say (an echoed question is never a correct answer); ValueError says which answer is wrong and why."""
    if not isinstance(accepted, (list, tuple)) or not accepted:
        raise ValueError(f"answers: expected a non-empty list of strings, got {accepted!r}"[:200])
    out = []
    for i, answer in enumerate(accepted):
        if not isinstance(answer, str) or not canonical_tokens(answer, language):
            raise ValueError(f"answers[{i}]: {answer!r} is not an answer (empty once normalized)"[:200])
        if any(says(answer, _unsigned(tokens), language) for tokens in clauses(question, language)):
            raise ValueError(f"answers[{i}]: {answer!r} is said by the question {question!r} itself, so a reply "
                             "that echoes the question would count as correct"[:300])
        out.append(answer)
    return tuple(out)
