"""The HTTP emulators' send ledger, stamped immediately before the socket write.

An HTTP emulator hands a response to uvicorn (ASGI `send`), and uvicorn formats it with h11 and
writes it to its transport; a stamp taken in the handler would be early by that work, and by
the head written before the first body chunk. `record_at_write` notes what the task's next write
carries; `StampedH11Protocol` (uvicorn's h11 server protocol over a transport that stamps each
write) records it with the time just before the bytes go to the socket.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

_next_write: contextvars.ContextVar[tuple] = contextvars.ContextVar("next_write", default=())


def record_at_write(emulator, key: str, what: str) -> None:
    """Note that `what` for stream `key` goes out in this task's next write to the socket (ledger.py)."""
    records = getattr(emulator, "ledger", None)
    if records is not None:
        _next_write.set(_next_write.get() + ((records, key, what),))


class _StampingTransport:
    """A transport whose writes record the ledger entries noted for them, stamped just before writing."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport

    def write(self, data: bytes) -> None:
        noted = _next_write.get()
        at = time.perf_counter_ns()
        self._transport.write(data)
        if noted and data:
            _next_write.set(())
            for records, key, what in noted:
                records.append((key, what, at))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class StampedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, writing through a stamping transport."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_StampingTransport(transport))
