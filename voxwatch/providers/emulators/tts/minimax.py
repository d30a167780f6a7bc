"""A loopback emulator of MiniMax's T2A v2 HTTP API (`POST /v1/t2a_v2`), streamed as server-sent events.

The protocol as voxwatch/providers/tts/minimax.py lists it, with its sources. As MiniMax does, it
refuses in-band: HTTP 200 with a JSON `base_resp` whose `status_code` is not 0 - a wrong `Authorization:
Bearer <key>` is 1004 "authentication failed"; a body that is not JSON, a `model` MiniMax does not
list, an empty `text` or one of 10,000 characters or more, a missing `voice_setting.voice_id`, a
`sample_rate` outside 8000/16000/22050/24000/32000/44100, a `format` other than `pcm` (the one this
emulator speaks) or `stream` not true (this emulator streams only) are 2013 "invalid params".

The stream: `text/event-stream`, one `data: {"data": {"audio": <hex>, "status": 1}, "trace_id",
"base_resp": {"status_code": 0, "status_msg": ""}}` event per chunk of 16-bit PCM at the requested
rate (32000 when absent, MiniMax's default) - leading silence, then the speech (a sharp-onset tone, or
eSpeak NG saying it) - the first `ttfb_ms` after the body arrived and the rest every `send_every_ms`
(the speech `gaming_delay_ms` after the silence, when set); then the status-2 event with
`extra_info` (audio_length in ms, audio_sample_rate, audio_size, usage_characters, word_count, ...)
and, unless the request set `stream_options.exclude_aggregated_audio`, the whole utterance's audio
again (MiniMax's default: "the last chunk will include the complete audio").

MiniMax's own behaviour, beyond the shared scenario (`MiniMaxScenario`): `in_band_error` answers the
request with that `base_resp` code (say 1002, the rate limit) instead of a stream; `mid_stream_error`
sends an event with that code after two chunks and ends the stream; `sequence` replays the vendor's
own example (below).

Faults: the handshake faults are refused with their HTTP status (429 with Retry-After), as a gateway
in front of the API would; `malformed` sends a broken event after the chunks, `disconnect` cuts the
body after two chunks, `no_final` never sends the status-2 event nor ends the body, `inaudible` sends
silence. Calibration ledger: `first_audio` and `first_speech`, keyed by the text, stamped as written.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import uuid

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


from voxwatch.providers.emulators.faults import http_refusal
from voxwatch.providers.emulators.scenario import TTSScenario, scenario_as
from voxwatch.providers.emulators.speech import ChunkCache
from voxwatch.providers.emulators.stamped_h11 import record_at_write
from voxwatch.providers.emulators.streamed import Replay, TimedBody

MODELS = ("speech-2.8-hd", "speech-2.8-turbo", "speech-2.6-hd", "speech-2.6-turbo", "speech-02-hd",
          "speech-02-turbo", "speech-01-hd", "speech-01-turbo")  # the model enum of the openapi spec
RATES = (8000, 16000, 22050, 24000, 32000, 44100)
DEFAULT_RATE = 32000
OK = {"status_code": 0, "status_msg": ""}
STATUS_MSG = {1000: "unknown error", 1001: "timeout", 1002: "rate limit", 1004: "authentication failed",
              1039: "TPM rate limit", 1042: "illegal characters exceed 10%", 2013: "invalid params"}
EVENT_STREAM = "text/event-stream"

# The cited sequence: the `text/event-stream` example of the vendor's openapi spec, embedded in
# https://platform.minimax.io/docs/api-reference/speech-t2a-http (POST /v1/t2a_v2), quoted; the docs
# print the list last-first, on the wire the status-1 chunks come first and the aggregated status-2
# event last. Its audio fields hold placeholder words, not hex, so the replay puts the bytes of
# DOC_AUDIO (as hex) in their places; every other field is the doc's.
DOC_CHUNKS = ("audio_chunk1", "audio_chunk2", "audio_chunk3")
DOC_STREAM = [
    *({"data": {"audio": chunk, "status": 1}, "trace_id": "01b8bf9bb7433cc75c18eee6cfa8fe21",
       "base_resp": {"status_code": 0, "status_msg": ""}} for chunk in DOC_CHUNKS),
    {"data": {"audio": "hex encoded audio", "status": 2},
     "extra_info": {"audio_length": 12910, "audio_sample_rate": 32000, "audio_size": 205677, "bitrate": 128000,
                    "word_count": 163, "invisible_character_ratio": 0, "usage_characters": 163, "audio_format": "mp3",
                    "audio_channel": 1},
     "trace_id": "04ece790375f3ca2edbb44e8c4c200bf", "base_resp": {"status_code": 0, "status_msg": "success"}},
]
DOC_AUDIO = {"audio_chunk1": b"\x01\x00\x02\x00", "audio_chunk2": b"\x03\x00", "audio_chunk3": b"\x04\x00\x05\x00"}
# The error of the AsyncAPI's task_failed example, its base_resp as the HTTP API answers it in-band.
DOC_ERROR = {"base_resp": {"status_code": 1004, "status_msg": "XXXXXXX"}, "trace_id": "0303a2882bf18235ae7a809ae0f3cca7"}
SEQUENCES = (None, "doc_stream", "doc_error")


@dataclasses.dataclass(frozen=True)
class MiniMaxScenario(TTSScenario):
    """A TTSScenario with MiniMax's in-band failures and its documented example; see the module docstring.
    `sequence`: "doc_stream" answers a valid request with DOC_STREAM (each `audio` its DOC_AUDIO hex,
    the status-2 event's the three put together, as the aggregate is), the first event `ttfb_ms`
    after the body arrived; "doc_error" answers it with DOC_ERROR."""

    in_band_error: int | None = None
    mid_stream_error: int | None = None
    sequence: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sequence not in SEQUENCES:
            raise ValueError(f"unknown MiniMax sequence {self.sequence!r}")


def _refusal(code: int) -> JSONResponse:
    """MiniMax's in-band refusal: HTTP 200, a `base_resp` with the code."""
    return JSONResponse({"trace_id": uuid.uuid4().hex, "base_resp": {"status_code": code,
                                                                     "status_msg": STATUS_MSG.get(code, "error")}})


def _event(payload: dict) -> bytes:
    return f"data: {json.dumps(payload)}\n\n".encode()


def doc_events() -> list[bytes]:
    """DOC_STREAM as the replay sends it: the placeholders' audio as hex, the aggregate the whole."""
    out = []
    for event in DOC_STREAM:
        audio = event["data"]["audio"]
        whole = b"".join(DOC_AUDIO.values())
        out.append(_event({**event, "data": {**event["data"], "audio": DOC_AUDIO.get(audio, whole).hex()}}))
    return out


class MiniMaxEmulator:
    def __init__(self, scenario) -> None:
        self.scenario = scenario_as(scenario, "tts", MiniMaxScenario)
        self.trace = uuid.uuid4().hex
        self._pcm = ChunkCache(self.scenario)
        self._replies: dict[tuple[str, int], tuple[list[bytes], int, bytes]] = {}
        for rate in (24000, DEFAULT_RATE):  # first-use costs paid before any stream is timed
            self._reply("", rate)

    def _reply(self, text: str, rate: int) -> tuple[list[bytes], int, bytes]:
        """A reply's status-1 events, the index of the first with speech, and its whole PCM (the
        aggregate): made once per text and rate (once per rate for the tone), before its clock."""
        key = (text if self.scenario.voice != "tone" else "", rate)
        if key not in self._replies:
            chunks, first_speech = self._pcm.get(text, rate)
            events = [_event({"data": {"audio": c.hex(), "status": 1}, "trace_id": self.trace, "base_resp": OK})
                      for c in chunks]
            self._replies[key] = (events, first_speech, b"".join(chunks))
        return self._replies[key]

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/t2a_v2", self.t2a, methods=["POST"])])

    @staticmethod
    def _problem(req) -> str | None:
        """Why a request is 2013 invalid params, or None."""
        if not isinstance(req, dict):
            return "the body is not a JSON object"
        text, voice, audio = req.get("text"), req.get("voice_setting"), req.get("audio_setting") or {}
        if req.get("model") not in MODELS:
            return f"unknown model {req.get('model')!r}"
        if not isinstance(text, str) or not text or len(text) >= 10000:
            return "text must be 1 to 9,999 characters"
        if not isinstance(voice, dict) or not voice.get("voice_id"):
            return "voice_setting.voice_id is required"
        if not isinstance(audio, dict) or audio.get("sample_rate", DEFAULT_RATE) not in RATES:
            return f"audio_setting.sample_rate must be one of {RATES}"
        if audio.get("format", "mp3") != "pcm":
            return "this emulator speaks audio_setting.format pcm only"
        if req.get("stream") is not True:
            return "this emulator answers stream: true only"
        return None

    async def t2a(self, request: Request) -> Response:
        s = self.scenario
        refusal = http_refusal(s.fault)  # a gateway's refusal, before MiniMax reads the request
        if refusal is not None:
            return refusal
        body = await request.body()
        arrived = time.perf_counter_ns()
        if request.headers.get("authorization") != f"Bearer {s.api_key}":
            return _refusal(1004)
        try:
            req = json.loads(body)
        except ValueError:
            req = None
        problem = self._problem(req)
        if problem is not None:
            return JSONResponse({"trace_id": uuid.uuid4().hex, "base_resp": {"status_code": 2013,
                                                                             "status_msg": f"invalid params, {problem}"}})
        if s.sequence == "doc_error":
            return JSONResponse(DOC_ERROR)
        if s.sequence == "doc_stream":
            return Replay(doc_events(), arrived + int(s.ttfb_ms * 1e6), EVENT_STREAM)
        if s.in_band_error is not None:
            return _refusal(s.in_band_error)
        text, rate = req["text"], req["audio_setting"].get("sample_rate", DEFAULT_RATE)
        chunks, first_speech, whole = await asyncio.to_thread(self._reply, text, rate)  # eSpeak must finish within ttfb_ms
        times = s.send_times(arrived, text, len(chunks), first_speech)
        if s.mid_stream_error is not None:  # two chunks, then the failure as an event, and the end
            chunks, times = chunks[:2], times[:2]
            tail = _event({"trace_id": self.trace, "base_resp": {"status_code": s.mid_stream_error,
                                                                 "status_msg": STATUS_MSG.get(s.mid_stream_error, "error")}})
        else:
            tail = self._final(text, rate, whole, bool((req.get("stream_options") or {}).get("exclude_aggregated_audio")))
        return TimedBody(chunks, first_speech, times, s, lambda what: record_at_write(self, text, what),
                         content_type=EVENT_STREAM, tail=tail, broken=b'data: {"data": {"audio": "\n\n')

    def _final(self, text: str, rate: int, pcm: bytes, exclude_aggregated: bool) -> bytes:
        """The status-2 event: extra_info, and the whole audio again unless excluded."""
        info = {"audio_length": round(len(pcm) / 2 / rate * 1000), "audio_sample_rate": rate, "audio_size": len(pcm),
                "bitrate": rate * 16, "word_count": len(text.split()), "invisible_character_ratio": 0,
                "usage_characters": len(text), "audio_format": "pcm", "audio_channel": 1}
        return _event({"data": {"audio": "" if exclude_aggregated else pcm.hex(), "status": 2}, "extra_info": info,
                       "trace_id": self.trace, "base_resp": {"status_code": 0, "status_msg": "success"}})
