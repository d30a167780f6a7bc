"""One HTTP/2 request whose body is written while its response is read: the full-duplex stream of AWS's
bidirectional APIs (Bedrock's InvokeModelWithBidirectionalStream), which httpx cannot carry (httpcore
sends a request's whole body before it reads the response).

h2 (the HTTP/2 state machine httpx uses) over a `socket_stream.StampedStream`, so every body chunk of the
response comes with the stamp of the socket read that completed it (`received`). TLS negotiates `h2`
by ALPN; a plain `http://` URL (a loopback emulator) speaks HTTP/2 with prior knowledge (RFC 9113, 3.3).
Everything that breaks the connection is a ProviderError (`disconnected`), never a library's exception.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from typing import AsyncIterator, Callable
from urllib.parse import urlsplit

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import httpcore

from voxwatch.providers.base import ProviderError
from voxwatch.providers.session.socket_stream import StampedBackend, StampedStream

READ = 1 << 16
CONNECT_TIMEOUT_S = 30.0


class H2Duplex:
    """The request's stream: `head()` for the response status and headers, `send` / `end` for the body,
    `received()` for the response body's chunks with their arrival stamps, `trailers` after its end."""

    def __init__(self, stream: StampedStream, conn: h2.connection.H2Connection, stream_id: int, vendor: str) -> None:
        self._stream, self._conn, self.stream_id, self.vendor = stream, conn, stream_id, vendor
        self._head: asyncio.Future = asyncio.get_running_loop().create_future()
        self._chunks: asyncio.Queue = asyncio.Queue()  # (bytes, stamp), then None at the end
        self._window = asyncio.Event()
        self._failure: ProviderError | None = None
        self.trailers: dict[str, str] = {}  # the response's trailers (gRPC's status), once the body has ended
        self._ended = False  # the response is complete
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, url: str, headers: list[tuple[str, str]], vendor: str,
                   clock: Callable[[], int] = time.perf_counter_ns) -> "H2Duplex":
        """POST `url` with `headers` (the pseudo-headers are added here); the body stays open."""
        parts = urlsplit(url)
        tls = parts.scheme == "https"
        try:
            stream = await StampedBackend(clock).connect_tcp(parts.hostname, parts.port or (443 if tls else 80),
                                                             timeout=CONNECT_TIMEOUT_S)
            if tls:
                context = ssl.create_default_context()
                context.set_alpn_protocols(["h2"])
                await stream.start_tls(context, parts.hostname, timeout=CONNECT_TIMEOUT_S)
        except httpcore.NetworkError as exc:
            raise ProviderError(f"cannot connect to {vendor}: {type(exc).__name__}", "disconnected") from None
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        conn.initiate_connection()
        stream_id = conn.get_next_available_stream_id()
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        conn.send_headers(stream_id, [(":method", "POST"), (":scheme", parts.scheme), (":authority", parts.netloc),
                                      (":path", path), *headers])
        duplex = cls(stream, conn, stream_id, vendor)
        await duplex._flush()
        return duplex

    def _broken(self, why: str) -> ProviderError:
        return ProviderError(f"{self.vendor} dropped the connection ({why})", "disconnected")

    async def _flush(self) -> None:
        data = self._conn.data_to_send()
        if data:
            try:
                await self._stream.write(data)
            except httpcore.NetworkError as exc:
                raise self._failure or self._broken(type(exc).__name__) from None

    def _fail(self, failure: ProviderError) -> None:
        if self._failure is None:
            self._failure = failure
        if not self._head.done():
            self._head.set_exception(failure)
        self._chunks.put_nowait(None)
        self._window.set()

    async def _read(self) -> None:
        try:
            while True:
                data = await self._stream.read(READ)
                at = self._stream.read_ns
                if not data:
                    return self._fail(self._broken("the server closed it"))
                for event in self._conn.receive_data(data):
                    self._on(event, at)
                await self._flush()
        except (httpcore.NetworkError, h2.exceptions.ProtocolError) as exc:
            self._fail(self._broken(type(exc).__name__))

    def _on(self, event, at: int) -> None:
        if getattr(event, "stream_id", self.stream_id) != self.stream_id and not isinstance(event, h2.events.WindowUpdated):
            return
        if isinstance(event, h2.events.ResponseReceived) and not self._head.done():
            self._head.set_result((int(dict(event.headers)[":status"]), dict(event.headers)))
        elif isinstance(event, h2.events.DataReceived):
            self._conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            if event.data:
                self._chunks.put_nowait((event.data, at))
        elif isinstance(event, h2.events.TrailersReceived):
            self.trailers = dict(event.headers)
        elif isinstance(event, h2.events.StreamEnded):
            self._ended = True
            self._chunks.put_nowait(None)
        elif isinstance(event, h2.events.StreamReset):
            if self._ended and event.error_code == h2.errors.ErrorCodes.NO_ERROR:
                return  # a complete response, and the server asks the rest of the request not be sent (RFC 9113, 8.1)
            self._fail(self._broken(f"stream reset, error code {event.error_code}"))
        elif isinstance(event, h2.events.ConnectionTerminated):
            self._fail(self._broken(f"GOAWAY, error code {event.error_code}"))
        elif isinstance(event, h2.events.WindowUpdated):
            self._window.set()

    async def head(self) -> tuple[int, dict[str, str]]:
        """The response's status and headers."""
        return await asyncio.shield(self._head)

    async def send(self, data: bytes) -> None:
        """Write `data` to the request body, as the peer's flow-control window lets it go."""
        while data:
            if self._failure is not None:
                raise self._failure
            window = min(self._conn.local_flow_control_window(self.stream_id), self._conn.max_outbound_frame_size)
            if window <= 0:
                self._window.clear()
                await self._window.wait()
                continue
            try:
                self._conn.send_data(self.stream_id, data[:window])
            except h2.exceptions.ProtocolError as exc:  # the stream was closed under us
                raise self._failure or self._broken(type(exc).__name__) from None
            data = data[window:]
            await self._flush()

    async def end(self) -> None:
        """End the request body."""
        if self._failure is None:
            try:
                self._conn.end_stream(self.stream_id)
            except h2.exceptions.ProtocolError:
                return
            await self._flush()

    async def received(self) -> AsyncIterator[tuple[bytes, int]]:
        """The response body's chunks with the stamp of the read that completed each, to its end; a
        broken connection raises its ProviderError."""
        while True:
            item = await self._chunks.get()
            if item is None:
                if self._failure is not None:
                    raise self._failure
                return
            yield item

    async def aclose(self) -> None:
        self._reader.cancel()
        await self._stream.aclose()
