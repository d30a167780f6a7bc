"""A loopback emulator of Alibaba's Model Studio realtime WebSocket (`/api-ws/v1/realtime?model=<id>`):
Qwen-Omni-Realtime (speech to speech, below) and, for a `-tts` model, Qwen-TTS Realtime (`_TTSSession`,
at the end of this file, with the events Alibaba's pages quote), one host as Alibaba serves them.

Handshake: the path and a `model` query parameter are required (404 / 400 otherwise); a missing
or wrong `Authorization: Bearer <key>` is refused with 401 and an `InvalidApiKey` body, as Model
Studio answers a refused key; the scenario's handshake faults refuse the upgrade likewise.

Session: `session.created` first (server VAD on, pcm16 in, pcm24 out); `session.update` is
answered by `session.updated`, or by an `error` event (invalid_request_error / invalid_value,
with the `param`) when the modalities or the audio formats are not ones the API takes (input
"pcm16" or "pcm" - 16 kHz; output "pcm24" or "pcm" - 24 kHz). `input_audio_buffer.append` takes
base64 16-bit PCM; `input_audio_buffer.commit` is answered by `input_audio_buffer.committed` and
`conversation.item.created` (an error when the buffer is empty); `session.finish` by
`session.finished`, then the server closes.

The reply follows the S2SScenario: `response.audio.delta` events (leading silence, then speech,
24 kHz, `chunk_ms` each, one every `send_every_ms`) from `response_ms` (+ jitter) after the end of
the caller's speech on this clock - the first append's arrival plus `speech_end_for(<its decoded
PCM>)`, the scenario's anchors being keyed by the sha256 of those bytes - then
`response.audio.done`, `response.output_item.done` and `response.done` (status "completed").
Manual mode (`turn_detection: null`): the reply never starts before `response.create`. Server VAD
(the default): the server commits the turn itself `silence_duration_ms` after the speech ends and
answers from there, with no `response.create`.

Stream faults: `malformed` (a broken JSON event), `disconnect` (the socket dropped without a close
frame), `no_final` (no `response.done`), `inaudible` (silent audio). The ledger records
`first_audio` and `first_speech` by the stream's first-append key (sha256 hex) just before each send.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
import time
import uuid
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

import websockets

from voxwatch.foundation.clock import sleep_until

from voxwatch.providers.emulators.faults import break_off, breaks, websocket_refusal
from voxwatch.providers.emulators.ledger import record
from voxwatch.providers.emulators.scenario import S2SScenario, TTSScenario, jitter_ms, scenario_for
from voxwatch.providers.emulators.speech import ChunkCache, b64

PATH = "/api-ws/v1/realtime"
RATE = 24000
INPUT_FORMATS = ("pcm16", "pcm")  # 16 kHz; "pcm" in the newer pages
OUTPUT_FORMATS = ("pcm24", "pcm")  # 24 kHz
MODALITIES = (["text"], ["text", "audio"], ["audio", "text"])
VAD = {"type": "server_vad", "threshold": 0.5, "silence_duration_ms": 800}
BAD_KEY = {"code": "InvalidApiKey", "message": "Invalid API-key provided."}


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:22]}"


def _json_refusal(connection, status: HTTPStatus, body: dict):
    response = connection.respond(status, json.dumps(body))
    response.headers["Content-Type"] = "application/json"
    return response


def is_tts(model: str) -> bool:
    """Qwen-TTS Realtime's models (qwen3-tts-flash-realtime, its snapshots, qwen-tts-realtime) on this path."""
    return "-tts" in model


