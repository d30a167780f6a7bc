"""Waiting for an absolute deadline on the monotonic clock, to well under a millisecond."""

from __future__ import annotations

import asyncio
import time
from typing import Callable

SPIN_NS = 1_500_000  # sleep until this close to the deadline, then yield to the loop until it passes


async def sleep_until(deadline_ns: int, clock: Callable[[], int] = time.perf_counter_ns) -> None:
    while True:
        left = deadline_ns - clock()
        if left <= 0:
            return
        await asyncio.sleep((left - SPIN_NS) / 1e9 if left > SPIN_NS else 0)
