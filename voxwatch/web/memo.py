"""The leaderboard of each window computed once per store version, for every page that starts from it.

The overview, the three boards, their downloads, the API's leaderboard and its models list all
begin with source.leaderboard(window): on SQLite a computation over every row of the window. A
store change makes each of those pages render again (web/cache.py); with this, they share one
computation instead of one each. Rows are tagged with the version read before they were computed,
so they are never older than their tag; like a page, they are computed again after `max_age_s`.
"""

from __future__ import annotations

import threading
import time
from typing import Hashable

from voxwatch.metrics.paired import Comparison
from voxwatch.metrics.series import MetricRow
from voxwatch.store.row_filter import RowFilter

from voxwatch.web.freshness import Freshness
from voxwatch.web.source import Source


class MemoSource:
    """A Source whose leaderboard(window) and comparisons(window) are kept per window and version;
    everything else passes through."""

    def __init__(self, source: Source, freshness: Freshness, max_age_s: float) -> None:
        self._source, self._freshness, self.max_age_s = source, freshness, max_age_s
        self._kept: dict[tuple[str, str], tuple[Hashable, float, list]] = {}
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._guard = threading.Lock()

    def __getattr__(self, name: str):
        return getattr(self._source, name)

    def leaderboard(self, window: str, only: RowFilter | None = None) -> list[MetricRow]:
        return self._kept_for("leaderboard", window, only)

    def comparisons(self, window: str, only: RowFilter | None = None) -> list[Comparison]:
        """The window's paired comparisons, kept as the leaderboard is (every ranked page needs them)."""
        return self._kept_for("comparisons", window, only)

    def _kept_for(self, name: str, window: str, only: RowFilter | None) -> list:
        read = getattr(self._source, name)
        version = self._freshness.latest
        if version is None or only is not None:  # a board over some clips: computed for its page alone
            return read(window, only)
        with self._guard:
            lock = self._locks.setdefault((name, window), threading.Lock())
        with lock:  # one computation per window at a time: a second render waits for it, then shares it
            kept = self._kept.get((name, window))
            if kept is None or kept[0] != version or time.monotonic() - kept[1] > self.max_age_s:
                made = time.monotonic()
                kept = self._kept[(name, window)] = (version, made, read(window))
            return list(kept[2])
