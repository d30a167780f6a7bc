"""Back-pressure on a worker's own stalls: how many measurements it runs at once.

A row the clock witness excludes (metrics.witness: the worker could not observe around a timed event)
says the worker is overloaded: more streams at once would only stall it more, and every stalled
row is a measurement lost. So the limit halves on each stalled row and grows back by one after
CALM_ROWS rows in a row that were not, never above the configured most (additive increase,
multiplicative decrease). Every change is kept, for the run record's note.
"""

from __future__ import annotations

import asyncio

from voxwatch.foundation.observation import Observation
from voxwatch.metrics.witness import stalled_row

CALM_ROWS = 20


class Concurrency:
    """The number of measurements admitted at once, adapted to the rows' clock witness."""

    def __init__(self, most: int) -> None:
        self.most = self.limit = max(1, most)
        self.running = 0
        self.stalled = 0
        self.changes: list[tuple[int, int]] = []  # (from, to), in order
        self._calm = 0
        self._changed = asyncio.Condition()

    async def admit(self) -> None:
        """Wait for a free place under the limit, and take it."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.running < self.limit)
            self.running += 1

    async def done(self, row: Observation | None) -> None:
        """Free the place a measurement held, and adapt the limit to its row (None: it was interrupted)."""
        async with self._changed:
            self.running -= 1
            if row is None:
                pass
            elif stalled_row(row.status, row.reason):
                self.stalled += 1
                self._calm = 0
                self._set(max(1, self.limit // 2))
            elif row.status != "excluded":
                self._calm += 1
                if self._calm >= CALM_ROWS and self.limit < self.most:
                    self._calm = 0
                    self._set(self.limit + 1)
            self._changed.notify_all()

    def _set(self, limit: int) -> None:
        if limit != self.limit:
            self.changes.append((self.limit, limit))
            self.limit = limit

    def note(self) -> str | None:
        """What the run record says of it: None when nothing stalled and the limit never moved."""
        if not self.stalled and not self.changes:
            return None
        moves = ", ".join(f"{a}->{b}" for a, b in self.changes) or "unchanged"
        return (f"{self.stalled} row(s) excluded as the measuring worker's stall (clock witness); concurrency "
                f"{self.most} at most, adapted {moves}, ending at {self.limit}")
