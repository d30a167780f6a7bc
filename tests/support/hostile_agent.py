"""Hostile deployed agents on loopback, for the line's and the state endpoint's bounds (issue 43): a real
WebSocket server speaking Twilio Media Streams (`/twilio/<act>`) or raw PCM (`/pcm/<act>`) that, once the
call has opened, does one hostile thing, and one that refuses or hangs the handshake; and an HTTP state
endpoint that drips, never ends, is huge, or echoes the Authorization header it was sent.

Each runs on its own thread and event loop, so a test can point the CLI (in this process or another)
at it. Acts on the call (after the agent has heard `HEARD` of the caller's messages):

- `huge`: one audio message of HUGE_BYTES (a Twilio `media` of base64 mu-law, or a PCM binary frame);
- `flood`: 20 ms audio frames as fast as the socket takes them, never stopping (far faster than real time);
- `clears`: CLEARS `clear` messages at once; `marks`: MARKS `mark` messages at once;
- `crumbs`: audio in 2-byte messages (one sample each), never stopping;
- `texts` (PCM): text frames at once, as many as `marks`.

Handshake acts (any transport's path): `/hang` (the handshake never answered), `/401`, `/500`,
`/redirect` (to itself, forever).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import threading
import time
from typing import Iterator

import websockets

from support.loopback_http import Loopback, QuietHandler

HEARD = 3  # caller messages the agent waits for before its act (the call is open and the turn begun)
HUGE_BYTES = 8 << 20  # the huge message: 8 MiB (the were 5 and 50 MB; any past the bound is refused unread)
CLEARS = 3000
MARKS = 20_000
FRAME = 160  # one 20 ms frame of 8 kHz mu-law


async def _twilio(ws, act: str) -> None:
    sid = None
    heard = 0
    async for message in ws:
        data = json.loads(message)
        sid = data.get("streamSid", sid)
        heard += data.get("event") == "media"
        if heard == HEARD:
            break
    media = lambda payload: json.dumps({"event": "media", "streamSid": sid, "media": {"payload": payload}})  # noqa: E731
    if act == "huge":
        await ws.send(media(base64.b64encode(b"\x7f" * (HUGE_BYTES * 3 // 4)).decode()))
    elif act == "flood":
        frame = media(base64.b64encode(b"\x10" * FRAME).decode())
        while True:
            await ws.send(frame)
    elif act == "crumbs":
        crumb = media(base64.b64encode(b"\x10").decode())
        while True:
            await ws.send(crumb)
    elif act == "clears":
        for _ in range(CLEARS):
            await ws.send(json.dumps({"event": "clear", "streamSid": sid}))
    elif act == "marks":
        for i in range(MARKS):
            await ws.send(json.dumps({"event": "mark", "streamSid": sid, "mark": {"name": f"m{i}"}}))
    await _drain(ws)


async def _pcm(ws, act: str) -> None:
    heard = 0
    async for message in ws:
        heard += 1
        if heard == HEARD:
            break
    if act == "huge":
        await ws.send(b"\x10\x00" * (HUGE_BYTES // 2))
    elif act == "flood":
        frame = b"\x10\x00" * 320
        while True:
            await ws.send(frame)
    elif act == "crumbs":
        while True:
            await ws.send(b"\x10\x00")
    elif act == "texts":
        for _ in range(MARKS):
            await ws.send('{"status": "speaking"}')
    await _drain(ws)


async def _drain(ws) -> None:
    """Read on until the line hangs up, as an agent does."""
    with contextlib.suppress(websockets.ConnectionClosed):
        async for _ in ws:
            pass


async def _handler(ws) -> None:
    path = ws.request.path.strip("/").split("/")
    with contextlib.suppress(websockets.ConnectionClosed):
        if path[0] == "twilio":
            await _twilio(ws, path[1])
        elif path[0] == "pcm":
            await _pcm(ws, path[1])


async def _handshake(connection, request, stop: threading.Event):
    """The handshake acts; None lets the handshake through. `/hang` holds it until the server stops."""
    while request.path == "/hang" and not stop.is_set():
        await asyncio.sleep(0.05)
    if request.path == "/401":
        return connection.respond(401, "no\n")
    if request.path == "/500":
        return connection.respond(500, "boom\n")
    if request.path == "/redirect":
        response = connection.respond(302, "")
        response.headers["Location"] = "/redirect"
        return response
    return None


@contextlib.contextmanager
def hostile_agent() -> Iterator[str]:
    """The hostile agent on loopback; yields its ws://127.0.0.1:PORT."""
    ready: list = []
    stop = threading.Event()

    async def serve() -> None:
        async with websockets.serve(_handler, "127.0.0.1", 0, open_timeout=None,
                                    process_request=lambda conn, request: _handshake(conn, request, stop),
                                    max_size=None, compression=None) as server:
            ready.append(server.sockets[0].getsockname()[1])
            while not stop.is_set():
                await asyncio.sleep(0.05)

    thread = threading.Thread(target=lambda: asyncio.run(serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not ready and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield f"ws://127.0.0.1:{ready[0]}"
    finally:
        stop.set()
        thread.join(timeout=5)


# --- the state endpoint ------------------------------------------------------------------------------

DRIP_EVERY_S = 0.2
STATE_HUGE_BYTES = 200 << 20  # the 200 MB body


class _State(QuietHandler):
    """`/drip`: a valid answer one byte every DRIP_EVERY_S; `/endless`: a chunked body that never ends;
    `/huge`: a 200 MB body of declared length; `/huge-chunked`: the same, undeclared; `/echo`: a 200 whose
    one record holds the Authorization header it was sent."""

    server_stop: threading.Event

    def do_GET(self) -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            if self.path == "/echo":
                body = json.dumps({"appointments": [{"seen": self.headers.get("Authorization", "")}]}).encode()
                self._head(200, len(body))
                self.wfile.write(body)
            elif self.path == "/drip":
                body = b'{"appointments": []}'
                self._head(200, len(body))
                for byte in body:
                    if self.server_stop.wait(DRIP_EVERY_S):
                        return
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
            elif self.path == "/huge":
                self._head(200, STATE_HUGE_BYTES)
                self._stream(STATE_HUGE_BYTES)
            elif self.path in ("/endless", "/huge-chunked"):
                self.send_response(200)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self._stream(STATE_HUGE_BYTES if self.path == "/huge-chunked" else None, chunked=True)
            else:
                self._head(404, 0)

    def _head(self, status: int, length: int) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(length))
        self.end_headers()

    def _stream(self, total: int | None, chunked: bool = False) -> None:
        """`total` bytes of a JSON list's inside (None: without end), until the client goes."""
        piece = b'{"a": 1}, ' * 6553  # 64 KiB
        sent = 0
        self.wfile.write(b"[" if not chunked else b"1\r\n[\r\n")
        while (total is None or sent < total) and not self.server_stop.is_set():
            self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n" if chunked else piece)
            sent += len(piece)


class HostileState(Loopback):
    """The hostile state endpoint on loopback (`url(path)`)."""

    def __init__(self) -> None:
        handler = type("Handler", (_State,), {})
        super().__init__(handler)
        handler.server_stop = self.stop

