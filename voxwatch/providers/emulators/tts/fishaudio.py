"""A loopback emulator of Fish Audio's HTTP text to speech (`POST /v1/tts`), as an ASGI app.

The protocol as voxwatch/providers/tts/fishaudio.py lists it, with its sources. Checks
`Authorization: Bearer <key>` (else 401 with Fish's JSON error `{status, message}`), a JSON body
(`Content-Type: application/json`: this emulator does not read MessagePack) and its fields: `text`
required, else a 422 validation array `[{loc, type, msg}]`; `format` one of wav, pcm, mp3, opus (this
emulator speaks `pcm` only: 400 otherwise); `sample_rate` one of 8000, 16000, 24000, 32000, 44100,
and 44100 when absent, as Fish's default (a client that assumes another rate reads every duration
wrong); `latency` one of low, normal, balanced, default normal. The `model` header may be absent or
unknown: the server falls back to s2.1-pro, as Fish documents, and says nothing.

The answer is 200 with the audio as a chunked body of headerless 16-bit PCM at the requested rate -
leading silence, then the speech (a sharp-onset tone, or eSpeak NG saying it) - the first chunk
`ttfb_ms` after the body arrived and the rest every `send_every_ms` (the speech `gaming_delay_ms`
after the silence, when set). Under `latency: normal` the whole segment is held and goes out at once
when its last chunk is ready (Coval: "the default 'normal' buffers whole segments, folding
generation into TTFA"), so a client that leaves the default reads a later first audio.

`FishAudioScenario.sequence` replays the vendor's own material instead (below). Faults: the
handshake faults refuse the request (429 with Retry-After); `disconnect` cuts the body after two
chunks, `malformed` ends it on half a sample, `no_final` never ends it, `inaudible` sends silence.
Calibration ledger: `first_audio` and `first_speech`, keyed by the text, stamped as the bytes are written.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


from voxwatch.providers.emulators.faults import http_refusal
from voxwatch.providers.emulators.scenario import TTSScenario, scenario_as
from voxwatch.providers.emulators.speech import ChunkCache
from voxwatch.providers.emulators.stamped_h11 import record_at_write
from voxwatch.providers.emulators.streamed import Replay, TimedBody

MODELS = ("s1", "s2-pro", "s2.1-pro", "s2.1-pro-free", "drama-3-preview")  # the `model` header's values
RATES = (8000, 16000, 24000, 32000, 44100)
DEFAULT_RATE = 44100
LATENCIES = ("low", "normal", "balanced")

# The cited sequence. The request, as the vendor's docs give it (fishaudio/docs
# .mintlify/skills/fish-audio-api/SKILL.md @ 2c47b351654f6a6561ada08291b846b7497e6348, "Python (no SDK,
# streaming to file)"): these headers and a JSON body with these fields, answered by the audio bytes
# streamed with no JSON wrapper.
DOC_HEADERS = ("authorization", "content-type", "model")  # Bearer key, application/json, s2.1-pro
DOC_BODY = ("text", "reference_id", "format", "latency")  # "Hello from Fish Audio.", <voice id>, "mp3", "normal"
# The body the official SDK's test streams (fishaudio/fish-audio-python tests/unit/test_tts.py @
# 16466cdf5508f5738227b94369891b6396a2a8cc, test_stream_behavior): "Empty chunk should be filtered out",
# and the audio is the chunks put together (test_convert_basic: b"chunk1chunk2chunk3").
SDK_CHUNKS = (b"chunk1", b"chunk2", b"chunk3", b"")
# An error as the docs describe them, "JSON with at least {status, message}": 402 "out of credit".
DOC_ERROR = (402, {"status": 402, "message": "Insufficient balance"})
SEQUENCES = (None, "sdk_stream", "doc_error")


@dataclasses.dataclass(frozen=True)
class FishAudioScenario(TTSScenario):
    """A TTSScenario with Fish Audio's own material. `sequence`: "sdk_stream" checks that the request
    has the documented headers and body fields (a 400 naming what is missing otherwise) and answers it
    with SDK_CHUNKS, the first `ttfb_ms` after the body arrived; "doc_error" answers with DOC_ERROR."""

    sequence: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sequence not in SEQUENCES:
            raise ValueError(f"unknown Fish Audio sequence {self.sequence!r}")


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"status": status, "message": message}, status_code=status)


class FishAudioEmulator:
    def __init__(self, scenario) -> None:
        self.scenario = scenario_as(scenario, "tts", FishAudioScenario)
        self._chunks = ChunkCache(self.scenario)
        self._chunks.get("", 24000)  # first-use costs paid before any stream is timed

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/tts", self.tts, methods=["POST"])])

    async def tts(self, request: Request) -> Response:
        s = self.scenario
        if request.headers.get("authorization") != f"Bearer {s.api_key}":
            return _error(401, "Invalid API key")
        refusal = http_refusal(s.fault)
        if refusal is not None:
            return refusal
        body = await request.body()
        arrived = time.perf_counter_ns()
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return _error(400, "this emulator reads application/json bodies only")
        try:
            req = json.loads(body)
            text = req["text"]
            if not isinstance(text, str):
                raise TypeError("text")
        except (ValueError, KeyError, TypeError):
            return JSONResponse([{"loc": ["body", "text"], "type": "missing", "msg": "Field required"}], status_code=422)
        if s.sequence == "doc_error":
            return JSONResponse(DOC_ERROR[1], status_code=DOC_ERROR[0])
        if s.sequence == "sdk_stream":
            missing = [h for h in DOC_HEADERS if h not in request.headers] + [f for f in DOC_BODY if f not in req]
            if missing:
                return _error(400, f"not the documented request: no {', '.join(missing)}")
            return Replay(SDK_CHUNKS, arrived + int(s.ttfb_ms * 1e6), "application/octet-stream")
        fmt, rate, latency = req.get("format", "mp3"), req.get("sample_rate") or DEFAULT_RATE, req.get("latency", "normal")
        if fmt != "pcm":
            return _error(400, f"this emulator speaks format pcm only, not {fmt!r}")
        if rate not in RATES or latency not in LATENCIES:
            return JSONResponse([{"loc": ["body", "sample_rate" if rate not in RATES else "latency"],
                                  "type": "enum", "msg": "Input should be one of the allowed values"}], status_code=422)
        chunks, first_speech = await asyncio.to_thread(self._chunks.get, text, rate)  # eSpeak must finish within ttfb_ms
        times = s.send_times(arrived, text, len(chunks), first_speech)
        if latency == "normal":  # the whole segment, held until its end
            times = [times[-1]] * len(times)
        return TimedBody(chunks, first_speech, times, s, lambda what: record_at_write(self, text, what),
                       content_type="application/octet-stream")
