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


def panel_rank(family: str, utterance_id: str) -> bytes:
    """An utterance's place in its family's sentinel panel order: sha256 of "family:utterance_id", so
    an utterance added to the catalog displaces a panel member only if its own hash is smaller."""
    return hashlib.sha256(f"{family}:{utterance_id}".encode()).digest()


def panel(family: str, utterance_ids: list[str], k: int) -> list[str]:
    """The family's sentinel panel (METHOD "Sampling"): the k utterance ids of smallest panel_rank, in
    catalog order. Every tick measures them beside its random draw, so a window is compared with its
    baseline on the same utterances; pinned by hash, not by draw, it is the same on every host."""
    ids = sorted(set(utterance_ids), key=lambda u: panel_rank(family, u))[:max(k, 0)]
    return sorted(ids)
