"""A loopback emulator of Gladia's live API v2: `POST /v2/live`, then the session's WebSocket.

What it speaks (sources in voxwatch/providers/stt/gladia.py, read 2026-12-07):
- `POST /v2/live` checks `x-gladia-key` (401 otherwise) and the config: `encoding` `wav/pcm`,
  `wav/alaw` or `wav/ulaw`, `bit_depth` 8/16/24/32, `sample_rate` 8000/16000/32000/44100/48000,
  `channels` >= 1, `model` `solaria-1` (a 400 otherwise; the body of a refusal is this emulator's,
  Gladia's is not documented). Gladia allows 30 concurrent live sessions on paid plans
  (chapters/limits-and-specifications/concurrency.mdx; "On demand" on Enterprise: `GladiaScenario.
  live_concurrency`): a POST while that many sessions are open gets a 429 (Gladia documents no
  Retry-After for it, so none is sent; the `rate_limited` fault sends one).
  The answer is `{"id", "created_at", "url"}`, the url pointing back here with the session's token.
- The WebSocket `/v2/live?token=<id>`: an unknown token is refused (HTTP 404, this emulator's
  choice); a session whose recording has ended is closed with 4403, as a third party reports of
  Gladia (dev.to/florian13/the-stt-websocket-accepts-the-handshake-then-closes-4403-27l9).
- Audio as binary frames or `{"type": "audio_chunk", "data": {"chunk": <base64>}}`, acknowledged
  (byte and time ranges) only with `receive_acknowledgments`.
- From the first audio's arrival (the emulator's t0), with `receive_partial_transcripts`, partial
  `transcript`s (`is_final: false`, the utterance so far, all sharing `data.id`) on the STTScenario
  cadence from `first_partial_ms` after the start of speech; the final (`is_final: true`, `words`
  with their timings and confidence in seconds from the session's start) `final_ms` after the end of
  speech (the endpointing silence, as the scenario sets it).
- `{"type": "stop_recording"}` notes the encoding, rate and every byte received (ledger
  `seen:stream`), lets a final not yet sent go (at the scenario's time), acknowledges the stop (with acknowledgments on),
  sends `end_recording` and `end_session` (with lifecycle events on) and closes 1000.
  Lifecycle `start_session` and `start_recording` open the session and its first audio.
- Faults (faults.py): the handshake ones refuse the POST; `malformed`, `disconnect`,
  `close:<code>` at the first partial; `no_final` (no final, and stop_recording gets no answer).
- Not emulated: post-processing add-ons, the 3-hour session limit, reconnecting to a session.

`QUICKSTART` is the message sequence of Gladia's quickstart and API reference, replayed by the
contract test through the adapter (`GladiaEmulator(scenario, replay=True)`).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import datetime as dt
import json
import time
import uuid

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.emulators.faults import break_off, breaks, http_refusal
from voxwatch.providers.emulators.ledger import record, saw
from voxwatch.providers.emulators.scenario import STTScenario, scenario_as, scenario_for

PATH = "/v2/live"
ENCODINGS = {"wav/pcm", "wav/alaw", "wav/ulaw"}
BIT_DEPTHS = {8, 16, 24, 32}
SAMPLE_RATES = {8000, 16000, 32000, 44100, 48000}
MODELS = ("solaria-1",)
MAX_CONCURRENT = 30
UTTERANCE_ID = "00_00000000"

# The quickstart's "Using the API" sequence, gladiaio/docs chapters/live-stt/quickstart.mdx @ ec35f7d900ac
# (docs.gladia.io, read 2026-12-07), with the server messages its steps point to, quoted from the same
# repository: (1) the client's POST /v2/live body, exactly; (2) the documented answer; (3) the client's
# audio; (4) `transcript` messages: the asyncapi.yaml example (there in YAML, here as the same JSON) and
# the multiple-channels page's example (which has no is_final); (5) the client's stop_recording;
# (6) asyncapi.yaml's end_recording and end_session examples, then the close with code 1000.
QUICKSTART = {
    "request": {"encoding": "wav/pcm", "sample_rate": 16000, "bit_depth": 16, "channels": 1},
    "response": {"id": "636c70f6-92c1-4026-a8b6-0dfe3ecf826f",
                 "url": "wss://api.gladia.io/v2/live?token=636c70f6-92c1-4026-a8b6-0dfe3ecf826f"},
    "transcripts": [
        {"session_id": "550e8400-e29b-41d4-a716-446655440000", "created_at": "2025-09-19T12:34:10Z",
         "type": "transcript", "data": {"id": "00-00000011", "is_final": True, "utterance": {
             "start": 0.0, "end": 0.48, "confidence": 0.91, "channel": 0,
             "words": [{"word": "Hello", "start": 0.0, "end": 0.35, "confidence": 0.91},
                       {"word": "world", "start": 0.36, "end": 0.48, "confidence": 0.91}],
             "text": "Hello world.", "language": "en"}}},
        {"type": "transcript", "session_id": "de70f43f-3041-46e0-892c-8e7f53800a22",
         "created_at": "2025-04-09T08:44:16.471Z", "data": {"id": "00_00000000", "utterance": {
             "text": "Hello, I'm Sami. I'm the first speaker", "start": 0.188, "end": 2.852, "language": "en",
             "channel": 0}}},
    ],
    "ending": [
        {"session_id": "550e8400-e29b-41d4-a716-446655440000", "created_at": "2025-09-19T12:36:00Z",
         "type": "end_recording", "data": {"reason": "user_request", "received_total_bytes": 1048576}},
        {"session_id": "550e8400-e29b-41d4-a716-446655440000", "created_at": "2025-09-19T12:36:05Z",
         "type": "end_session"},
    ],
}


@dataclasses.dataclass(frozen=True)
class GladiaScenario(STTScenario):
    """An STTScenario on a Gladia plan: `live_concurrency` live sessions at once (30 on Paid; Enterprise
    plans get theirs "on demand", so a calibration at 64 streams serves one of those)."""

    live_concurrency: int = MAX_CONCURRENT


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _config_problem(config: object) -> str | None:
    """What is wrong with a POST /v2/live body, or None."""
    if not isinstance(config, dict):
        return "the body must be a JSON object"
    if config.get("encoding", "wav/pcm") not in ENCODINGS:
        return "encoding must be one of wav/pcm, wav/alaw, wav/ulaw"
    if config.get("bit_depth", 16) not in BIT_DEPTHS:
        return "bit_depth must be one of 8, 16, 24, 32"
    if config.get("sample_rate", 16000) not in SAMPLE_RATES:
        return "sample_rate must be one of 8000, 16000, 32000, 44100, 48000"
    channels = config.get("channels", 1)
    if not isinstance(channels, int) or channels < 1:
        return "channels must be a positive integer"
    if config.get("model", MODELS[0]) not in MODELS:
        return f"model must be one of {', '.join(MODELS)}"
    return None


class _Session:
    """One live session: its config, then (once connected) its stream's state."""

    def __init__(self, config: dict) -> None:
        self.id = str(uuid.uuid4())
        self.config = config
        messages = config.get("messages_config") or {}
        self.partials = messages.get("receive_partial_transcripts", False) is True
        self.finals = messages.get("receive_final_transcripts", True) is not False
        self.acks = messages.get("receive_acknowledgments", False) is True
        self.lifecycle = messages.get("receive_lifecycle_events", False) is True
        self.ended = False
        self.audio = bytearray()
        self.transcript = ""
        self.words: list[str] = []
        self.span_s = (0.0, 0.0)
        self.final_sent = False
        self.speaker: asyncio.Task | None = None

    def message(self, kind: str, **fields) -> str:
        return json.dumps({"session_id": self.id, "created_at": _now(), "type": kind, **fields})

    def transcript_message(self, k: int, final: bool) -> str:
        start, end = self.span_s
        step = (end - start) / max(1, len(self.words))
        words = [{"word": w, "start": round(start + i * step, 3), "end": round(start + (i + 1) * step, 3),
                  "confidence": 0.97} for i, w in enumerate(self.words[:k])]
        return self.message("transcript", data={"id": UTTERANCE_ID, "is_final": final, "utterance": {
            "text": " ".join(self.words[:k]), "start": round(start, 3), "end": words[-1]["end"] if words else start,
            "confidence": 0.97, "channel": 0, "language": "en", "words": words}})

    @property
    def bytes_per_second(self) -> int:
        c = self.config
        return c.get("sample_rate", 16000) * c.get("bit_depth", 16) // 8 * c.get("channels", 1)


