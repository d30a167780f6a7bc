"""HTTP exchanges are stamped at the socket (voxwatch/providers/session/stamped_http.py), not where httpx hands
the bytes over: behaviour, not precision. Scripted loopback servers (HTTP/1.1 by hand, HTTP/2 on
the h2 library), in a thread with their own event loop, stamp each write just before it; the
client's stamps must fall between that write and the moment the test got the bytes, and a chunk
the test asks for late must keep the time it arrived. Tolerances are generous (a busy 2-core
machine can hold either side off the CPU for milliseconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import zlib
from typing import Callable, Iterator

import h2.config
import h2.connection
import h2.events
import httpx
import pytest
import uvicorn

from voxwatch.providers.session import stamped_http
from voxwatch.providers.emulators.stamped_h11 import StampedH11Protocol, record_at_write
from voxwatch.providers.session.stamped_http import StampedTransport

pytestmark = pytest.mark.realtime

now = time.perf_counter_ns
GAP_S = 0.3  # between the two chunks a server sends
LATE_S = 1.0  # how late the test asks for the second chunk
SLACK_NS = 250_000_000  # a stamp may trail its write by this much on a busy machine (it is ~0.1 ms idle)

@contextlib.contextmanager
def serving(protocol_factory: Callable[[], asyncio.Protocol]) -> Iterator[int]:
    """A server on 127.0.0.1 in a thread with its own event loop; yields its port."""
    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(loop.create_server(protocol_factory, "127.0.0.1", 0))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        server.close()


class Writes:
    """The servers' write stamps, by name, taken immediately before each write."""

    def __init__(self) -> None:
        self.at: dict[str, int] = {}

    def write(self, transport: asyncio.Transport, name: str, data: bytes) -> None:
        self.at[name] = now()
        transport.write(data)


def chunk(data: bytes) -> bytes:
    """One chunk of a chunked HTTP/1.1 body."""
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


class Scripted(asyncio.Protocol):
    """HTTP/1.1: any request gets a chunked body, written as `parts` say: (name, bytes, wait before
    the write); the head, with `headers`, goes with the first part."""

    def __init__(self, writes: Writes, parts: list[tuple[str, bytes, float]], headers: bytes = b"") -> None:
        self.writes, self.parts, self.headers, self.buffer = writes, parts, headers, b""

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.writes.at.setdefault("request", now())
        self.buffer += data
        if b"\r\n\r\n" in self.buffer and self.parts[0][0] not in self.writes.at:
            self.writes.at[self.parts[0][0]] = 0  # answered once
            asyncio.get_running_loop().create_task(self.answer())

    async def answer(self) -> None:
        data = (b"HTTP/1.1 200 OK\r\ncontent-type: audio/pcm\r\n" + self.headers
                + b"transfer-encoding: chunked\r\n\r\n")
        for name, part, wait in self.parts:
            await asyncio.sleep(wait)
            self.writes.write(self.transport, name, data + part)
            data = b""


def two_chunks(writes: Writes) -> Scripted:
    """Two chunks, GAP_S apart (the head with the first)."""
    return Scripted(writes, [("first", chunk(b"abcd"), 0.0), ("second", chunk(b"efgh") + chunk(b""), GAP_S)])


class TwoStreamsH2(asyncio.Protocol):
    """HTTP/2 (prior knowledge): heads at once; /first's one DATA frame, then GAP_S later /second's."""

    def __init__(self, writes: Writes) -> None:
        self.writes = writes
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
        self.streams: dict[bytes, int] = {}

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.h2.initiate_connection()
        transport.write(self.h2.data_to_send())

    def data_received(self, data: bytes) -> None:
        for event in self.h2.receive_data(data):
            if isinstance(event, h2.events.RequestReceived):
                path = dict(event.headers)[b":path"]
                self.h2.send_headers(event.stream_id, [(":status", "200"), ("content-type", "audio/pcm")],
                                     end_stream=path == b"/warm")
                if path != b"/warm":
                    self.streams[path] = event.stream_id
        self.transport.write(self.h2.data_to_send())
        if len(self.streams) == 2:
            asyncio.get_running_loop().create_task(self.answer(self.streams[b"/first"], self.streams[b"/second"]))
            self.streams = {}

    async def answer(self, first: int, second: int) -> None:
        await asyncio.sleep(0.05)
        self.h2.send_data(first, b"abcd", end_stream=True)
        self.writes.write(self.transport, "first", self.h2.data_to_send())
        await asyncio.sleep(GAP_S)
        self.h2.send_data(second, b"efgh", end_stream=True)
        self.writes.write(self.transport, "second", self.h2.data_to_send())


