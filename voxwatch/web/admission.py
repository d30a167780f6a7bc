"""Bounded admission for the requests that need rendering: overload is turned away, not queued.

At most `limit` renders run at once; a request that finds them all busy waits at most `wait_s`,
in a line of at most `queue`, and is otherwise answered 503 with Retry-After. So no request waits
longer than its client would, and the server has no backlog left when the clients have gone. Pages
already rendered (web/cache.py) and the health check never pass through here.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import AsyncIterator


class Admission:
    def __init__(self, limit: int, wait_s: float, queue: int) -> None:
        self.limit, self.wait_s, self.queue = limit, wait_s, queue
        self._slots = asyncio.Semaphore(limit)
        self._waiting = 0

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[bool]:
        """Yields True while holding a render slot, or False at once when the request is turned away."""
        admitted = await self.enter()
        try:
            yield admitted
        finally:
            if admitted:
                self.leave()

    def leave(self) -> None:
        """Give back the slot an `enter` that returned True took."""
        self._slots.release()

    async def enter(self) -> bool:
        """Take a render slot (True), or False when the request is turned away; True must be left."""
        if self._slots.locked() and self._waiting >= self.queue:
            return False
        self._waiting += 1
        try:
            async with asyncio.timeout(self.wait_s):
                await self._slots.acquire()
        except TimeoutError:
            return False
        finally:
            self._waiting -= 1
        return True
