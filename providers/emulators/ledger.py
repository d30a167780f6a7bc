"""What an emulator actually sent, and when, for calibration.

An emulator schedules its sends on the injected truth, but its own event loop can wake late; a
calibration run that wants the error of voxwatch's clocks alone (transit plus the worker's
receive path) compares each arrival stamp with the matching send stamp. Both are on the
machine's monotonic clock (`time.perf_counter_ns`), which every process here shares.
"""

from __future__ import annotations

import time


def record(emulator, key: str, what: str) -> None:
    """Note that `what` (first_partial, final, first_audio, first_speech, ...) for stream `key` goes out now.

    Call it immediately before the send: the send writes to the socket before it first yields, and
    a task cancelled inside the send (a client that closes at once) would otherwise lose the record.
    """
    queue = getattr(emulator, "ledger", None)
    if queue is not None:
        queue.put((key, what, time.perf_counter_ns()))


def drain(queue) -> dict[tuple[str, str], int]:
    """Everything recorded so far: (stream key, what) -> send time (ns); the first record wins."""
    out: dict[tuple[str, str], int] = {}
    while not queue.empty():
        key, what, t = queue.get()
        out.setdefault((key, what), t)
    return out
