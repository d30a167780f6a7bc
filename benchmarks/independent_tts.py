"""A minimal OpenAI-compatible `POST /v1/audio/speech` server (or, with `--api minimax`, MiniMax's
`POST /v1/t2a_v2` streamed as server-sent events), written apart from voxwatch.

The independent end of `benchmarks.http_clock`: standard library only (asyncio, raw HTTP/1.1 with
chunked transfer encoding, keep-alive), no code shared with voxwatch's emulators or client. It
stamps its own clock (`time.perf_counter_ns`, shared by every process on the machine) where it
touches the socket: each request's arrival in the read callback, and each write immediately
before the bytes go to the transport. `GET /stamps` hands the stamps over (and forgets them).

Each reply: after a TTFB (60-140 ms, from the input text), `--silence-ms` of silence, then a tone
that starts at full amplitude (its onset is exact), 24 kHz 16-bit mono PCM in 20 ms chunks, one
chunk per write every 5 ms; the tone's chunks go out `--speech-late-ms` after the first chunk, later
than the silence takes to play, so the tone's first chunk decides when it is heard. The head goes
out with the first chunk (`--head with-audio`) or as soon as the request has arrived (`--head early`).
As MiniMax's T2A (platform.minimax.io/docs/api-reference/speech-t2a-http), each chunk is one event
`data: {"data": {"audio": <hex>, "status": 1}, ...}` in its own write, and a status-2 event ends the reply.

    python -m benchmarks.independent_tts [--port 0] [--head with-audio|early] [--silence-ms 80]
                                         [--speech-late-ms 150] [--poll] [--api openai|minimax]
"""

from __future__ import annotations

import argparse
import array
import asyncio
import hashlib
import json
import math
import time

RATE = 24000
CHUNK = 480  # samples: 20 ms
EVERY_NS = 5_000_000
SPEECH_MS = 600
PATHS = {"openai": "/v1/audio/speech", "minimax": "/v1/t2a_v2"}
CONTENT_TYPES = {"openai": b"audio/pcm", "minimax": b"text/event-stream"}
now = time.perf_counter_ns


def reply_pcm(silence_ms: int) -> bytes:
    """Silence, then a 440 Hz tone from its peak (an onset with no ramp)."""
    tone = array.array("h", (int(9830 * math.cos(2 * math.pi * 440 * i / RATE)) for i in range(RATE * SPEECH_MS // 1000)))
    return bytes(2 * RATE * silence_ms // 1000) + tone.tobytes()


def ttfb_ns(text: str) -> int:
    return (60 + hashlib.sha256(text.encode()).digest()[0] % 81) * 1_000_000


class Speech(asyncio.Protocol):
    """One HTTP/1.1 connection; requests are answered in order."""

    def __init__(self, server: "Server") -> None:
        self.server, self.buffer, self.transport = server, b"", None
        self.busy: asyncio.Task | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        at = now()
        self.buffer += data
        while True:
            head, sep, rest = self.buffer.partition(b"\r\n\r\n")
            if not sep:
                return
            lines = head.decode("latin-1").split("\r\n")
            method, path = lines[0].split(" ")[:2]
            fields = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)}
            length = int(fields.get("content-length", "0"))
            if len(rest) < length:
                return
            body, self.buffer = rest[:length], rest[length:]
            previous = self.busy
            self.busy = asyncio.get_running_loop().create_task(self.answer(previous, method, path, fields, body, at))

    def write(self, data: bytes) -> int:
        at = now()
        self.transport.write(data)
        return at

    async def answer(self, previous, method: str, path: str, fields: dict, body: bytes, arrived: int) -> None:
        if previous is not None:
            await previous
        if method == "GET" and path == "/stamps":
            out = json.dumps(self.server.stamps).encode()
            self.server.stamps = {}
            self.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(out) + out)
        elif method == "POST" and path == PATHS[self.server.api] and fields.get("authorization", "").startswith("Bearer "):
            await self.speak(json.loads(body), arrived)
        else:
            self.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")

    async def speak(self, request: dict, arrived: int) -> None:
        api, pcm = self.server.api, self.server.pcm
        text = request["input" if api == "openai" else "text"]
        head = b"HTTP/1.1 200 OK\r\ncontent-type: %b\r\ntransfer-encoding: chunked\r\n\r\n" % CONTENT_TYPES[api]
        stamps = self.server.stamps[text] = {"arrived": arrived, "writes": []}
        if self.server.head == "early":
            stamps["head"] = self.write(head)
        first = arrived + ttfb_ns(text)
        for i, start in enumerate(range(0, len(pcm) // 2, CHUNK)):
            data = pcm[2 * start:2 * (start + CHUNK)]
            await until(first + self.server.send_offset_ns(start))
            frame = chunked(data if api == "openai" else event(data.hex(), 1))
            if i == 0 and self.server.head == "with-audio":
                frame = head + frame
            stamps["writes"].append([start, len(data) // 2, self.write(frame)])
        self.write((b"" if api == "openai" else chunked(event("", 2))) + b"0\r\n\r\n")


def chunked(data: bytes) -> bytes:
    return b"%x\r\n%b\r\n" % (len(data), data)


def event(audio: str, status: int) -> bytes:
    """One MiniMax T2A event: status 1 carries a chunk's audio (hex), status 2 ends the reply."""
    return b"data: %b\n\n" % json.dumps({"data": {"audio": audio, "status": status},
                                           "base_resp": {"status_code": 0, "status_msg": ""}}).encode()


async def until(deadline_ns: int) -> None:
    """Sleep to within 2 ms of the deadline, then yield to the loop until it passes."""
    while (left := deadline_ns - now()) > 0:
        await asyncio.sleep((left - 2_000_000) / 1e9 if left > 2_000_000 else 0)


class Server:
    def __init__(self, head: str, silence_ms: int, speech_late_ms: int, api: str = "openai") -> None:
        self.head, self.api, self.pcm, self.stamps = head, api, reply_pcm(silence_ms), {}
        self.speech_at = RATE * silence_ms // 1000  # the tone's first sample (a whole chunk: 20 ms steps)
        self.speech_late_ns = speech_late_ms * 1_000_000

    def send_offset_ns(self, start: int) -> int:
        """When the chunk starting at sample `start` goes out, after the first chunk: silence every
        5 ms, the tone from `speech_late_ns` on, every 5 ms."""
        if start < self.speech_at:
            return start // CHUNK * EVERY_NS
        return self.speech_late_ns + (start - self.speech_at) // CHUNK * EVERY_NS

    async def run(self, port: int, poll: bool) -> None:
        loop = asyncio.get_running_loop()
        listener = await loop.create_server(lambda: Speech(self), "127.0.0.1", port)
        print(listener.sockets[0].getsockname()[1], flush=True)
        while poll:  # keeps the read callback's arrival stamps from waiting on the kernel's wake-up
            await asyncio.sleep(0)
        await asyncio.Future()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--head", choices=("with-audio", "early"), default="with-audio")
    parser.add_argument("--silence-ms", type=int, default=80, help="a multiple of 20")
    parser.add_argument("--speech-late-ms", type=int, default=150)
    parser.add_argument("--poll", action="store_true", help="poll the sockets instead of sleeping in the kernel")
    parser.add_argument("--api", choices=tuple(PATHS), default="openai")
    args = parser.parse_args()
    asyncio.run(Server(args.head, args.silence_ms, args.speech_late_ms, args.api).run(args.port, args.poll))


if __name__ == "__main__":
    main()
