"""Arrival times stamped where the bytes arrive, not where a task gets round to them.

With many streams in one worker, a message can sit for milliseconds between the socket read
and the moment its reader task runs; stamping it there would add the worker's own scheduling to
the vendor's latency. `StampedConnection` stamps each complete WebSocket message when its last
bytes are read off the socket (inside the event loop's read callback, before any task runs), and
`received` yields each message with that stamp, for `Timeline.mark(..., at_ns=...)`.

Where the kernel keeps the socket's receive time (voxwatch.foundation.kernel_time), the stamp is the
kernel's: a worker that was not running when the bytes came cannot make it late. A read that held
more than one message gives the earlier ones its stamp too, with the time the worker was not
watching before it (their `blind_ns`: they came in somewhere in it).
"""

from __future__ import annotations

import collections
import time
from typing import AsyncIterator, Callable

from websockets.asyncio.client import ClientConnection
from websockets.frames import DATA_OPCODES, Frame

from voxwatch.foundation import kernel_time
from voxwatch.foundation.events import Stamp, socket_writes


class StampedConnection(ClientConnection):
    clock: Callable[[], int] = time.perf_counter_ns

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.arrivals: collections.deque[Stamp] = collections.deque()
        self._completed = 0  # messages the read being handled completed
        self._ended_on_message = False  # ... and whether the last frame it held ended one

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        kernel_time.enable(transport)

    def data_received(self, data: bytes) -> None:
        self._completed, self._ended_on_message = 0, False
        super().data_received(data)  # parses the read and calls process_event for each frame, at once
        if self._completed:  # the read's last bytes ended the last message it completed: that one is exact
            last = kernel_time.read_stamp(self.transport, self.clock,
                                          last=self._ended_on_message and not self.protocol.reader.buffer)
            if self._completed > 1:
                self.arrivals.extend([kernel_time.read_stamp(self.transport, self.clock)] * (self._completed - 1))
            self.arrivals.append(last)

    def send_data(self) -> None:
        writes = socket_writes.get()
        if writes is None:
            return super().send_data()
        before = self.clock()
        super().send_data()
        writes.append(kernel_time.write_stamp(self.transport, before, self.clock()))

    def process_event(self, event) -> None:
        if isinstance(event, Frame):
            message = event.opcode in DATA_OPCODES and event.fin
            self._completed += message
            self._ended_on_message = message
        super().process_event(event)


def stamped_connection(clock: Callable[[], int]) -> type[StampedConnection]:
    """A StampedConnection class whose stamps come from `clock` (the timeline's clock)."""
    return type("StampedConnection", (StampedConnection,), {"clock": staticmethod(clock)})


async def received(ws: StampedConnection) -> AsyncIterator[tuple[str | bytes, int]]:
    """Each message with the time its last bytes arrived."""
    async for message in ws:
        yield message, ws.arrivals.popleft()
