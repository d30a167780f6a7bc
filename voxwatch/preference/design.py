"""Which outputs are compared: a balanced incomplete design over configurations and prompts.

Every unordered pair of configurations should meet about equally often overall, and every
configuration should appear on every prompt against some others (PREFERENCE.md "Data"). For each
prompt in turn, pairs are drawn greedily: a pair whose configurations are not yet on this prompt,
then the pair that has met least so far, ties broken by a seeded shuffle; the best of several such
draws (the most even meeting counts after it) is kept. So with `per_prompt` >= half the
configurations each one is on every prompt, and the meeting counts stay within one or two of
each other (tests/test_preference_pairs.py measures it). Which of the
two is A, and which side is played first, go to whichever configuration has been A (first) less
often, so position is balanced too. Pure and seeded: the same outputs and seed give the same pairs.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class Planned:
    prompt_id: str
    config_a: str
    config_b: str
    shown_first: str  # "a" or "b"


TRIES = 32
"""Greedy draws per prompt (each from its own shuffle); the one that leaves the meeting counts most
even is kept."""


def _draw(configs: list[str], count: int, met: Counter, rng: random.Random) -> list[tuple[str, str]]:
    """`count` pairs for one prompt: configurations not yet on it first, then the pairs met least."""
    candidates = list(itertools.combinations(configs, 2))
    rng.shuffle(candidates)
    on_prompt: Counter[str] = Counter()
    chosen = []
    for _ in range(min(count, len(candidates))):
        pair = min(candidates, key=lambda p: (on_prompt[p[0]] + on_prompt[p[1]], met[p]))
        candidates.remove(pair)
        on_prompt.update(pair)
        chosen.append(pair)
    return chosen


def _spread(met: Counter, chosen: list[tuple[str, str]]) -> tuple[int, int]:
    after = met + Counter(chosen)
    return max(after.values()), sum(v * v for v in after.values())


def assign(available: dict[str, list[str]], per_prompt: int, seed: int) -> list[Planned]:
    """`available`: prompt id -> the configurations with an ok output on it. Returns the pairs."""
    rng = random.Random(seed)
    met: Counter[tuple[str, str]] = Counter()
    as_a: Counter[str] = Counter()
    first: Counter[str] = Counter()
    planned: list[Planned] = []
    for prompt_id in sorted(available):
        configs = sorted(set(available[prompt_id]))
        draws = [_draw(configs, per_prompt, met, rng) for _ in range(TRIES)]
        for pair in min(draws, key=lambda d: _spread(met, d)):
            met[pair] += 1
            a, b = pair if (as_a[pair[0]], rng.random()) <= (as_a[pair[1]], 0.5) else pair[::-1]
            as_a[a] += 1
            shown = "a" if (first[a], rng.random()) <= (first[b], 0.5) else "b"
            first[a if shown == "a" else b] += 1
            planned.append(Planned(prompt_id, a, b, shown))
    return planned


def meetings(planned: list[Planned]) -> Counter[tuple[str, str]]:
    """How often each unordered pair of configurations met (what the balance is judged on)."""
    return Counter(tuple(sorted((p.config_a, p.config_b))) for p in planned)
