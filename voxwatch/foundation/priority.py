"""The measuring thread's scheduling priority while it holds a clock.

On a busy host the kernel stamps a byte's arrival exactly, but a message that arrives while the
worker waits for a CPU shares its read, and its stamp, with what came after it: the witness then
excludes the row, or publishes it with that uncertainty. A thread that is woken ahead of the
host's CPU-bound work waits less. So while any measurement of an event loop is on the clock, the
loop's thread runs at a raised priority (Linux nice is per thread: `CLOCK_NICE`, -10 by default;
`[run] clock_nice`, 0 leaves it alone) and gets its own back as the last clock stops; threads the
loop starts meanwhile for work that times nothing take the process's priority back as they start
(`calm_thread`, the harness's executor initializer).

Measured (benchmarks/clock_truth.py, cartesia, openai-tts and openai-realtime-s2s, two CPU-bound
processes beside it on 2 cores, the benchmark and its emulators started at nice -10): the worst p99
clock error at 1 stream was 0.39 ms and at 16 streams 1.53 ms, against 5.0 and 3.9 ms at nice 0.

Raising a priority needs CAP_SYS_NICE (or RLIMIT_NICE): where it is refused, the refusal is kept
(`refused`, said in the run's note) and never tried again; lowering it back is always allowed.
"""

from __future__ import annotations

import os
import threading

CLOCK_NICE = -10

_base: int | None = None  # the process's priority before any raise (threads go back to it)
refused: str | None = None  # why the raise was refused, once it was


def _tid() -> int:
    return threading.get_native_id()


def _base_nice() -> int:
    global _base
    if _base is None:
        _base = os.getpriority(os.PRIO_PROCESS, os.getpid())
    return _base


def raise_thread() -> int | None:
    """Raise the calling thread to CLOCK_NICE below the process's priority; its priority before, to
    give back (None when nothing changed: off, already there, or refused)."""
    global refused
    if not CLOCK_NICE or refused is not None or not hasattr(os, "setpriority"):
        return None
    tid = _tid()
    before = os.getpriority(os.PRIO_PROCESS, tid)
    wanted = max(-20, _base_nice() + CLOCK_NICE)
    if before <= wanted:
        return None
    try:
        os.setpriority(os.PRIO_PROCESS, tid, wanted)
    except OSError as exc:
        refused = f"{exc.strerror or exc} (raising it needs CAP_SYS_NICE)"
        return None
    return before


def give_back(before: int | None) -> None:
    """The calling thread's priority back to what `raise_thread` found."""
    if before is not None:
        try:
            os.setpriority(os.PRIO_PROCESS, _tid(), before)
        except OSError:
            pass


def calm_thread() -> None:
    """A new thread (started by a raised one: it inherits that) takes the process's priority back."""
    if hasattr(os, "setpriority"):
        tid = _tid()
        if os.getpriority(os.PRIO_PROCESS, tid) < _base_nice():
            try:
                os.setpriority(os.PRIO_PROCESS, tid, _base_nice())
            except OSError:
                pass


def note() -> str | None:
    """What a run record says of it: None unless a raise was refused (or it is off)."""
    if refused is not None:
        return f"the measuring thread's priority was not raised while on the clock: {refused}"
    return None
