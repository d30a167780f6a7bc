"""An HTTP/2 server connection (prior knowledge, no TLS) for emulators of vendors that speak HTTP/2
where uvicorn does not: a bidirectional stream (Bedrock's event streams, gRPC). Each request stream
gets the emulator's session coroutine (`serve(stream)`), which reads the body from `stream.body` as it
arrives and answers with `respond` / `send` / `trailers`. Served by emulators/server.py through the
emulator's `connection()`.
"""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions


class H2Stream:
    """One request stream: its headers, its body's bytes in (`body`: (bytes, arrival ns), None at the
    end), its response out."""

    def __init__(self, server: "H2Connection", stream_id: int, headers: dict[str, str]) -> None:
        self.server, self.stream_id, self.headers = server, stream_id, headers
        self.body: asyncio.Queue = asyncio.Queue()
        self.body_ended = False  # the client ended its request (or reset it)
        self.task = asyncio.create_task(self.run())

    async def respond(self, status: int, headers: dict[str, str], body: bytes = b"", end: bool | None = None) -> None:
        """The response head (and a whole body); `end` ends the stream with the head (default: a refusal
        without a body)."""
        end = (not body and status != 200) if end is None else end
        self.server.conn.send_headers(self.stream_id, [(":status", str(status)), *headers.items()], end_stream=end)
        if body:
            await self.send(body, end=True)
        self.server.flush()

    async def send(self, data: bytes, end: bool = False) -> None:
        conn = self.server.conn
        while data:
            window = min(conn.local_flow_control_window(self.stream_id), conn.max_outbound_frame_size)
            if window <= 0:
                await self.server.window_opened()
                continue
            conn.send_data(self.stream_id, data[:window])
            data = data[window:]
        if end:
            conn.end_stream(self.stream_id)
        self.server.flush()

    def trailers(self, headers: dict[str, str]) -> None:
        """End the stream with trailers (gRPC's status)."""
        self.server.conn.send_headers(self.stream_id, list(headers.items()), end_stream=True)
        self.server.flush()

    def stop_request(self) -> None:
        """After a complete response: RST_STREAM NO_ERROR if the request is still open, asking the client to
        send no more of it (RFC 9113, 8.1), as grpc-go's server does after its status (internal/transport/
        http2_server.go, WriteStatus: "Send a RST_STREAM after the trailers if the client has not already
        half-closed")."""
        if not self.body_ended:
            self.server.conn.reset_stream(self.stream_id, h2.errors.ErrorCodes.NO_ERROR)
            self.server.flush()

    async def run(self) -> None:
        try:
            await self.server.serve(self)
        except (h2.exceptions.ProtocolError, ConnectionError):
            pass  # the client went away


class H2Connection(asyncio.Protocol):
    """One HTTP/2 connection (prior knowledge) to an emulator; `serve` runs each request stream."""

    def __init__(self, emulator, serve: Callable[[H2Stream], Awaitable[None]]) -> None:
        self.emulator, self.serve = emulator, serve
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.streams: dict[int, H2Stream] = {}
        self._window = asyncio.Event()

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.conn.initiate_connection()
        self.flush()

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data and not self.transport.is_closing():
            self.transport.write(data)

    def drop(self) -> None:
        self.transport.abort()

    async def window_opened(self) -> None:
        self._window.clear()
        await self._window.wait()

    def data_received(self, data: bytes) -> None:
        arrived = time.perf_counter_ns()
        try:
            events = self.conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            return self.drop()
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                self.streams[event.stream_id] = H2Stream(self, event.stream_id, dict(event.headers))
            elif isinstance(event, h2.events.DataReceived):
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                if event.stream_id in self.streams:
                    self.streams[event.stream_id].body.put_nowait((event.data, arrived))
            elif isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)):
                if event.stream_id in self.streams:
                    self.streams[event.stream_id].body_ended = True
                    self.streams[event.stream_id].body.put_nowait(None)
            elif isinstance(event, h2.events.WindowUpdated):
                self._window.set()
        self.flush()

    def connection_lost(self, exc) -> None:
        for stream in self.streams.values():  # what came before the end is still read
            stream.body.put_nowait(None)
        self._window.set()
