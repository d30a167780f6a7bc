"""The body of an HTTP emulator that streams audio as the vendor generates it: each chunk at its
time on the emulator clock, the ledger's sends recorded as the chunks are written. Shared by the
emulators whose vendors stream a reply in a chunked response: headerless PCM (OpenAI's speech, Fish
Audio's TTS), or the same audio as server-sent events (MiniMax's T2A, each chunk an event)."""

from __future__ import annotations

import asyncio
import zlib

from starlette.responses import Response

from voxwatch.foundation.clock import sleep_until

from voxwatch.providers.emulators.scenario import TTSScenario


class TimedBody(Response):
    """A reply's chunks (raw PCM, or each already framed as the protocol frames it), each at its time
    on the emulator clock (TTSScenario.send_times), as a chunked HTTP body, then `tail` (the
    protocol's last message, if it has one); with `gzip`, gzip-encoded, each chunk sync-flushed so it
    decodes as it arrives. Faults: `disconnect` cuts the body after two chunks, `malformed` sends
    `broken` after the chunks (by default half a sample), `no_final` never ends the body nor sends
    the tail (`inaudible` is in the chunks: speech.speech_chunks). A `header` (a WAV container's, say)
    goes out in the same write as the first chunk."""

    def __init__(self, chunks: list[bytes], first_speech: int, times: list[int], scenario: TTSScenario, on_send,
                 gzip: bool = False, content_type: str = "audio/pcm", tail: bytes = b"", broken: bytes = b"\x00",
                 header: bytes = b"") -> None:
        self.chunks, self.first_speech, self.times, self.s = chunks, first_speech, times, scenario
        self.on_send = on_send  # (what) -> None, for the calibration ledger
        self.gzip, self.content_type, self.tail, self.broken = gzip, content_type, tail, broken
        self.header = header
        self.background = None

    async def __call__(self, scope, receive, send) -> None:
        s = self.s
        headers = [(b"content-type", self.content_type.encode())]
        packer = zlib.compressobj(wbits=31) if self.gzip else None  # wbits 31: the gzip container
        if packer is not None:
            headers += [(b"content-encoding", b"gzip"), (b"vary", b"accept-encoding")]

        def encoded(data: bytes) -> bytes:
            return data if packer is None else packer.compress(data) + packer.flush(zlib.Z_SYNC_FLUSH)

        await sleep_until(self.times[0])
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for i, (chunk, at) in enumerate(zip(self.chunks, self.times)):
            await sleep_until(at)
            if s.fault == "disconnect" and i == 2:
                return  # uvicorn closes the connection on an unfinished response
            if i == 0:
                self.on_send("first_audio")  # recorded as the chunk is written
            if i == self.first_speech:
                self.on_send("first_speech")
            await send({"type": "http.response.body", "body": encoded(self.header + chunk if i == 0 else chunk),
                        "more_body": True})
        if s.fault == "malformed":
            await send({"type": "http.response.body", "body": encoded(self.broken), "more_body": True})
        if s.fault == "no_final":
            await asyncio.Event().wait()  # the body never ends
        if self.tail:
            await send({"type": "http.response.body", "body": encoded(self.tail), "more_body": True})
        await send({"type": "http.response.body", "body": b"" if packer is None else packer.flush()})


class Replay(Response):
    """A reply replayed as given (a vendor's documented example, an SDK test's body): a 200 with
    `content_type`, the first chunk at `at_ns` on the emulator clock and the rest straight after."""

    def __init__(self, chunks, at_ns: int, content_type: str) -> None:
        self.chunks, self.at_ns, self.content_type = list(chunks), at_ns, content_type
        self.background = None

    async def __call__(self, scope, receive, send) -> None:
        await sleep_until(self.at_ns)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", self.content_type.encode())]})
        for chunk in self.chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
