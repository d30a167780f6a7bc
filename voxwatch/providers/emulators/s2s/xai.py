"""A loopback emulator of xAI's Grok Voice Agent API (the `/v1/realtime` WebSocket), on the port
that also serves xAI's streaming speech to text (`/v1/stt`: emulators/stt/xai.py) and text to speech
(`/v1/tts`: emulators/tts/xai.py).

Serves `/v1/realtime?model=<id>` (no model: `grok-voice-latest`, the documented default); the key
must come as `Authorization: Bearer <key>`, else the upgrade is refused with 401. It opens with
`session.created` and `conversation.created`, answers a valid `session.update` with
`session.updated` (echoing the merged session) and anything it cannot take with an `error` event,
leaving the session open as xAI does for recoverable errors: an audio format other than
`audio/pcm` at 8, 16, 22.05, 24, 32, 44.1 or 48 kHz (xAI's G.711 and Opus formats are not
emulated), a `turn_detection` that is not an object whose type is `server_vad` or null (xAI's
documented shape; a bare null is refused here), bad base64, an empty or server-VAD commit
(`input_audio_buffer.commit` is only available with `turn_detection.type` null), an unknown
event. Errors carry `error.event_id`: the client event that caused them. Server VAD itself is not
emulated: a session that leaves it on gets no reply.

The reply follows the S2SScenario, spoken at the session's output rate: `response.create` gets
`response.created`, then `response.output_audio.delta` events (leading silence, then speech,
`chunk_ms` each, every `send_every_ms`) from `response_ms` (+ jitter) after the caller's speech
end, never before the `response.create`; then `response.output_audio.done`,
`response.output_audio_transcript.done` and `response.done`. The speech end is on this clock: the
arrival of the session's first `input_audio_buffer.append` plus `speech_end_for(<that append's
decoded audio>)`, the scenario's anchors being keyed by its sha256 (for the voxwatch adapter, the
clip's first 16 kHz chunk as it is). The ledger records `first_audio` and `first_speech` by the
same key.

Faults: the handshake ones refuse the upgrade; `malformed` (a broken event), `disconnect` (the
connection dropped without a close frame), `no_final` (no `response.done`), `inaudible` (silent
audio). XAIScenario adds what xAI documents beyond them: a recoverable `error` mid-reply that the
session survives, `response.create` refused by an error naming its event, the session ended
mid-reply by a `max_duration` error, and a reply that ends `cancelled`, `failed` or `incomplete`
(cut short).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import hashlib
import json
import time
import uuid
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

import websockets

from voxwatch.foundation.clock import sleep_until

from voxwatch.providers.emulators.faults import break_off, breaks, websocket_refusal
from voxwatch.providers.emulators.ledger import record
from voxwatch.providers.emulators.scenario import S2SScenario, jitter_ms, scenario_for
from voxwatch.providers.emulators.speech import ChunkCache, b64
from voxwatch.providers.emulators.stt.xai import PATH as STT_PATH, XAISTTEndpoint
from voxwatch.providers.emulators.tts.xai import PATH as TTS_PATH, XAITTSEndpoint

PATH = "/v1/realtime"
DEFAULT_MODEL = "grok-voice-latest"
PCM_RATES = (8000, 16000, 22050, 24000, 32000, 44100, 48000)
DEFAULT_FORMAT = {"type": "audio/pcm", "rate": 24000}
CLIENT_EVENTS = ("session.update", "input_audio_buffer.append", "input_audio_buffer.commit",
                 "input_audio_buffer.clear", "conversation.item.create", "conversation.item.delete",
                 "conversation.item.truncate", "response.create", "response.cancel")
ERROR_EVENTS = (None, "recoverable", "refused", "max_duration")
RESPONSE_STATUSES = ("completed", "cancelled", "failed", "incomplete")


@dataclasses.dataclass(frozen=True)
class XAIScenario(S2SScenario):
    """An S2SScenario with the xAI behaviours the shared faults do not cover."""

    # "recoverable": an unrelated error mid-reply; "refused": response.create refused; "max_duration":
    # the session ends mid-reply at its maximum duration (an error of that type, then a close)
    error_event: str | None = None
    response_status: str = "completed"  # how response.done ends the reply

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.error_event not in ERROR_EVENTS or self.response_status not in RESPONSE_STATUSES:
            raise ValueError(f"unknown xAI behaviour {self.error_event!r} / {self.response_status!r}")


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def _format_problem(fmt) -> str | None:
    """Why an audio format is refused, or None."""
    if not isinstance(fmt, dict):
        return "format must be an object with type and rate"
    if fmt.get("type") == "audio/pcm" and fmt.get("rate", DEFAULT_FORMAT["rate"]) in PCM_RATES:
        return None
    return f"unsupported audio format {fmt!r} (this emulator takes audio/pcm at {PCM_RATES} Hz)"


class _Session:
    """One WebSocket session: its configuration, its input buffer and its one reply at a time."""

    def __init__(self, emulator: "XAIVoiceAgentEmulator", ws, model: str) -> None:
        self.emulator, self.ws, self.s = emulator, ws, emulator.scenario
        self.config = {"id": _id("sess"), "object": "realtime.session", "model": model, "voice": "eve",
                       "turn_detection": {"type": "server_vad"},
                       "audio": {"input": {"format": DEFAULT_FORMAT}, "output": {"format": DEFAULT_FORMAT}}}
        self.t0: int | None = None
        self.first = b""
        self.buffered = 0
        self.last_item: str | None = None
        self.reply: asyncio.Task | None = None

    async def send(self, event: dict) -> None:
        await self.ws.send(json.dumps({"event_id": _id("event"), **event}))

    async def error(self, kind: str, message: str, cause: dict, param: str | None = None,
                    code: str | None = None) -> None:
        """An `error` event naming the client event that caused it (`cause`'s event_id)."""
        await self.send({"type": "error", "error": {"type": kind, "code": code, "message": message, "param": param,
                                                    "event_id": cause.get("event_id")}})

    async def run(self) -> None:
        await self.send({"type": "session.created", "session": self.config})
        await self.send({"type": "conversation.created", "conversation": {"id": _id("conv"),
                                                                           "object": "realtime.conversation"}})
        try:
            async for message in self.ws:
                arrived = time.perf_counter_ns()
                try:
                    event = json.loads(message)
                    kind = event["type"]
                except (ValueError, KeyError, TypeError):
                    await self.error("invalid_event", "could not parse the event", {})
                    continue
                await self.handle(kind, event, arrived)
        finally:
            if self.reply is not None:
                self.reply.cancel()

    async def handle(self, kind: str, event: dict, arrived: int) -> None:
        if kind == "session.update":
            await self.update(event)
        elif kind == "input_audio_buffer.append":
            try:
                audio = base64.b64decode(event["audio"], validate=True)
            except (KeyError, TypeError, ValueError, binascii.Error):
                await self.error("invalid_request_error", "audio must be base64", event, "audio")
                return
            if self.t0 is None:
                self.t0, self.first = arrived, audio
            self.buffered += len(audio)
        elif kind == "input_audio_buffer.commit":
            await self.commit(event)
        elif kind == "input_audio_buffer.clear":
            self.buffered = 0
            await self.send({"type": "input_audio_buffer.cleared"})
        elif kind == "response.create":
            await self.respond(event, arrived)
        elif kind not in CLIENT_EVENTS:
            await self.error("invalid_event", f"unknown event type {kind!r}", event, "type")

    async def update(self, event: dict) -> None:
        session = event.get("session")
        if not isinstance(session, dict):
            await self.error("invalid_request_error", "session must be an object", event, "session")
            return
        audio = session.get("audio") or {}
        for side in ("input", "output"):
            fmt = (audio.get(side) or {}).get("format")
            problem = None if fmt is None else _format_problem(fmt)
            if problem:
                await self.error("invalid_request_error", problem, event, f"session.audio.{side}.format")
                return
        detection = session.get("turn_detection", self.config["turn_detection"])
        if not isinstance(detection, dict) or detection.get("type") not in ("server_vad", None):
            await self.error("invalid_request_error", "turn_detection.type must be server_vad or null", event,
                             "session.turn_detection")
            return
        for side in ("input", "output"):
            fmt = (audio.get(side) or {}).get("format")
            if fmt is not None:
                self.config["audio"][side] = {**self.config["audio"][side], "format": fmt}
        self.config.update({k: v for k, v in session.items() if k != "audio"})
        await self.send({"type": "session.updated", "session": self.config})

    async def commit(self, event: dict) -> None:
        if self.config["turn_detection"].get("type") is not None:
            await self.error("invalid_request_error", "input_audio_buffer.commit is only available when "
                             "turn_detection type is null", event)
        elif not self.buffered:
            await self.error("invalid_request_error", "the input audio buffer is empty", event)
        else:
            item = _id("item")
            await self.send({"type": "input_audio_buffer.committed", "previous_item_id": self.last_item,
                             "item_id": item})
            self.last_item, self.buffered = item, 0

    async def respond(self, event: dict, arrived: int) -> None:
        if self.s.error_event == "refused":
            await self.error("invalid_request_error", "the response could not be created", event)
        elif self.reply is not None and not self.reply.done():
            await self.error("invalid_request_error", "a response is already in progress", event,
                             code="conversation_already_has_active_response")
        else:
            response = _id("resp")
            await self.send({"type": "response.created", "response": {
                "id": response, "object": "realtime.response", "status": "in_progress", "output": []}})
            self.reply = asyncio.create_task(self.speak(response, arrived))

    def start_ns(self, requested_at: int) -> int:
        """When the reply's first chunk goes out: response_ms (+ jitter) after the caller's speech end."""
        s = self.s
        if self.t0 is None:
            return requested_at + int(s.response_ms * 1e6)
        end_of_speech = self.t0 + int(s.speech_end_for(self.first) * 1e9)
        return max(requested_at, end_of_speech + int((s.response_ms + jitter_ms(self.first, s.jitter_ms)) * 1e6))

    async def mishap(self, i: int) -> bool:
        """Commit the scenario's mid-reply fault or xAI behaviour before chunk i; True ends the reply."""
        s = self.s
        if i == 1 and s.fault == "malformed":
            await self.ws.send('{"type": "response.output_audio.delta", "delta": ')
        elif i == 1 and s.error_event == "recoverable":
            await self.error("invalid_request_error", "a problem unrelated to this turn; the session stays open",
                             {"event_id": _id("event")})
        elif i == 1 and s.error_event == "max_duration":
            await self.error("max_duration", "exceeded the maximum conversation duration", {})
            await self.ws.close(1000)
            return True
        elif i == 2 and breaks(s.fault):
            await break_off(self.ws, s.fault)
            return True
        return False

    async def speak(self, response: str, requested_at: int) -> None:
        s = self.s
        rate = self.config["audio"]["output"]["format"].get("rate", DEFAULT_FORMAT["rate"])
        chunks, first_speech = await asyncio.to_thread(self.emulator.chunks.get, s.transcript, rate)
        if s.response_status != "completed":
            chunks = chunks[: max(1, len(chunks) // 2)]  # cut short
        part = {"response_id": response, "item_id": _id("item"), "output_index": 0, "content_index": 0}
        stream = hashlib.sha256(self.first).hexdigest()  # the ledger's key: the first append's audio
        start, every = self.start_ns(requested_at), int(s.send_every_ms * 1e6)
        for i, data in enumerate(chunks):
            await sleep_until(start + i * every)
            if await self.mishap(i):
                return
            for what in ("first_audio",) * (i == 0) + ("first_speech",) * (i == first_speech):
                record(self.emulator, stream, what)
            await self.send({"type": "response.output_audio.delta", **part, "delta": data})
        for kind in ("response.output_audio.done", "response.output_audio_transcript.done"):
            await self.send({"type": kind, **part, **({"transcript": s.transcript} if "transcript" in kind else {})})
        if s.fault != "no_final":
            await self.send({"type": "response.done", "response": self.outcome(response, part["item_id"])})

    def outcome(self, response: str, item: str) -> dict:
        """The response object response.done carries, with the scenario's status."""
        status = self.s.response_status
        return {"id": response, "object": "realtime.response", "status": status,
                "status_details": None if status == "completed" else {"type": status, "reason": "emulated"},
                "output": [{"id": item, "type": "message", "role": "assistant", "status": status,
                            "content": [{"type": "audio", "transcript": self.s.transcript}]}]}


class XAIVoiceAgentEmulator:
    """xAI's APIs on one port, as api.x.ai serves them: the Voice Agent API here, its speech to text
    (`emulators/stt/xai.py`) and its text to speech (`emulators/tts/xai.py`), each from its board's
    scenario; an API whose board the scenario leaves out answers 404."""

    def __init__(self, scenario) -> None:
        s2s = scenario_for(scenario, "s2s")  # a plain S2SScenario (voxwatch emulate's) has xAI's defaults
        self.scenario = s2s if s2s is None or isinstance(s2s, XAIScenario) else XAIScenario(**dataclasses.asdict(s2s))
        if self.scenario is not None:
            self.chunks = ChunkCache(self.scenario, b64)
            self.chunks.get(self.scenario.transcript, DEFAULT_FORMAT["rate"])  # paid before any stream is timed
        self.speech = {STT_PATH: XAISTTEndpoint(self, scenario_for(scenario, "stt")),
                       TTS_PATH: XAITTSEndpoint(self, scenario_for(scenario, "tts"))}

    def process_request(self, connection, request):
        path = urlsplit(request.path).path
        endpoint = self.speech.get(path)
        scenario = endpoint.s if endpoint is not None else self.scenario if path == PATH else None
        if scenario is None:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        if request.headers.get("Authorization") != f"Bearer {scenario.api_key}":
            return connection.respond(HTTPStatus.UNAUTHORIZED, "Incorrect API key provided\n")
        if endpoint is not None:
            return endpoint.process_request(connection, request)
        return websocket_refusal(connection, scenario.fault)

    async def handle(self, ws) -> None:
        path, query = urlsplit(ws.request.path).path, urlsplit(ws.request.path).query
        try:
            if path in self.speech:
                await self.speech[path].handle(ws)
            else:
                await _Session(self, ws, parse_qs(query).get("model", [DEFAULT_MODEL])[0]).run()
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it
