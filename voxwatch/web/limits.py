"""How `voxwatch serve` meets load (docs/WEB.md "Under load"); light, so the CLI reads its defaults."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """How the server meets load; `voxwatch serve` sets the first three."""
    renders: int = 4  # pages rendered at once (2 cores: more only share the CPU)
    queue_wait_s: float = 2.0  # how long a render waits for a slot before its 503
    fresh_within_s: float = 1.0  # how stale the store's version may be: a write shows within this
    queue: int = 64  # renders waiting for a slot at most
    cache_entries: int = 512
    cache_bytes: int = 64 * 2**20
    max_age_s: float = 300.0  # a page of an unchanged store is recomputed after this (the windows slide)
