"""Back-pressure on a worker's own stalls: how many measurements it runs at once.

A row the clock witness excludes (metrics.witness: the worker could not observe around a timed event)
says the worker is overloaded: more streams at once would only stall it more, and every stalled
row is a measurement lost. A row published with more clock uncertainty than AIM_MS says the same,
earlier: its latency may carry that much of the worker's own wait (METHOD "Clock witness": half the
bound), so the worker sheds streams before it has to exclude rows.

The limit starts at one and doubles after each limit's worth of calm rows in a row (a slow start,
as TCP's: the first wave of streams is the one no later halving can take back) until the first row
stalled or over the aim; from then on it halves on each such row and grows back by one after
CALM_ROWS calm rows in a row (additive increase, multiplicative decrease), never above the
configured most. The aim is a share of the bound, so a worker that sets its own bound moves its aim
with it. Every change is kept, for the run record's note.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from voxwatch.foundation.observation import Observation
from voxwatch.metrics import witness
from voxwatch.metrics.witness import METHOD_BOUND_MS, stalled_row

CALM_ROWS = 20
AIM_SHARE = 0.5  # of the witness's bound: the clock uncertainty a worker keeps its rows under by taking fewer
AIM_MS = AIM_SHARE * METHOD_BOUND_MS  # 1 ms at the method's 2 ms bound (the loaded clock error target)


def aim_for(bound_ms: float | None) -> float:
    """The aim for a worker's bound ([run] stall_bound_ms; None: the witness's, the method's unless lifted)."""
    return AIM_SHARE * (witness.STALL_BOUND_MS if bound_ms is None else bound_ms)


STALLED, UNEASY, CALM = "stalled", "over the aim", "calm"


def verdict(row: Observation | None, aim_ms: float = AIM_MS) -> str | None:
    """What a finished row says of its worker's load: STALLED (excluded by the clock witness), UNEASY
    (published with more clock uncertainty than the aim), CALM, or None (no row, or excluded for
    another reason: it says nothing of the worker)."""
    if row is None:
        return None
    if stalled_row(row.status, row.reason):
        return STALLED
    if row.status == "excluded":
        return None
    return UNEASY if (row.clock_uncertainty_ms or 0.0) > aim_ms else CALM


@dataclass(frozen=True)
class Pace:
    """The limit, the calm rows in a row, and whether it is still in its slow start."""
    limit: int = 1
    calm: int = 0
    probing: bool = True


def step(pace: Pace, most: int, said: str | None) -> Pace:
    """The next pace after a row's verdict (module docstring): halve on a stalled or uneasy row and
    end the slow start; after calm rows, double (slow start) or add one, never above `most`."""
    if said in (STALLED, UNEASY):
        return Pace(max(1, pace.limit // 2), 0, False)
    if said != CALM:
        return pace
    calm = pace.calm + 1
    if pace.limit < most and calm >= (pace.limit if pace.probing else CALM_ROWS):
        return Pace(min(most, 2 * pace.limit if pace.probing else pace.limit + 1), 0, pace.probing)
    return Pace(pace.limit, calm, pace.probing)


class Concurrency:
    """The number of measurements admitted at once, adapted to the rows' clock witness."""

    def __init__(self, most: int, aim_ms: float | None = None) -> None:
        self.most, self.pace = max(1, most), Pace()
        self.aim_ms = aim_for(None) if aim_ms is None else aim_ms
        self.running = 0
        self.stalled = 0
        self.uneasy = 0  # rows published with more clock uncertainty than the aim
        self.admitted = 0
        self._held = 0  # the running count summed at each admission (for the mean held)
        self.changes: list[tuple[int, int]] = []  # (from, to), in order
        self._changed = asyncio.Condition()

    async def admit(self) -> None:
        """Wait for a free place under the limit, and take it."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.running < self.limit)
            self.running += 1
            self.admitted += 1
            self._held += self.running

    async def done(self, row: Observation | None) -> None:
        """Free the place a measurement held, and adapt the limit to its row (None: it was interrupted)."""
        async with self._changed:
            self.running -= 1
            said = verdict(row, self.aim_ms)
            self.stalled += said == STALLED
            self.uneasy += said == UNEASY
            pace = step(self.pace, self.most, said)
            if pace.limit != self.limit:
                self.changes.append((self.limit, pace.limit))
            self.pace = pace
            self._changed.notify_all()

    @property
    def limit(self) -> int:
        return self.pace.limit

    @property
    def mean_held(self) -> float:
        """How many measurements ran at once, on average as each was admitted (itself included)."""
        return self._held / self.admitted if self.admitted else 0.0

    def note(self) -> str | None:
        """What the run record says of it: None when no row was stalled or over the aim (a slow start
        alone is how every run begins)."""
        if not self.stalled and not self.uneasy:
            return None
        moves = ", ".join(f"{a}->{b}" for a, b in self.changes) or "unchanged"
        uneasy = f", {self.uneasy} published over the {self.aim_ms:g} ms aim" if self.uneasy else ""
        return (f"{self.stalled} row(s) excluded as the measuring worker's stall (clock witness){uneasy}; "
                f"concurrency {self.most} at most, from 1: {moves}, ending at {self.limit}")