class QwenOmniEmulator:
    """Model Studio's realtime path, as one host serves it: Qwen-Omni-Realtime (the S2S scenario) and
    Qwen-TTS Realtime (the TTS scenario), told apart by the `model` query parameter."""

    def __init__(self, scenario) -> None:
        self.scenario: S2SScenario | None = scenario_for(scenario, "s2s")
        self.tts: TTSScenario | None = scenario_for(scenario, "tts")
        if self.scenario is not None:  # the one reply, encoded once, so no stream pays for it on the clock
            self.chunks, self.first_speech = ChunkCache(self.scenario, b64).get(self.scenario.transcript, RATE)
        if self.tts is not None:
            self.tts_chunks = ChunkCache(self.tts, b64)
            self.tts_chunks.get("", RATE)  # first-use costs paid before any stream is timed

    def process_request(self, connection, request):
        url = urlsplit(request.path)
        if url.path != PATH:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        model = (parse_qs(url.query).get("model") or [""])[0]
        if not model:
            return _json_refusal(connection, HTTPStatus.BAD_REQUEST,
                                 {"code": "InvalidParameter", "message": "the model query parameter is required"})
        scenario = self.tts if is_tts(model) else self.scenario
        if scenario is None:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        if request.headers.get("Authorization") != f"Bearer {scenario.api_key}":
            return _json_refusal(connection, HTTPStatus.UNAUTHORIZED, BAD_KEY)
        return websocket_refusal(connection, scenario.fault)

    async def handle(self, ws) -> None:
        model = parse_qs(urlsplit(ws.request.path).query)["model"][0]
        await (_TTSSession if is_tts(model) else _Session)(self, ws, model).run()