def test_a_chunk_keeps_the_time_its_socket_read_happened_not_when_it_was_asked_for():
    writes = Writes()

    asked: list[int] = []

    async def client(port: int) -> tuple[list[tuple[bytes, int, int]], int, int, int, int]:
        async with httpx.AsyncClient(transport=StampedTransport()) as c:
            before = now()
            async with c.stream("POST", f"http://127.0.0.1:{port}/v1/audio/speech", json={"input": "hi"}) as response:
                entered = now()
                got = []
                async for chunk, at in stamped_http.received(response):
                    got.append((chunk, at, now()))
                    if len(got) == 1:
                        await asyncio.sleep(LATE_S)  # the second chunk arrives meanwhile
                        asked.append(now())
                return got, before, entered, stamped_http.sent(response), stamped_http.arrived(response)

    with serving(lambda: two_chunks(writes)) as port:
        got, before, entered, sent, arrived = asyncio.run(client(port))
    (first, first_at, first_handed), (second, second_at, second_handed) = got
    assert (first, second) == (b"abcd", b"efgh")
    # the request is stamped around its write: the stamp is taken after it, blind for as long as the
    # write took, so the span's start is before the server read it (the end may come after, on a busy
    # machine the server's thread runs first)
    assert before <= sent - sent.blind_ns <= writes.at["request"] and sent.blind_ns >= 0
    assert sent <= entered
    assert writes.at["first"] <= arrived <= min(entered, first_at)  # the head came with the first chunk
    for name, at, handed in (("first", first_at, first_handed), ("second", second_at, second_handed)):
        assert writes.at[name] <= at <= handed  # after the server wrote it, never after it was handed over
    # asked for LATE_S after the first, the second was stamped when it was read, before it was asked
    # for, and the two stamps are the server's gap apart
    assert second_at < asked[0]
    assert abs((second_at - first_at) - (writes.at["second"] - writes.at["first"])) < SLACK_NS


def test_an_encoded_body_is_decoded_and_each_chunk_keeps_the_read_that_completed_it():
    """gzip (what httpx asks for by default): the header alone, then two sync-flushed blocks GAP_S
    apart. The header's read yields nothing, so the first audio is stamped at the read of its own
    block, not earlier; the second, asked for late, keeps its read."""
    gz = zlib.compressobj(wbits=31)
    header = gz.compress(b"abcd")  # deflate holds the data back: this is the 10-byte gzip header alone
    first = gz.flush(zlib.Z_SYNC_FLUSH)
    second = gz.compress(b"efgh") + gz.flush(zlib.Z_SYNC_FLUSH) + gz.flush()
    assert len(header) == 10
    writes = Writes()
    parts = [("header", chunk(header), 0.0), ("first", chunk(first), GAP_S), ("second", chunk(second) + chunk(b""), GAP_S)]

    async def client(port: int) -> tuple[list[tuple[bytes, int, int]], list[int]]:
        asked: list[int] = []
        async with httpx.AsyncClient(transport=StampedTransport()) as c:
            async with c.stream("POST", f"http://127.0.0.1:{port}/v1/audio/speech", json={"input": "hi"}) as response:
                assert response.request.headers["accept-encoding"] == "gzip, deflate"
                got = []
                async for data, at in stamped_http.received(response):
                    got.append((data, at, now()))
                    if len(got) == 1:
                        await asyncio.sleep(LATE_S + GAP_S)  # the second block arrives meanwhile
                        asked.append(now())
                return got, asked

    with serving(lambda: Scripted(writes, parts, b"content-encoding: gzip\r\n")) as port:
        got, asked = asyncio.run(client(port))
    assert [data for data, _, _ in got] == [b"abcd", b"efgh"]  # decoded, nothing for the header
    (_, first_at, first_handed), (_, second_at, second_handed) = got
    assert writes.at["first"] <= first_at <= first_handed  # the block's read, not the header's GAP_S before
    assert writes.at["second"] <= second_at <= second_handed
    assert second_at < asked[0]


