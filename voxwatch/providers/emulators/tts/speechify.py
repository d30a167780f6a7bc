"""A loopback emulator of Speechify's HTTP streaming TTS (`POST /v1/audio/stream`), an ASGI app.

Speaks what voxwatch/providers/tts/speechify.py cites: `Authorization: Bearer <key>` (else 401 with
the error envelope `{"error": {"code", "message"}}`); a JSON body with `input` (at most 20,000
characters, docs.sws.speechify.com/docs/streaming) and `voice_id`, both required, `model` one of the
Simba models (`simba-3.0` when omitted); the format from `output_format` where given (it "takes
precedence over the `Accept` header"; `wav_*` "not supported on streaming", a 400), else from
`Accept: audio/pcm` (24 kHz). The answer is `200` with `Content-Type: audio/L16;rate=<rate>;channels=1`
and the raw samples as a chunked body - leading silence, then the speech (a sharp-onset tone or eSpeak
NG) - the first chunk `ttfb_ms` after the request arrived, the rest every `send_every_ms` (the speech
`gaming_delay_ms` after the silence, when set); the end of the body is the end of synthesis.

The behaviours that make numbers wrong: a mid-stream failure closes the connection with no error
message (the `disconnect` fault drops it after two chunks: the body is cut short, as the vendor
documents); more streams at once than the account's concurrency (`SpeechifyScenario.concurrency`;
the vendor's free plan allows 1) get 429 `concurrency_limit_reached` with `Retry-After`. This
emulator speaks pcm only: other documented formats (mp3, ogg, aac, mu-law) are refused with a 400
that says so, never served as something else.

The cited sequence (DOCUMENTED_*): the official SDK's wire fixtures, Speechify-AI/sdk-typescript
tests/wire/audio.test.ts @306abe07be2b5abfb48ba4d1d038098fd9b734e4 (Fern-generated from the vendor's
API definition; read 2026-12-07). Its request body is the shape the adapter sends, and its error
answers - each status with its body, verbatim - are what `SpeechifyScenario.documented_refusal`
replays, so the contract test drives the adapter with the vendor's own refusals.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.emulators.faults import http_refusal
from voxwatch.providers.emulators.ledger import saw
from voxwatch.providers.emulators.scenario import TTSScenario, scenario_for
from voxwatch.providers.emulators.speech import warmed
from voxwatch.providers.emulators.stamped_h11 import record_at_write

# tests/wire/audio.test.ts "streamWithTimestamps (1)": the request body (GetStreamRequest, which
# /v1/audio/stream takes too), verbatim
DOCUMENTED_REQUEST = {"input": "Streaming long-form audio with the Speechify API.", "model": "simba-3.2",
                      "voice_id": "geffen_32"}
# the same file's error cases ("speech (2)" to "(11)", "streamWithTimestamps (2)" on): status -> body, verbatim
_KEY_VALUE = {"key": "value"}
_BAD_REQUEST = {"error": {"code": "bad_request", "message": "message"}}
DOCUMENTED_REFUSALS = {400: _KEY_VALUE, 401: _KEY_VALUE, 402: _BAD_REQUEST, 403: _BAD_REQUEST, 404: _KEY_VALUE,
                       409: _KEY_VALUE, 429: _BAD_REQUEST, 500: _BAD_REQUEST, 502: _BAD_REQUEST, 503: _BAD_REQUEST}

MODELS = ("simba-3.2", "simba-3.0", "simba-english", "simba-multilingual")  # SDK docstrings; simba-3.0 the default
DEFAULT_MODEL = "simba-3.0"
MAX_INPUT = 20_000  # characters a stream request may hold (docs.sws.speechify.com/docs/streaming)
PCM_RATES = (8000, 16000, 22050, 24000, 44100, 48000)  # output_format pcm_<rate> (docs: audio/stream)
OTHER_FORMATS = re.compile(r"(mp3_(22050|24000)_\d+|ulaw_8000|ogg_24000|aac_24000)$")  # documented, not served here
RETRY_AFTER = "1"


@dataclass(frozen=True)
class SpeechifyScenario:
    """Speechify's own behaviour on top of the shared TTS scenario (`scenario`: one, or a Scenarios bundle)."""

    scenario: object
    concurrency: int | None = None  # streams the account may have open at once (free plan: 1); None: no limit
    documented_refusal: int | None = None  # answer every request with this status of DOCUMENTED_REFUSALS

    def __post_init__(self) -> None:
        if self.documented_refusal is not None and self.documented_refusal not in DOCUMENTED_REFUSALS:
            raise ValueError(f"no documented refusal {self.documented_refusal}")


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status, headers=headers)