class _Session:
    """One connection: its configuration, its input buffer and the turn's reply."""

    def __init__(self, emulator: QwenOmniEmulator, ws, model: str) -> None:
        self.emulator, self.ws, self.s = emulator, ws, emulator.scenario
        self.config = {"object": "realtime.session", "id": _id("sess"), "model": model,
                       "modalities": ["text", "audio"], "voice": "Cherry", "input_audio_format": "pcm16",
                       "output_audio_format": "pcm24", "turn_detection": dict(VAD)}
        self.t0: int | None = None  # the first append's arrival
        self.first = b""  # its decoded audio: the stream's key
        self.buffered = 0
        self.tasks: list[asyncio.Task] = []

    async def send(self, event: dict) -> None:
        await self.ws.send(json.dumps({"event_id": _id("event"), **event}))

    async def error(self, message: str, code: str = "invalid_value", param: str | None = None) -> None:
        await self.send({"type": "error", "error": {"type": "invalid_request_error", "code": code,
                                                    "message": message, "param": param}})

    async def deltas(self, chunks: list, times: list[int], key: str, first_speech: int, ids: dict) -> bool:
        """A reply's `response.audio.delta` events, each at its time (ns), committing the stream faults
        (`malformed` at the second, `disconnect` / `close:<code>` at the third) and recording the first
        audio and first speech under `key`; False when a fault ended the session."""
        s = self.s
        for i, (data, at) in enumerate(zip(chunks, times)):
            await sleep_until(at)
            if i == 1 and s.fault == "malformed":
                await self.ws.send('{"type": "response.audio.delta", "delta": ')
            elif i == 2 and breaks(s.fault):
                await break_off(self.ws, s.fault)
                return False
            if i == 0:
                record(self.emulator, key, "first_audio")
            if i == first_speech:
                record(self.emulator, key, "first_speech")
            await self.send({"type": "response.audio.delta", **ids, "delta": data})
        return True

    def created(self) -> str:
        """The event that opens the session."""
        return json.dumps({"event_id": _id("event"), "type": "session.created", "session": self.config})

    async def run(self) -> None:
        try:
            await self.ws.send(self.created())
            async for message in self.ws:
                arrived = time.perf_counter_ns()
                try:
                    event = json.loads(message)
                    kind = event["type"]
                except (ValueError, KeyError, TypeError):
                    await self.error("the event is not a JSON object with a type", "invalid_json")
                    continue
                if await self.on(kind, event, arrived):
                    return
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it
        finally:
            for task in self.tasks:
                task.cancel()

    async def on(self, kind: str, event: dict, arrived: int) -> bool:
        """Handle one client event; True when the session is over."""
        if kind == "session.update":
            await self.update(event.get("session") or {})
        elif kind == "input_audio_buffer.append":
            try:
                audio = base64.b64decode(event["audio"], validate=True)
            except (KeyError, TypeError, binascii.Error):
                await self.error("audio must be base64-encoded 16-bit PCM", param="audio")
                return False
            if self.t0 is None:
                self.t0, self.first = arrived, audio
                if self.config["turn_detection"] is not None:
                    self.tasks.append(asyncio.create_task(self.vad_turn()))
            self.buffered += len(audio)
        elif kind == "input_audio_buffer.commit":
            if not self.buffered:
                await self.error("the input audio buffer is empty", "input_audio_buffer_commit_empty")
            else:
                await self.commit()
        elif kind == "response.create":
            response = await self.respond()
            self.tasks.append(asyncio.create_task(self.reply(response, self.reply_at(arrived))))
        elif kind == "session.finish":
            await self.send({"type": "session.finished"})
            await self.ws.close()
            return True
        return False

    async def update(self, session: dict) -> None:
        problem = None
        if "modalities" in session and session["modalities"] not in MODALITIES:
            problem = ("Supported modalities are ['text'] and ['audio', 'text']", "session.modalities")
        elif session.get("input_audio_format", "pcm16") not in INPUT_FORMATS:
            problem = ("input_audio_format must be pcm16 (16 kHz 16-bit PCM)", "session.input_audio_format")
        elif session.get("output_audio_format", "pcm24") not in OUTPUT_FORMATS:
            problem = ("output_audio_format must be pcm24 (24 kHz 16-bit PCM)", "session.output_audio_format")
        if problem is not None:
            await self.error(problem[0], param=problem[1])
            return
        self.config.update(session)
        await self.send({"type": "session.updated", "session": self.config})

    async def commit(self) -> None:
        item = _id("item")
        await self.send({"type": "input_audio_buffer.committed", "previous_item_id": None, "item_id": item})
        await self.send({"type": "conversation.item.created", "item": {
            "id": item, "object": "realtime.item", "type": "message", "status": "completed", "role": "user",
            "content": [{"type": "input_audio"}]}})
        self.buffered = 0

    async def respond(self) -> str:
        response = _id("resp")
        await self.send({"type": "response.created", "response": {
            "id": response, "object": "realtime.response", "status": "in_progress", "output": []}})
        return response

    def speech_end_ns(self) -> int:
        return self.t0 + int(self.s.speech_end_for(self.first) * 1e9)

    def reply_at(self, requested: int) -> int:
        """Manual mode: `response_ms` (+ jitter) after the caller's speech end, never before the request."""
        if self.t0 is None:
            return requested + int(self.s.response_ms * 1e6)
        return max(requested, self.speech_end_ns() + int((self.s.response_ms + jitter_ms(self.first, self.s.jitter_ms)) * 1e6))

    async def vad_turn(self) -> None:
        """Server VAD: the turn is committed `silence_duration_ms` after the speech ends, and answered."""
        silence = int(float(self.config["turn_detection"].get("silence_duration_ms", 800)) * 1e6)
        detected = self.speech_end_ns() + silence
        await sleep_until(detected)
        await self.commit()
        response = await self.respond()
        await self.reply(response, detected + int((self.s.response_ms + jitter_ms(self.first, self.s.jitter_ms)) * 1e6))

    async def reply(self, response: str, start: int) -> None:
        s, chunks = self.s, self.emulator.chunks
        item = _id("item")
        ids = {"response_id": response, "item_id": item, "output_index": 0, "content_index": 0}
        stream = hashlib.sha256(self.first).hexdigest()  # the ledger's key, as the anchors'
        await self.send({"type": "response.output_item.added", "response_id": response, "output_index": 0,
                         "item": {"id": item, "object": "realtime.item", "type": "message", "status": "in_progress",
                                  "role": "assistant", "content": []}})
        every = int(s.send_every_ms * 1e6)
        times = [start + i * every for i in range(len(chunks))]
        if not await self.deltas(chunks, times, stream, self.emulator.first_speech, ids):
            return
        await self.send({"type": "response.audio_transcript.done", **ids, "transcript": s.transcript})
        await self.send({"type": "response.audio.done", **ids})
        output = {"id": item, "object": "realtime.item", "type": "message", "status": "completed",
                  "role": "assistant", "content": [{"type": "audio", "transcript": s.transcript}]}
        await self.send({"type": "response.output_item.done", "response_id": response, "output_index": 0,
                         "item": output})
        if s.fault == "no_final":
            return
        await self.send({"type": "response.done", "response": {
            "id": response, "object": "realtime.response", "status": "completed", "modalities": ["text", "audio"],
            "voice": self.config["voice"], "output": [output]}})


