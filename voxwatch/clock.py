"""Waiting for an absolute deadline on the monotonic clock, to well under a millisecond."""

from __future__ import annotations

import asyncio
import gc
import time
from typing import Callable

SPIN_NS = 1_500_000  # sleep until this close to the deadline, then yield to the loop until it passes


async def sleep_until(deadline_ns: int, clock: Callable[[], int] = time.perf_counter_ns) -> None:
    while True:
        left = deadline_ns - clock()
        if left <= 0:
            return
        await asyncio.sleep((left - SPIN_NS) / 1e9 if left > SPIN_NS else 0)


class _GcPause:
    """Hold the cyclic garbage collector off while any measurement is on the clock.

    A full collection in a process that holds a loaded model takes milliseconds; inside a timed
    window it would land in a latency. Nested and concurrent measurements share one pause; the
    collector runs once the last of them ends.
    """

    def __init__(self) -> None:
        self._depth = 0
        self._was_enabled = False

    def __enter__(self) -> None:
        if self._depth == 0:
            self._was_enabled = gc.isenabled()
            gc.disable()
        self._depth += 1

    def __exit__(self, *exc) -> None:
        self._depth -= 1
        if self._depth == 0 and self._was_enabled:
            gc.enable()
            gc.collect(0)


gc_paused = _GcPause()
