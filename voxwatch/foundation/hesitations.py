"""Fillers and hesitations in a caller's words (a persona's `fillers`), before eSpeak NG speaks them.

A hesitation is one of: "um," or "uh," before a word, or a word said twice ("I, I want"), the
way callers stall while they think. Where they go and which kind each is are drawn from a seed
(the persona's, with the scenario pin and the turn id), so a turn always hesitates the same way.
Hesitations sit between words, never before the first: the turn still starts with its words.
"""

from __future__ import annotations

import random

KINDS = ("um", "uh", "repeat")


def with_fillers(text: str, count: int, seed: int) -> str:
    """`text` with `count` hesitations at distinct word boundaries (fewer when it has fewer words)."""
    words = text.split()
    if count <= 0 or len(words) < 2:
        return text
    rng = random.Random(seed)
    places = sorted(rng.sample(range(1, len(words)), min(count, len(words) - 1)))
    out: list[str] = []
    for i, word in enumerate(words):
        if places and i == places[0]:
            places.pop(0)
            kind = rng.choice(KINDS)
            out.append(f"{word.rstrip(',.?!;:')}," if kind == "repeat" else f"{kind},")
        out.append(word)
    return " ".join(out)
