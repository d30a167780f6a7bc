"""Caller chunks as a busy worker writes them: each due every 20 ms, one written late and the ones
after it in a burst (1 ms apart) until they are due again, as the pacer (voxwatch/harness/pacer.py)
then writes them."""

from __future__ import annotations

from voxwatch.foundation.events import CHUNK_SENT, Event

MS = 1_000_000


def chunks_sent(t0_ns: int, sizes: list[int], late: tuple[int, float] | None = None,
                period_ms: int = 20) -> list[Event]:
    """CHUNK_SENT events of chunks of `sizes` samples due every `period_ms` from t0_ns; `late`: (k, ms),
    chunk k written that many ms after its deadline."""
    events: list[Event] = []
    written = None
    for k, n in enumerate(sizes):
        due = t0_ns + k * period_ms * MS
        written = due + int(late[1] * MS) if late and k == late[0] else \
            max(due, written + MS) if written is not None else due
        events.append(Event(CHUNK_SENT, written, n_samples=n, deadline_ns=due))
    return events


def sizes_of(n_samples: int, chunk: int = 320) -> list[int]:
    """The chunk sizes `n_samples` of audio is sent in (the last one short)."""
    return [min(chunk, n_samples - k) for k in range(0, n_samples, chunk)]