# Qwen-TTS Realtime. The events Alibaba's pages quote, verbatim: `voxwatch emulate` speaks their shapes,
# and QwenTTSScenario(documented=...) sends these very events, which the contract test replays through
# the adapter (tests/test_qwen_tts.py).
# Client events, https://help.aliyun.com/en/model-studio/qwen-tts-realtime-client-events (read 2026-12-07):
DOC_SESSION_UPDATE = {"event_id": "event_123", "type": "session.update", "session": {
    "voice": "Cherry", "mode": "server_commit", "language_type": "Chinese", "response_format": "pcm",
    "sample_rate": 24000, "instructions": "", "optimize_instructions": False}}
DOC_APPEND = {"event_id": "event_B4o9RHSTWobB5OQdEHLTo", "type": "input_text_buffer.append", "text": "Hello, I am Qwen."}
# Server events, https://www.alibabacloud.com/help/en/model-studio/qwen-tts-realtime-server-events and
# https://platform.qianwenai.com/docs/api-reference/speech-synthesis/qwen-tts-realtime/server-events (read 2026-12-07):
DOC_SESSION_CREATED = {"event_id": "event_xxx", "type": "session.created", "session": {
    "object": "realtime.session", "mode": "server_commit", "model": "qwen-tts-realtime", "voice": "Cherry",
    "response_format": "pcm", "sample_rate": 24000, "id": "sess_xxx"}}
DOC_COMMITTED = {"event_id": "event_FC6MA88wS2oEeXkPvWsxX", "type": "input_text_buffer.committed", "item_id": ""}
DOC_ERROR = {"event_id": "event_QzAVZRVa9hKqM5VOaHunh", "type": "error", "error": {
    "code": "invalid_value", "message": "Session update error: session already started or finished or failed."}}
TTS_MODES = ("server_commit", "commit")
TTS_FORMATS = ("pcm",)  # the emulator speaks raw PCM only (the SDK also names mp3, wav and opus)
TTS_RATES = (8000, 16000, 22050, 24000, 44100, 48000)


@dataclass(frozen=True)
class QwenTTSScenario(TTSScenario):
    """A TTS scenario that can replay Alibaba's quoted events: "sequence" opens with the documented
    `session.created` and answers a commit with the documented `input_text_buffer.committed`; "error"
    answers `session.update` with the documented `error` event."""

    documented: str | None = None