def _rate(body: dict, accept: str) -> int | Response:
    """The pcm rate the request asks for, or the 400 that refuses its format."""
    fmt = body.get("output_format")
    if fmt is None:
        if "audio/pcm" in accept.lower():
            return 24000
        return _error(400, "validation_failed", "this emulator serves pcm only: send output_format pcm_<rate> "
                                                "or Accept: audio/pcm")
    fmt = str(fmt)
    match = re.fullmatch(r"pcm_(\d+)", fmt)
    if match and int(match.group(1)) in PCM_RATES:
        return int(match.group(1))
    if fmt.startswith("wav_"):
        return _error(400, "validation_failed", "wav_* formats are not supported on streaming")
    if OTHER_FORMATS.fullmatch(fmt):
        return _error(400, "validation_failed", f"this emulator serves pcm only, not {fmt}")
    return _error(400, "validation_failed", f"unknown output_format {fmt[:40]!r}")


class SpeechifyEmulator:
    def __init__(self, scenario) -> None:
        self.options = scenario if isinstance(scenario, SpeechifyScenario) else SpeechifyScenario(scenario)
        self.tts: TTSScenario | None = scenario_for(self.options.scenario, "tts")
        self._raw = warmed(self.tts, 24000)
        self._open = 0  # streams under way (the concurrency limit)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/audio/stream", self._stream, methods=["POST"])])

    async def _stream(self, request: Request) -> Response:
        arrived = time.perf_counter_ns()
        s = self.tts
        if s is None:
            return _error(404, "not_found", "Not Found")
        if request.headers.get("authorization") != f"Bearer {s.api_key}":
            return _error(401, "unauthorized", "Invalid API key")
        refusal = http_refusal(s.fault)
        if refusal is not None:
            return refusal
        if self.options.documented_refusal is not None:
            return JSONResponse(DOCUMENTED_REFUSALS[self.options.documented_refusal], self.options.documented_refusal)
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _error(400, "validation_failed", "the body is not JSON")
        if not isinstance(body, dict):
            return _error(400, "validation_failed", "the body is not a JSON object")
        text, voice, model = body.get("input"), body.get("voice_id"), body.get("model", DEFAULT_MODEL)
        if not (isinstance(text, str) and text.strip()) or not (isinstance(voice, str) and voice):
            return _error(400, "validation_failed", "input and voice_id are required")
        if len(text) > MAX_INPUT:
            return _error(400, "validation_failed", f"input is longer than {MAX_INPUT} characters")
        if model not in MODELS:
            return _error(400, "validation_failed", f"unknown model {str(model)[:40]!r}")
        rate = _rate(body, request.headers.get("accept", ""))
        if isinstance(rate, Response):
            return rate
        limit = self.options.concurrency
        if limit is not None and self._open >= limit:
            return _error(429, "concurrency_limit_reached", f"at most {limit} concurrent requests",
                          {"Retry-After": RETRY_AFTER})
        saw(self, "request", {"body": body, "accept": request.headers.get("accept")})
        if s.fault == "malformed":
            return Response('{"error": ', media_type="application/json")
        raw, first_speech = self._raw.get(text, rate)
        self._open += 1

        async def audio():
            try:
                for i, at in enumerate(s.send_times(arrived, text, len(raw), first_speech)):
                    await sleep_until(at)
                    if s.fault == "disconnect" and i == 2:
                        request.receive.__self__.transport.abort()  # closed with no error message, as documented
                        return
                    if i == 0:
                        record_at_write(self, text, "first_audio")
                    if i == first_speech:
                        record_at_write(self, text, "first_speech")
                    yield raw[i]
                if s.fault == "no_final":
                    await asyncio.Event().wait()  # the body never ends
            finally:
                self._open -= 1

        return StreamingResponse(audio(), media_type=f"audio/L16;rate={rate};channels=1")
