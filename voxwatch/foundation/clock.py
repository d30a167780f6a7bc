"""Waiting for an absolute deadline on the monotonic clock, to well under a millisecond."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import gc
import os
import time
from typing import Callable, Iterator

from voxwatch.foundation import priority

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


class _LoopWatch:
    """One event loop's witness: its selector's `select`, timed, with the loop thread's run delay."""

    SLACK_NS = 50_000  # the return from the kernel to the stamp after it

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        selector = getattr(loop, "_selector", None)  # a selector event loop's (the default on Linux)
        self.entered: int | None = None  # the latest select: when it was entered and returned, ...
        self.returned: int | None = None
        self.waited: int | None = None  # ... how long the thread waited for a CPU in it (None: not known)
        self.slept = False  # ... and whether it slept in the kernel (nothing was waiting when it entered)
        self.before: int | None = None  # when the select before it returned
        self._schedstat = _open_schedstat()
        if selector is not None and hasattr(selector, "select"):
            original = selector.select

            def select(timeout: float | None = None):
                entered = time.perf_counter_ns()
                waiting = original(0)  # what was already waiting: it came in before this select
                if waiting or timeout == 0:
                    self._selected(entered, time.perf_counter_ns(), None, slept=False)
                    return waiting
                delay = self._run_delay()
                try:
                    return original(timeout)
                finally:
                    self._selected(entered, time.perf_counter_ns(), delay, slept=True)

            selector.select = select

    def _run_delay(self) -> int | None:
        """The loop thread's time runnable but not running, so far (ns; None where the kernel does not say)."""
        if self._schedstat is None:
            return None
        try:
            return int(os.pread(self._schedstat, 64, 0).split()[1])
        except (OSError, ValueError, IndexError):
            return None

    def _selected(self, entered: int, returned: int, delay_before: int | None, slept: bool) -> None:
        delay_after = self._run_delay() if delay_before is not None else None
        self.waited = delay_after - delay_before if delay_after is not None and delay_before is not None else None
        self.slept = slept
        self.before, self.entered, self.returned = self.returned, entered, returned

    def since_ns(self, at_ns: int) -> int | None:
        """The earliest the bytes of a read stamped `at_ns`, handled after the latest select, can have come.

        Bytes that came in before the select was entered were waiting in it, and came in after the
        select before returned (the loop was running callbacks, or descheduled, in between: not
        watching). Otherwise, when the kernel had the loop asleep in the select, the first of them woke
        it, and the thread then waited for a CPU at most `waited`: they came no earlier than that (None
        where the kernel does not say how long the thread waited).
        """
        if self.returned is None:
            return None
        if self.slept and at_ns >= self.entered:
            return None if self.waited is None else max(self.entered, self.returned - self.waited - self.SLACK_NS)
        return self.before if self.before is not None else self.entered


def _open_schedstat() -> int | None:
    try:
        return os.open("/proc/thread-self/schedstat", os.O_RDONLY)
    except OSError:
        return None


class _Watch:
    """The witness on every clock: how long before a stamp its worker could not have seen the bytes.

    The event loop learns of bytes in `select`; a read callback handles what the last select reported.
    When the loop slept in the select, the kernel woke it as the first bytes came, and the thread then
    waited for a CPU for as long as its run delay grew (/proc/thread-self/schedstat): the bytes came
    no earlier than that. When the select found them already waiting, they came in while the loop was
    running callbacks, or descheduled, since the previous select: the worker was not watching then.
    A read's stamp (the kernel's receive time, or the worker's clock) minus that moment is how late it
    could be; on an idle worker, tens of microseconds.
    """

    def __init__(self) -> None:
        self._loops: dict[asyncio.AbstractEventLoop, _LoopWatch] = {}

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        """Watch this loop's selects (once per loop; measurements call it as they start)."""
        if loop not in self._loops:
            if len(self._loops) > 64:  # loops come and go with asyncio.run: forget the closed ones
                for old in [old for old in self._loops if old.is_closed()]:
                    del self._loops[old]
            self._loops[loop] = _LoopWatch(loop)

    def blind_ns(self, at_ns: int) -> int | None:
        """How long before `at_ns` (perf_counter ns: a stamp of a read the running loop is handling) the
        bytes could have come unseen; None when the loop is not watched."""
        try:
            watched = self._loops.get(asyncio.get_running_loop())
        except RuntimeError:
            return None
        since = watched.since_ns(at_ns) if watched is not None else None
        return None if since is None else max(0, at_ns - since)


watch = _Watch()


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
        self._raised: dict[asyncio.AbstractEventLoop, int | None] = {}  # the thread's priority before
        self._calmed: set[asyncio.AbstractEventLoop] = set()
        self._quiet: dict[asyncio.AbstractEventLoop, asyncio.Event] = {}
        self._scoring: dict[asyncio.AbstractEventLoop, int] = {}
        self._scored: dict[asyncio.AbstractEventLoop, asyncio.Event] = {}

    def _event(self, loop: asyncio.AbstractEventLoop) -> asyncio.Event:
        event = self._quiet.get(loop)
        if event is None:
            event = self._quiet[loop] = asyncio.Event()
            event.set()
        return event

    def __enter__(self) -> None:
        loop = asyncio.get_running_loop()
        watch.install(loop)
        if loop not in self._depth:  # the first clock: the loop's thread is woken ahead (foundation.priority)
            self._calm_executor(loop)
            self._raised[loop] = priority.raise_thread()
        self._depth[loop] = self._depth.get(loop, 0) + 1
        self._event(loop).clear()

    def __exit__(self, *exc) -> None:
        loop = asyncio.get_running_loop()
        self._depth[loop] -= 1
        if self._depth[loop] == 0:
            del self._depth[loop]
            priority.give_back(self._raised.pop(loop, None))
            self._quiet.pop(loop).set()

    def _calm_executor(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop's threads for work that times nothing start at the process's priority, not the
        raised one they would inherit (once per loop)."""
        if loop not in self._calmed and priority.CLOCK_NICE:
            if len(self._calmed) > 64:
                self._calmed = {old for old in self._calmed if not old.is_closed()}
            self._calmed.add(loop)
            loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(initializer=priority.calm_thread))

    @contextlib.contextmanager
    def scoring(self) -> Iterator[None]:
        """Work that times nothing is waiting or running (after a measurement's clocks stopped): a worker
        that admits measurements waits for `scored` before starting another, so none of it delays a clock."""
        loop = asyncio.get_running_loop()
        self._scoring[loop] = self._scoring.get(loop, 0) + 1
        self._scored.setdefault(loop, asyncio.Event()).clear()
        try:
            yield
        finally:
            self._scoring[loop] -= 1
            if not self._scoring[loop]:
                del self._scoring[loop]
                self._scored.pop(loop).set()

    async def scored(self) -> None:
        """Wait until no measurement of this loop has work left that times nothing."""
        event = self._scored.get(asyncio.get_running_loop())
        if event is not None:
            await event.wait()

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
