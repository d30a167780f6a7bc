"""An httpcore network backend whose connections stamp every socket read and write.

httpx reads through httpcore, which reads through a network backend; the default one (anyio)
only reads the socket while a task waits in `receive()` and wakes that task a loop turn later,
and httpx then hands a body chunk over after h11/h2 parsing and several layers of async
generators. A stamp taken where the adapter gets the chunk carries all of that (0.2-0.6 ms on an
idle 2-core VM, the most for a chunk read with the response head, plus whatever the worker's other
tasks add). This backend keeps reading, stamps each read in the event loop's read callback (as
`stamped.StampedConnection` does for WebSockets) and each write just before it is handed to the
transport, and keeps the stamps with the bytes, so `stamped_http` can give every response chunk
the read that brought it.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import socket
import ssl
import time
from typing import Any, Callable, Iterable

import httpcore

from voxwatch.foundation import kernel_time
from voxwatch.providers.session.h2_frames import FrameStamps

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
HIGH_WATER = 1 << 20  # stop reading the socket with this much unread (the server then waits for us)

Clock = Callable[[], int]


class Exchange:
    """The stamps of one request: when its first bytes were written, when the response head and the
    latest body chunk handed over were read (ns, on the backend's clock)."""

    __slots__ = ("sent_ns", "arrived_ns", "body_ns")

    def __init__(self) -> None:
        self.sent_ns: int | None = None
        self.arrived_ns: int | None = None
        self.body_ns: int | None = None


writing: contextvars.ContextVar[Exchange | None] = contextvars.ContextVar("writing", default=None)
"""The exchange whose request the current task is writing (set by the transport around the request)."""


class _Reader(asyncio.Protocol):
    """Keeps every read with its stamp, taken in the read callback, until the stream asks for it."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.reads: collections.deque[tuple[bytes, int]] = collections.deque()
        self.unread = 0
        self.eof = False
        self.error: BaseException | None = None
        self.closed = False
        self.paused = False
        self.transport: asyncio.Transport | None = None
        self._readable: asyncio.Future | None = None
        self._writable = asyncio.Event()
        self._writable.set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        kernel_time.enable(transport)

    def data_received(self, data: bytes) -> None:
        # the kernel's receive time where kept; the bytes of a read may have come in over the time the
        # worker was not watching before it (HTTP's messages are not known here): its blind time says so
        self.reads.append((data, kernel_time.read_stamp(self.transport, self.clock)))
        self.unread += len(data)
        if self.unread > HIGH_WATER and not self.paused:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> None:
        self.eof = True
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed, self.error = True, exc
        self._writable.set()
        self._wake()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def _wake(self) -> None:
        if self._readable is not None and not self._readable.done():
            self._readable.set_result(None)

    async def readable(self) -> None:
        if not self.reads and not self.eof and not self.closed:
            self._readable = asyncio.get_running_loop().create_future()
            await self._readable

    async def writable(self) -> None:
        await self._writable.wait()


class StampedStream(httpcore.AsyncNetworkStream):
    """One connection. `read_ns`: when the bytes last returned by `read` came off the socket. Once
    the connection speaks HTTP/2, `frames` and `sent_frames` keep per-stream stamps of what was read
    and written (a stream's request head can go out in another task's write)."""

    def __init__(self, reader: _Reader) -> None:
        self._reader = reader
        self.read_ns: int | None = None
        self.frames: FrameStamps | None = None
        self.sent_frames: FrameStamps | None = None

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """The next socket read (one read at a time, so `read_ns` is exact for every byte returned)."""
        reader = self._reader
        try:
            async with asyncio.timeout(timeout):
                await reader.readable()
        except TimeoutError:
            raise httpcore.ReadTimeout("timed out reading") from None
        if not reader.reads:
            if reader.error is not None:
                raise httpcore.ReadError(str(reader.error) or type(reader.error).__name__)
            return b""
        data, at = reader.reads.popleft()
        if len(data) > max_bytes:
            data, rest = data[:max_bytes], data[max_bytes:]
            reader.reads.appendleft((rest, at))
        reader.unread -= len(data)
        if reader.paused and reader.unread <= HIGH_WATER // 2:
            reader.paused = False
            reader.transport.resume_reading()
        self.read_ns = at
        if self.frames is not None:
            self.frames.feed(data, at)
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        reader = self._reader
        if reader.closed or reader.transport.is_closing():
            raise httpcore.WriteError("the connection is closed")
        at = reader.clock()
        reader.transport.write(buffer)
        at = kernel_time.write_stamp(reader.transport, at, reader.clock())  # out somewhere in the write, or the kernel's
        if self.frames is None and buffer.startswith(H2_PREFACE):
            self.frames, self.sent_frames = FrameStamps(), FrameStamps()
            buffer = buffer[len(H2_PREFACE):]
        if self.sent_frames is not None:
            self.sent_frames.feed(buffer, at)
        exchange = writing.get()
        if exchange is not None and exchange.sent_ns is None:
            exchange.sent_ns = at
        try:
            async with asyncio.timeout(timeout):
                await reader.writable()
        except TimeoutError:
            raise httpcore.WriteTimeout("timed out writing") from None
        if reader.closed and reader.error is not None:
            raise httpcore.WriteError(str(reader.error) or type(reader.error).__name__)

    async def aclose(self) -> None:
        if self._reader.transport is not None:
            self._reader.transport.close()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> "StampedStream":
        """TLS on this connection: the same reader then gets the decrypted bytes, in the same read callback."""
        reader = self._reader
        try:
            async with asyncio.timeout(timeout):
                tls = await asyncio.get_running_loop().start_tls(reader.transport, reader, ssl_context,
                                                                 server_hostname=server_hostname)
        except TimeoutError:
            await self.aclose()
            raise httpcore.ConnectTimeout("timed out in the TLS handshake") from None
        except (OSError, ssl.SSLError) as exc:
            await self.aclose()
            raise httpcore.ConnectError(f"TLS handshake failed: {exc}") from None
        reader.transport = tls
        return self

    def get_extra_info(self, info: str) -> Any:
        transport = self._reader.transport
        if info == "is_readable":  # httpcore: an idle connection with bytes or EOF waiting is dead
            return bool(self._reader.reads) or self._reader.eof or self._reader.closed
        name = {"ssl_object": "ssl_object", "client_addr": "sockname", "server_addr": "peername",
                "socket": "socket"}.get(info)
        return transport.get_extra_info(name) if name is not None and transport is not None else None


class StampedBackend(httpcore.AsyncNetworkBackend):
    """asyncio connections whose reads and writes are stamped on `clock`."""

    def __init__(self, clock: Clock = time.perf_counter_ns) -> None:
        self.clock = clock

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> StampedStream:
        local = (local_address, 0) if local_address else None
        return await self._connect(lambda reader: asyncio.get_running_loop().create_connection(
            lambda: reader, host, port, local_addr=local), timeout, socket_options)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None) -> StampedStream:
        return await self._connect(lambda reader: asyncio.get_running_loop().create_unix_connection(
            lambda: reader, path), timeout, socket_options)

    async def _connect(self, open_with, timeout: float | None, socket_options: Iterable[Any] | None) -> StampedStream:
        reader = _Reader(self.clock)
        try:
            async with asyncio.timeout(timeout):
                transport, _ = await open_with(reader)
        except TimeoutError:
            raise httpcore.ConnectTimeout("timed out connecting") from None
        except OSError as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from None
        sock: socket.socket = transport.get_extra_info("socket")
        for option in socket_options or ():  # asyncio has set TCP_NODELAY already
            sock.setsockopt(*option)
        return StampedStream(reader)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
