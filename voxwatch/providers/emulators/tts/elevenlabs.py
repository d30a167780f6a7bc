"""A loopback emulator of ElevenLabs' TTS (stream-input WebSocket and HTTP streaming) and Scribe
v2 Realtime STT, on one port as the vendor serves them on one host (an ASGI app for uvicorn).

TTS takes an optional `language_code` (the WebSocket's query, the HTTP body) that the model must
speak, else 400 `unsupported_language`. Every endpoint checks the `xi-api-key` header (the stream-input WebSocket also takes the key as
`xi_api_key` in its first message). TTS sends `pcm_<rate>` audio (little-endian int16) - leading
silence, then the speech (a sharp-onset tone or eSpeak NG) - the first chunk `ttfb_ms` after the
text that triggers generation arrived (a `flush: true` message or the closing `{"text": ""}`; the
HTTP request), the rest every `send_every_ms` (the speech `gaming_delay_ms` after the silence,
when set). The WebSocket sends `{"audio": <base64>}` messages, then `{"isFinal": true}` once the
input has ended, and closes; HTTP streams the raw PCM as a chunked body. STT opens with
`session_started`, sends `partial_transcript`s on a cadence from `first_partial_ms` after the
start of speech, and `committed_transcript` `final_ms` after the end of speech - not before a
commit arrived, under the manual commit strategy; a commit after the final gets an empty one.

The stream-input WebSocket closes as the vendor documents after `inactivity_timeout` seconds (query
parameter, default 20, at most 180; see voxwatch/providers/tts/elevenlabs.py for the sources) without a text
message while its input is open: the error `input_timeout_exceeded`, then close 1008. The timer
runs from the connection's opening, then from each text message the emulator reads (after a
flush it reads again only once the audio is sent: a little more lenient than a server that reads
meanwhile). `ElevenLabsScenario.inactivity_scale` shortens it for tests (the emulator waits the
timeout times the scale); 1, the vendor's seconds, otherwise.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
import uuid
from dataclasses import dataclass
from typing import Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.tts.elevenlabs import TTS_LANGUAGES

from voxwatch.providers.emulators.faults import break_off, breaks, http_refusal
from voxwatch.providers.emulators.ledger import record, saw, sent_key
from voxwatch.providers.emulators.scenario import STTScenario, TTSScenario, scenario_for
from voxwatch.providers.emulators.speech import ChunkCache, b64
from voxwatch.providers.emulators.stamped_h11 import record_at_write

INVALID_KEY = {"detail": {"status": "invalid_api_key", "message": "Invalid API key"}}
INACTIVITY_S, MAX_INACTIVITY_S = 20, 180  # stream-input's inactivity_timeout: default, maximum


@dataclass(frozen=True)
class ElevenLabsScenario:
    """ElevenLabs' own behaviour on top of the shared scenarios (`scenario`: one, or a Scenarios bundle)."""

    scenario: object
    inactivity_scale: float = 1.0  # emulator seconds per second of the stream-input inactivity timeout

    def __post_init__(self) -> None:
        if not self.inactivity_scale > 0:
            raise ValueError("inactivity_scale must be positive")


class _Inactive(Exception):
    """No text message within the stream-input inactivity timeout."""


def _abort(receive) -> None:
    """Drop the connection under uvicorn without a close frame or the rest of the body (the disconnect fault)."""
    receive.__self__.transport.abort()


STT_FORMATS = {"ulaw_8000": 8000}
"""Scribe's audio formats other than pcm_<rate>: G.711 mu-law at 8 kHz."""

def _language_refusal(model_id: str | None, language_code: str | None) -> JSONResponse | None:
    """A TTS request's `language_code` (optional) must be one the model speaks (providers.tts.elevenlabs TTS_LANGUAGES)."""
    if language_code is None or language_code in TTS_LANGUAGES.get(model_id or "", frozenset({"en"})):
        return None
    return JSONResponse({"detail": {"status": "unsupported_language",
                                    "message": f"Model {model_id} does not support language_code {language_code}."}}, 400)


def _pcm_rate(output_format: str | None) -> int | None:
    match = re.fullmatch(r"pcm_(\d+)", output_format or "")
    return int(match.group(1)) if match else None


def _refusal(key: str | None, scenario: TTSScenario | STTScenario | None) -> Response | None:
    """The HTTP answer that refuses a request or an upgrade: no such API here, a wrong key, a handshake fault."""
    if scenario is None:
        return JSONResponse({"detail": "Not Found"}, 404)
    if key is not None and key != scenario.api_key:
        return JSONResponse(INVALID_KEY, 401)
    return http_refusal(scenario.fault)