def test_a_body_in_a_coding_the_request_did_not_accept_is_refused():
    """httpx would pass a coding it cannot decode (br here: no brotli decoder installed, none asked
    for) through as if it were the content: `received` refuses it before the first chunk."""
    writes = Writes()
    parts = [("first", chunk(b"\x1b\x03\x00\xf8"), 0.0), ("end", chunk(b""), 0.0)]

    async def client(port: int) -> list[bytes]:
        async with httpx.AsyncClient(transport=StampedTransport()) as c:
            async with c.stream("POST", f"http://127.0.0.1:{port}/v1/audio/speech", json={"input": "hi"}) as response:
                assert stamped_http.unaccepted_codings(response) == ["br"]
                return [data async for data, _ in stamped_http.received(response)]

    with serving(lambda: Scripted(writes, parts, b"content-encoding: br\r\n")) as port:
        with pytest.raises(httpx.DecodingError, match="br-encoded"):
            asyncio.run(client(port))


def test_over_http2_each_stream_gets_the_read_that_completed_its_own_data():
    """/first asks for its body late: the other stream's task reads /first's DATA frame (queued
    for it by httpcore), then its own GAP_S later; /first's chunk keeps its own read, not the latest."""
    writes = Writes()

    async def client(port: int) -> dict[str, tuple[bytes, int, int]]:
        got: dict[str, tuple[bytes, int, int]] = {}
        async with httpx.AsyncClient(transport=StampedTransport(http1=False, http2=True)) as c:
            async def one(name: str, delay: float) -> None:
                async with c.stream("GET", f"http://127.0.0.1:{port}/{name}") as response:
                    assert response.http_version == "HTTP/2"
                    await asyncio.sleep(delay)
                    async for chunk, at in stamped_http.received(response):
                        got[name] = (chunk, at, now())

            await c.get(f"http://127.0.0.1:{port}/warm")  # the connection, open before the two streams
            await asyncio.gather(one("first", LATE_S), one("second", 0.0))
        return got

    with serving(lambda: TwoStreamsH2(writes)) as port:
        got = asyncio.run(client(port))
    assert got["first"][0] == b"abcd" and got["second"][0] == b"efgh"
    for name, (_, at, handed) in got.items():
        assert writes.at[name] <= at <= handed
    assert got["first"][2] > writes.at["second"]  # /first's chunk was handed over after /second's read...
    assert got["first"][1] < writes.at["second"]  # ...but keeps its own read, from before /second was written


def test_the_emulators_ledger_stamps_the_socket_write_not_the_handler():
    """record_at_write in a handler that then waits: the record carries the write's time."""
    ledger: list[tuple[str, str, int]] = []
    emulator = type("Emulator", (), {"ledger": ledger})()
    noted: list[int] = []

    async def app(scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"audio/pcm")]})
        record_at_write(emulator, "stream", "first_audio")
        noted.append(now())
        await asyncio.sleep(GAP_S)  # the handler's own work between the note and the write
        await send({"type": "http.response.body", "body": b"abcd", "more_body": False})

    config = uvicorn.Config(app, host="127.0.0.1", port=0, http=StampedH11Protocol, log_level="warning",
                            lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        port = server.servers[0].sockets[0].getsockname()[1]

        async def client() -> tuple[int, int]:
            async with httpx.AsyncClient(transport=StampedTransport()) as c:
                async with c.stream("GET", f"http://127.0.0.1:{port}/") as response:
                    return [at async for _, at in stamped_http.received(response)][0], now()

        read_at, handed = asyncio.run(client())
    finally:
        server.should_exit = True
        thread.join(5)
    [(key, what, written)] = ledger
    assert (key, what) == ("stream", "first_audio")
    # stamped at the write, after the handler's wait (a stamp at the handler would be ~0); uvloop's timers
    # count in whole milliseconds of a loop time cached at the start of the iteration, so a sleep can end
    # up to a millisecond short of GAP_S on a precise clock
    assert written - noted[0] >= GAP_S * 1e9 - 2e6
    assert written <= read_at <= handed
