"""Seeded sampling (METHOD "Sampling"): one draw per family and tick, shared by every model.

Variants of one utterance share its utterance id, so drawing ids (not positions in a file) gives
the same utterances in the clean and every degraded set of a family: deltas stay paired.
"""

from __future__ import annotations

import hashlib

import numpy as np


def family_seed(run_seed: int, family: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{run_seed}:{family}".encode()).digest()[:8], "little")


def draw(run_seed: int, family: str, utterance_ids: list[str], n: int) -> list[str]:
    """n distinct utterance ids in catalog order; all of them when n is at least their count."""
    ids = sorted(set(utterance_ids))
    if n >= len(ids):
        return ids
    rng = np.random.default_rng(family_seed(run_seed, family))
    return [ids[i] for i in sorted(rng.choice(len(ids), size=n, replace=False))]
