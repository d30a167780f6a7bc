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


class _BusyPoll:
    """Keep the event loop polling its sockets instead of sleeping in the kernel while any
    measurement is on the clock.

    A loop that blocks in epoll is woken by the kernel when data arrives; on a virtual machine
    that wake-up can take a millisecond or more, and it lands in the arrival stamp. One task per
    loop that yields continuously keeps the loop's poll timeout at zero, at the cost of one busy
    core while measurements run. Nested and concurrent measurements share the one task.
    """

    def __init__(self) -> None:
        self._depth: dict[asyncio.AbstractEventLoop, int] = {}

    async def __aenter__(self) -> None:
        loop = asyncio.get_running_loop()
        self._depth[loop] = self._depth.get(loop, 0) + 1
        if self._depth[loop] == 1:
            loop.create_task(self._spin(loop))

    async def __aexit__(self, *exc) -> None:
        self._depth[asyncio.get_running_loop()] -= 1

    async def _spin(self, loop: asyncio.AbstractEventLoop) -> None:
        while self._depth.get(loop, 0) > 0:
            await asyncio.sleep(0)
        self._depth.pop(loop, None)


busy_poll = _BusyPoll()


class _OnTheClock:
    """Which measurements of each event loop are timing something now, so that work that times
    nothing (writing a call recording, transcribing with the local instrument) can wait for a
    moment when it delays no clock.

    Measured (benchmarks/soak.py, 64 S2S calls on 2 cores): recordings written while other calls
    were still speaking made their chunks late by 40-60 ms at p99, and the calls' V2V error
    followed; deferred until no call is on the clock, the pacing p99 fell to about 1 ms.
    """

    def __init__(self) -> None:
        self._depth: dict[asyncio.AbstractEventLoop, int] = {}
        self._quiet: dict[asyncio.AbstractEventLoop, asyncio.Event] = {}

    def _event(self, loop: asyncio.AbstractEventLoop) -> asyncio.Event:
        event = self._quiet.get(loop)
        if event is None:
            event = self._quiet[loop] = asyncio.Event()
            event.set()
        return event

    def __enter__(self) -> None:
        loop = asyncio.get_running_loop()
        self._depth[loop] = self._depth.get(loop, 0) + 1
        self._event(loop).clear()

    def __exit__(self, *exc) -> None:
        loop = asyncio.get_running_loop()
        self._depth[loop] -= 1
        if self._depth[loop] == 0:
            del self._depth[loop]
            self._quiet.pop(loop).set()

    async def quiet(self, most_s: float) -> bool:
        """Wait until no measurement of this loop is on the clock, or at most `most_s` (a worker
        that never stops measuring must still finish its rows); whether it was quiet."""
        event = self._event(asyncio.get_running_loop())
        try:
            await asyncio.wait_for(event.wait(), most_s)
        except (asyncio.TimeoutError, TimeoutError):
            return False
        return True


on_the_clock = _OnTheClock()