class _TTSSession(_Session):
    """One Qwen-TTS Realtime connection: its configuration, its text buffer and its replies.

    `session.created` first (the documented defaults); `session.update` is answered by
    `session.updated`, or by an `error` event (invalid_value, with its `param`) for a mode, format or
    rate the emulator does not take, and by Alibaba's quoted error once a reply has begun.
    `input_text_buffer.append` {text} fills the buffer; `input_text_buffer.commit` is answered by
    `input_text_buffer.committed` and starts the reply (an error when the buffer is empty);
    `input_text_buffer.clear` by `input_text_buffer.cleared`. In `server_commit` mode the server chooses
    when to synthesize what was appended; Alibaba does not say when, so this emulator waits for a
    commit or `session.finish` (which flushes the buffer, then `session.finished` and a normal close).

    The reply follows the TTSScenario, timed from the commit's arrival: `response.created`,
    `response.output_item.added`, `response.content_part.added`, `response.audio.delta` events (base64
    PCM at the session's rate, `chunk_ms` each; leading silence, then speech), `response.audio.done`,
    `response.content_part.done`, `response.output_item.done`, `response.done` (status completed,
    usage.characters). Faults: `malformed` (a broken delta), `disconnect` and `close:<code>` (at the
    third delta), `no_final` (no `response.done`), `inaudible` (silent audio). The ledger records
    `first_audio` and `first_speech` by the text, just before each send."""

    def __init__(self, emulator: QwenOmniEmulator, ws, model: str) -> None:  # its own state, not the S2S session's
        self.emulator, self.ws, self.s = emulator, ws, emulator.tts
        self.documented = getattr(self.s, "documented", None)
        self.config = {"object": "realtime.session", "mode": "server_commit", "model": model, "voice": "Cherry",
                       "response_format": "pcm", "sample_rate": RATE, "id": _id("sess")}
        self.text = ""  # the input text buffer
        self.started = False  # a reply has begun: the session can no longer be updated
        self.tasks: list[asyncio.Task] = []

    def created(self) -> str:
        return json.dumps(DOC_SESSION_CREATED) if self.documented == "sequence" else super().created()

    async def on(self, kind: str, event: dict, arrived: int) -> bool:
        """Handle one client event; True when the session is over."""
        if kind == "session.update":
            await self.update(event.get("session") or {})
        elif kind == "input_text_buffer.append":
            if not isinstance(event.get("text"), str):
                await self.error("text must be a string", param="text")
            else:
                self.text += event["text"]
        elif kind == "input_text_buffer.commit":
            if not self.text.strip():
                await self.error("the input text buffer is empty")
            else:
                await self.send(DOC_COMMITTED if self.documented == "sequence" else
                                {"type": "input_text_buffer.committed", "item_id": _id("item")})
                self.start(arrived)
        elif kind == "input_text_buffer.clear":
            self.text = ""
            await self.send({"type": "input_text_buffer.cleared"})
        elif kind == "response.cancel":
            for task in self.tasks:
                task.cancel()
        elif kind == "session.finish":
            if self.text.strip():
                self.start(arrived)
            await asyncio.gather(*self.tasks, return_exceptions=True)
            await self.send({"type": "session.finished"})
            await self.ws.close()
            return True
        else:
            await self.error(f"unknown client event type {kind!r}", param="type")
        return False

    async def update(self, session: dict) -> None:
        if self.documented == "error" or self.started:
            await self.ws.send(json.dumps(DOC_ERROR))
            return
        problem = None
        if session.get("mode", "server_commit") not in TTS_MODES:
            problem = ("mode must be server_commit or commit", "session.mode")
        elif session.get("response_format", "pcm") not in TTS_FORMATS:
            problem = ("this emulator speaks response_format pcm only", "session.response_format")
        elif session.get("sample_rate", RATE) not in TTS_RATES:
            problem = (f"sample_rate must be one of {TTS_RATES}", "session.sample_rate")
        if problem is not None:
            await self.error(problem[0], param=problem[1])
            return
        self.config.update({k: v for k, v in session.items() if k in self.config or k in (
            "language_type", "instructions", "optimize_instructions")})
        await self.send({"type": "session.updated", "session": self.config})

    def start(self, arrived: int) -> None:
        """The buffer becomes a reply, timed from `arrived`."""
        text, self.text, self.started = self.text, "", True
        self.tasks.append(asyncio.create_task(self.reply(text, arrived)))

    async def reply(self, text: str, arrived: int) -> None:
        s, rate = self.s, self.config["sample_rate"]
        chunks, first_speech = await asyncio.to_thread(self.emulator.tts_chunks.get, text, rate)
        response, item = _id("resp"), _id("item")
        ids = {"response_id": response, "item_id": item, "output_index": 0, "content_index": 0}
        await self.send({"type": "response.created", "response": {
            "id": response, "object": "realtime.response", "status": "in_progress", "voice": self.config["voice"],
            "output": []}})
        await self.send({"type": "response.output_item.added", "response_id": response, "output_index": 0,
                         "item": {"id": item, "object": "realtime.item", "type": "message", "status": "in_progress",
                                  "role": "assistant", "content": []}})
        await self.send({"type": "response.content_part.added", **ids, "part": {"type": "audio", "text": ""}})
        if not await self.deltas(chunks, s.send_times(arrived, text, len(chunks), first_speech), text, first_speech,
                                 ids):
            return
        await self.send({"type": "response.audio.done", **ids})
        await self.send({"type": "response.content_part.done", **ids, "part": {"type": "audio", "text": ""}})
        output = {"id": item, "object": "realtime.item", "type": "message", "status": "completed",
                  "role": "assistant", "content": [{"type": "audio", "text": ""}]}
        await self.send({"type": "response.output_item.done", "response_id": response, "output_index": 0,
                         "item": output})
        if s.fault == "no_final":
            return
        await self.send({"type": "response.done", "response": {
            "id": response, "object": "realtime.response", "status": "completed", "voice": self.config["voice"],
            "output": [output], "usage": {"characters": len(text)}}})