class GladiaEmulator:
    def __init__(self, scenario, replay: bool = False) -> None:
        found = scenario_for(scenario, "stt")
        self.scenario: GladiaScenario | None = scenario_as(scenario, "stt", GladiaScenario) if found else None
        self.replay = replay
        self.max_concurrent = self.scenario.live_concurrency if found else MAX_CONCURRENT
        self.sessions: dict[str, _Session] = {}
        self.open = 0  # WebSockets open now
        self.requests: list[dict] = []  # every POST body received
        self.received: list[str | bytes] = []  # replay: what the client sent on the WebSocket

    def app(self) -> Starlette:
        return Starlette(routes=[Route(PATH, self._create, methods=["POST"]), WebSocketRoute(PATH, self._live)])

    async def _create(self, request: Request) -> Response:
        if self.scenario is None:
            return JSONResponse({"statusCode": 404, "message": "Not Found"}, 404)
        if request.headers.get("x-gladia-key") != self.scenario.api_key:
            return JSONResponse({"statusCode": 401, "message": "Invalid or missing x-gladia-key"}, 401)
        refusal = http_refusal(self.scenario.fault)
        if refusal is not None:
            return refusal
        try:
            config = json.loads(await request.body())
        except ValueError:
            config = None
        problem = _config_problem(config)
        if problem:
            return JSONResponse({"statusCode": 400, "message": problem}, 400)
        self.requests.append(config)
        if self.open >= self.max_concurrent:
            return JSONResponse({"statusCode": 429, "message": "Too many concurrent sessions"}, 429)
        session = _Session(config)
        if self.replay:
            session.id = QUICKSTART["response"]["id"]
        self.sessions[session.id] = session
        host = request.headers.get("host", f"{request.url.hostname}:{request.url.port}")
        return JSONResponse({"id": session.id, "created_at": _now(), "url": f"ws://{host}{PATH}?token={session.id}"})

    async def _live(self, ws: WebSocket) -> None:
        session = self.sessions.get(ws.query_params.get("token", ""))
        if session is None:
            await ws.send_denial_response(JSONResponse({"statusCode": 404, "message": "Session not found"}, 404))
            return
        await ws.accept()
        if session.ended:
            await ws.close(4403, "Session already ended")
            return
        self.open += 1
        try:
            if self.replay:
                await self._replay(ws)
                return
            if session.lifecycle:
                await ws.send_text(session.message("start_session"))
            await self._serve(ws, session)
        except WebSocketDisconnect:
            pass  # the client went away; nothing is owed to it
        finally:
            self.open -= 1
            session.ended = True
            if session.speaker is not None:
                session.speaker.cancel()

    async def _serve(self, ws: WebSocket, session: _Session) -> None:
        while True:
            message = await ws.receive()
            if message["type"] == "websocket.disconnect":
                return
            audio, text = message.get("bytes"), message.get("text")
            if text is not None:
                try:
                    data = json.loads(text)
                    kind = data.get("type")
                    if kind == "audio_chunk":
                        audio = base64.b64decode(data["data"]["chunk"], validate=True)
                except (ValueError, AttributeError, KeyError, TypeError, binascii.Error):
                    kind = None
                if kind == "stop_recording":
                    await self._stop(ws, session)
                    return
                if kind != "audio_chunk":
                    continue  # Gladia documents no refusal of an unknown message
            if not audio:
                continue
            start = len(session.audio)
            session.audio += audio
            if session.speaker is None:
                if session.lifecycle:
                    await ws.send_text(session.message("start_recording"))
                session.speaker = asyncio.create_task(self._speak(ws, time.perf_counter_ns(), audio, session))
            if session.acks:
                rate = session.bytes_per_second
                await ws.send_text(session.message("audio_chunk", acknowledged=True, error=None, data={
                    "byte_range": [start, len(session.audio) - 1],
                    "time_range": [round(start / rate, 3), round(len(session.audio) / rate, 3)]}))

    async def _stop(self, ws: WebSocket, session: _Session) -> None:
        """stop_recording: the last final, the acknowledgment, the end of the recording and session, the close."""
        c = session.config
        saw(self, "stream", {"encoding": c.get("encoding"), "sample_rate": c.get("sample_rate"),
                             "bit_depth": c.get("bit_depth"), "audio": session.audio.hex()})
        if self.scenario.fault == "no_final":
            await ws.receive()  # no answer: the session hangs until the client goes
            return
        if session.speaker is not None:
            await session.speaker  # the last final, at the scenario's time (stop_recording does not move it)
        if session.acks:
            await ws.send_text(session.message("stop_recording", acknowledged=True, error=None, data={
                "recording_duration": round(len(session.audio) / session.bytes_per_second, 3),
                "recording_left_to_process": 0.0}))
        if session.lifecycle:
            await ws.send_text(session.message("end_recording", data={
                "reason": "user_request", "received_total_bytes": len(session.audio)}))
            await ws.send_text(session.message("end_session"))
        await ws.close(1000)

    async def _final(self, ws: WebSocket, session: _Session) -> None:
        session.final_sent = True
        if session.finals:
            record(self, session.transcript, "final")
            await ws.send_text(session.transcript_message(len(session.words), True))

    async def _speak(self, ws: WebSocket, t0: int, first_chunk: bytes, session: _Session) -> None:
        s = self.scenario
        turn = s.turn(first_chunk, t0)
        session.transcript, session.words = turn.transcript, turn.words
        session.span_s = s.anchors_for(first_chunk)
        try:
            async for k in turn.partials():
                if s.fault == "malformed":
                    await ws.send_text('{"type": "transcript", "data": ')
                elif breaks(s.fault):
                    return await break_off(ws, s.fault)
                if session.partials:
                    if k == 1:
                        record(self, session.transcript, "first_partial")
                    await ws.send_text(session.transcript_message(k, False))
            if s.fault == "no_final":
                return
            await sleep_until(turn.final_at)
            await self._final(ws, session)
        except WebSocketDisconnect:
            pass

    async def _replay(self, ws: WebSocket) -> None:
        """QUICKSTART: the transcripts after the first audio, the ending on stop_recording, then 1000."""
        transcripts = list(QUICKSTART["transcripts"])
        while True:
            message = await ws.receive()
            if message["type"] == "websocket.disconnect":
                return
            got = message.get("bytes") if message.get("bytes") is not None else message.get("text")
            self.received.append(got)
            if isinstance(got, bytes):
                for event in transcripts:
                    await ws.send_text(json.dumps(event))
                transcripts = []
            elif json.loads(got).get("type") == "stop_recording":
                for event in QUICKSTART["ending"]:
                    await ws.send_text(json.dumps(event))
                await ws.close(1000)
                return