class ElevenLabsEmulator:
    def __init__(self, scenario) -> None:
        self.options = scenario if isinstance(scenario, ElevenLabsScenario) else ElevenLabsScenario(scenario)
        scenario = self.options.scenario
        self.tts: TTSScenario | None = scenario_for(scenario, "tts")
        self.stt: STTScenario | None = scenario_for(scenario, "stt")
        # raw PCM for the HTTP body, base64 for the WebSocket's JSON
        self._raw = ChunkCache(self.tts) if self.tts is not None else None
        self._encoded = ChunkCache(self.tts, b64) if self.tts is not None else None
        if self.tts is not None:
            self._raw.get("", 24000)  # first-use costs paid before any stream is timed
            self._encoded.get("", 24000)

    def app(self) -> Starlette:
        return Starlette(routes=[
            WebSocketRoute("/v1/text-to-speech/{voice_id}/stream-input", self._tts_websocket),
            Route("/v1/text-to-speech/{voice_id}/stream", self._tts_http, methods=["POST"]),
            WebSocketRoute("/v1/speech-to-text/realtime", self._stt_websocket),
        ])

    # --- TTS audio, shared by both transports ---

    def _record(self, text: str, i: int, first_speech: int, note: Callable[[object, str, str], None] = record) -> None:
        """Calibration (emulators/ledger.py): the first chunk and the first speech chunk go out now (`note`:
        `record_at_write` where the server library writes the chunk, stamped at its socket write), and each
        chunk (ledger.sent_key) when the scenario injects stalls."""
        if i == 0:
            note(self, text, "first_audio")
        if i == first_speech:
            note(self, text, "first_speech")
        if self.tts.stalls:
            note(self, text, sent_key(i))

    # --- TTS: stream-input WebSocket ---

    async def _tts_websocket(self, ws: WebSocket) -> None:
        key = ws.headers.get("xi-api-key")
        refusal = _refusal(key, self.tts)
        timeout = ws.query_params.get("inactivity_timeout", str(INACTIVITY_S))
        refusal = refusal or _language_refusal(ws.query_params.get("model_id"), ws.query_params.get("language_code"))
        if refusal is None and not (timeout.isdigit() and 0 < int(timeout) <= MAX_INACTIVITY_S):
            refusal = JSONResponse({"detail": [{"loc": ["query", "inactivity_timeout"],
                                                "msg": f"must be a whole number of seconds up to {MAX_INACTIVITY_S}"}]}, 422)
        if refusal is not None:
            await ws.send_denial_response(refusal)
            return
        await ws.accept()
        try:
            await self._tts_stream(ws, key, _pcm_rate(ws.query_params.get("output_format", "mp3_44100")), int(timeout))
        except _Inactive:
            await self._fail(ws, "input_timeout_exceeded", (
                f"Have not received a new text input within the timeout of {timeout} seconds. Streaming input "
                'terminated. Please make sure to either feed the input in the timely manner, or to send the end '
                'of input text (empty string "") when done.'))
        except WebSocketDisconnect:
            pass  # the client went away; nothing is owed to it

    async def _text(self, ws: WebSocket, timeout_s: int) -> str:
        """The next message while the input is open; _Inactive when none comes within the timeout."""
        try:
            return await asyncio.wait_for(ws.receive_text(), timeout_s * self.options.inactivity_scale)
        except asyncio.TimeoutError:
            raise _Inactive from None

    async def _fail(self, ws: WebSocket, error: str, message: str) -> None:
        await ws.send_text(json.dumps({"message": message, "error": error, "code": 1008}))
        await ws.close(1008, message[:120])

    async def _tts_stream(self, ws: WebSocket, key: str | None, rate: int | None, timeout_s: int) -> None:
        s = self.tts
        try:
            first = json.loads(await self._text(ws, timeout_s))
        except json.JSONDecodeError:
            first = {}
        if not isinstance(first, dict) or first.get("text") != " ":
            return await self._fail(ws, "invalid_input_message", "The first message must have text ' '.")
        if key is None and first.get("xi_api_key") != s.api_key:
            return await self._fail(ws, "invalid_api_key", "Invalid API key")
        if rate is None:
            return await self._fail(ws, "invalid_output_format", "This emulator serves pcm_<rate> output only.")
        parts: list[str] = []
        ended, arrived = False, None
        while arrived is None and not ended:
            message = json.loads(await self._text(ws, timeout_s))
            at = time.perf_counter_ns()
            text = str(message.get("text", ""))
            if text == "":
                ended = True
                arrived = at if parts else None
            else:
                parts.append(text)
                arrived = at if message.get("flush") else None
        if arrived is not None:
            transcript = "".join(parts).strip()
            encoded, first_speech = self._encoded.get(transcript, rate)
            for i, at in enumerate(s.send_times(arrived, transcript, len(encoded), first_speech)):
                await sleep_until(at)
                if s.fault == "malformed" and i == 1:
                    await ws.send_text('{"audio": ')
                elif breaks(s.fault) and i == 2:
                    return await break_off(ws, s.fault)
                self._record(transcript, i, first_speech)
                await ws.send_text(json.dumps({"audio": encoded[i], "isFinal": None, "normalizedAlignment": None,
                                               "alignment": None}))
        while not ended:  # the input stays open until `{"text": ""}`
            ended = str(json.loads(await self._text(ws, timeout_s)).get("text", "")) == ""
        if s.fault == "no_final":
            while True:
                await ws.receive_text()
        await ws.send_text(json.dumps({"isFinal": True}))
        await ws.close(1000)

    # --- TTS: HTTP streaming ---

    async def _tts_http(self, request: Request) -> Response:
        arrived = time.perf_counter_ns()
        refusal = _refusal(request.headers.get("xi-api-key", ""), self.tts)
        if refusal is not None:
            return refusal
        s = self.tts
        try:
            body = await request.json()
            text = str(body["text"])
        except (json.JSONDecodeError, KeyError, TypeError):
            return JSONResponse({"detail": [{"loc": ["body", "text"], "msg": "Field required"}]}, 422)
        refusal = _language_refusal(body.get("model_id"), body.get("language_code"))
        if refusal is not None:
            return refusal
        rate = _pcm_rate(request.query_params.get("output_format", "mp3_44100"))
        if rate is None:
            return JSONResponse({"detail": {"status": "invalid_output_format",
                                            "message": "This emulator serves pcm_<rate> output only."}}, 400)
        if s.fault == "malformed":
            return Response('{"detail": ', media_type="application/json")
        raw, first_speech = self._raw.get(text, rate)

        async def body_chunks():
            for i, at in enumerate(s.send_times(arrived, text, len(raw), first_speech)):
                await sleep_until(at)
                if s.fault == "disconnect" and i == 2:
                    _abort(request.receive)
                    return
                self._record(text, i, first_speech, record_at_write)
                yield raw[i]
            if s.fault == "no_final":
                await asyncio.Event().wait()  # the body never ends

        return StreamingResponse(body_chunks(), media_type="audio/pcm")

    # --- STT: Scribe v2 Realtime ---

    async def _stt_websocket(self, ws: WebSocket) -> None:
        refusal = _refusal(ws.headers.get("xi-api-key", ""), self.stt)
        if refusal is not None:
            await ws.send_denial_response(refusal)
            return
        await ws.accept()
        query = ws.query_params
        manual = query.get("commit_strategy", "manual") == "manual"
        audio_format = query.get("audio_format", "pcm_16000")
        rate = STT_FORMATS.get(audio_format) or _pcm_rate(audio_format)
        if rate is None:
            await ws.send_text(json.dumps({"message_type": "input_error",
                                           "error": f"Unsupported audio_format {audio_format[:40]!r}."}))
            await ws.close(1008)
            return
        await ws.send_text(json.dumps({"message_type": "session_started", "session_id": uuid.uuid4().hex, "config": {
            "sample_rate": rate, "audio_format": audio_format,
            "language_code": query.get("language_code"), "model_id": query.get("model_id"),
            "commit_strategy": "manual" if manual else "vad", "include_timestamps": False}}))
        committed, final_sent = asyncio.Event(), asyncio.Event()
        if not manual:
            committed.set()
        speaker: asyncio.Task | None = None
        received: list[bytes] = []  # the segment's audio, noted (seen:stream) when it is committed
        try:
            while True:
                message = json.loads(await ws.receive_text())
                arrived = time.perf_counter_ns()
                if message.get("message_type") != "input_audio_chunk":
                    await ws.send_text(json.dumps({"message_type": "input_error",
                                                   "error": "Expected an input_audio_chunk message."}))
                    continue
                audio = base64.b64decode(message.get("audio_base_64") or "")
                received.append(audio)
                if audio and speaker is None:
                    speaker = asyncio.create_task(self._transcribe(ws, arrived, audio, committed, final_sent))
                if message.get("commit"):
                    saw(self, "stream", {"audio_format": audio_format, "sample_rate": message.get("sample_rate"),
                                         "audio": b"".join(received).hex()})
                    received = []
                    if final_sent.is_set() or speaker is None:
                        await ws.send_text(json.dumps({"message_type": "committed_transcript", "text": ""}))
                    committed.set()
        except WebSocketDisconnect:
            pass  # the client went away; nothing is owed to it
        finally:
            if speaker is not None:
                speaker.cancel()

    async def _transcribe(self, ws: WebSocket, t0: int, first_chunk: bytes, committed: asyncio.Event,
                          final_sent: asyncio.Event) -> None:
        s = self.stt
        turn = s.turn(first_chunk, t0)
        try:
            async for k in turn.partials():
                if s.fault == "malformed":
                    await ws.send_text('{"message_type": "partial_transcript", "text": ')
                elif breaks(s.fault):
                    return await break_off(ws, s.fault)
                if k == 1:
                    record(self, turn.transcript, "first_partial")
                await ws.send_text(json.dumps({"message_type": "partial_transcript",
                                               "text": " ".join(turn.words[:k])}))
            if s.fault == "no_final":
                return
            await committed.wait()
            await sleep_until(turn.final_at)
            record(self, turn.transcript, "final")
            await ws.send_text(json.dumps({"message_type": "committed_transcript", "text": turn.transcript}))
            final_sent.set()
        except WebSocketDisconnect:
            pass
