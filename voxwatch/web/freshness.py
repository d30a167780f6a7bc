"""The store's version as the web app knows it: read at most once per `interval`, never on a page's thread.

A page is rendered once per version (web/cache.py), so the version must change whenever what a page
shows could: each source's version() says how it knows (Postgres: the aggregates and alerts tables'
row versions; SQLite: data_version). The registry's day is part of it, since a model's status is
read on that day. Reads run one at a time on a thread of their own, so neither a busy thread pool
nor a slow page holds them up, and each is bounded by `timeout`: the health check always answers.
"""

from __future__ import annotations

import asyncio
import math
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Hashable

from voxwatch.providers.registry import Registry

from voxwatch.web.source import Source, StoreUnavailable

TIMEOUT_S = 3.0


class Freshness:
    """The current version, or None while the store cannot be read (`problem` says why)."""

    def __init__(self, source: Source, registry: Registry, interval: float, timeout: float = TIMEOUT_S) -> None:
        self.interval, self.timeout = interval, timeout
        self._source, self._registry = source, registry
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="voxwatch-version")
        self._lock = asyncio.Lock()
        self._read_at = -math.inf  # when the last read started (monotonic)
        self._value: Hashable | None = None
        self.problem: StoreUnavailable | None = None
        self._ahead: set[asyncio.Future] = set()

    @property
    def latest(self) -> Hashable | None:
        """The version of the newest read (what a page rendering now was asked under, or newer)."""
        return self._value

    async def current(self) -> Hashable | None:
        """The version from a read that started at most `interval` before this call (interval 0: after
        it, so a write that finished before a request is always seen by it). Concurrent callers share
        a read; past half the interval the next read starts in the background, so under steady
        traffic no request waits for one."""
        asked = time.monotonic()
        if self._read_at >= asked - self.interval:
            if self._read_at < asked - self.interval / 2 and not self._lock.locked():
                ahead = asyncio.ensure_future(self._read_since(asked - self.interval / 2))
                self._ahead.add(ahead)  # the loop keeps only a weak reference
                ahead.add_done_callback(self._ahead.discard)
            return self._value
        return await self._read_since(asked - self.interval)

    async def _read_since(self, since: float) -> Hashable | None:
        """The version from a read that started at or after `since` (monotonic), reading it unless one did."""
        async with self._lock:
            if self._read_at >= since:  # a read that started in time finished while this one waited
                return self._value
            started = time.monotonic()
            try:
                async with asyncio.timeout(self.timeout):
                    self._value, self.problem = await asyncio.wrap_future(self._thread.submit(self._read))
            except TimeoutError:
                self._value, self.problem = None, StoreUnavailable(
                    "The store cannot be reached right now.", f"the store's version took over {self.timeout:g} s to read")
            self._read_at = started
            return self._value

    def _read(self) -> tuple[Hashable | None, StoreUnavailable | None]:
        try:
            return (self._source.version(), self._registry.day), None
        except StoreUnavailable as exc:
            return None, exc

    def close(self) -> None:
        self._thread.shutdown(wait=False, cancel_futures=True)
