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

from voxwatch.metrics.series import MetricRow
from voxwatch.store.row_filter import RowFilter

from voxwatch.web.freshness import Freshness
from voxwatch.web.source import Source


class MemoSource:
    """A Source whose leaderboard(window) is kept per window and version; everything else passes through."""

    def __init__(self, source: Source, freshness: Freshness, max_age_s: float) -> None:
        self._source, self._freshness, self.max_age_s = source, freshness, max_age_s
        self._kept: dict[str, tuple[Hashable, float, list[MetricRow]]] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def __getattr__(self, name: str):
        return getattr(self._source, name)

    def leaderboard(self, window: str, only: RowFilter | None = None) -> list[MetricRow]:
        version = self._freshness.latest
        if version is None or only is not None:  # a board over some clips: computed for its page alone
            return self._source.leaderboard(window, only)
        with self._guard:
            lock = self._locks.setdefault(window, threading.Lock())
        with lock:  # one computation per window at a time: a second render waits for it, then shares it
            kept = self._kept.get(window)
            if kept is None or kept[0] != version or time.monotonic() - kept[1] > self.max_age_s:
                made = time.monotonic()
                kept = self._kept[window] = (version, made, self._source.leaderboard(window))
            return list(kept[2])
