"""Arrival times stamped where the bytes arrive, not where a task gets round to them.

With many streams in one worker, a message can sit for milliseconds between the socket read
and the moment its reader task runs; stamping it there would add the worker's own scheduling to
the vendor's latency. `StampedConnection` stamps each complete WebSocket message when its last
bytes are read off the socket (inside the event loop's read callback, before any task runs), and
`received` yields each message with that stamp, for `Timeline.mark(..., at_ns=...)`.
"""

from __future__ import annotations

import collections
import time
from typing import AsyncIterator, Callable

from websockets.asyncio.client import ClientConnection
from websockets.frames import DATA_OPCODES, Frame


class StampedConnection(ClientConnection):
    clock: Callable[[], int] = time.perf_counter_ns

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.arrivals: collections.deque[int] = collections.deque()
        self._read_at = 0

    def data_received(self, data: bytes) -> None:
        self._read_at = self.clock()
        super().data_received(data)

    def process_event(self, event) -> None:
        if isinstance(event, Frame) and event.opcode in DATA_OPCODES and event.fin:
            self.arrivals.append(self._read_at)
        super().process_event(event)


def stamped_connection(clock: Callable[[], int]) -> type[StampedConnection]:
    """A StampedConnection class whose stamps come from `clock` (the timeline's clock)."""
    return type("StampedConnection", (StampedConnection,), {"clock": staticmethod(clock)})


async def received(ws: StampedConnection) -> AsyncIterator[tuple[str | bytes, int]]:
    """Each message with the time its last bytes arrived."""
    async for message in ws:
        yield message, ws.arrivals.popleft()
