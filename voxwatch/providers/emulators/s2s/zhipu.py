"""A loopback emulator of Zhipu AI's GLM-Realtime WebSocket (`/api/paas/v4/realtime`); the protocol
facts and their sources are in voxwatch.providers.s2s.zhipu.

Auth: `Authorization: Bearer <key>`; a missing key refuses the upgrade with HTTP 401 and the
platform's code 1001, a wrong one with 1000 (docs.bigmodel.cn/cn/api/api-code). Handshake faults
refuse the upgrade (emulators/faults.py).

A session opens with `session.created` and a `heartbeat` (then one every HEARTBEAT_S).
`session.update` is answered by `session.updated` and a heartbeat, or by an `error` event when it
asks for what this emulator does not serve: input other than `wav` / `wav<kHz>`, output other than
`pcm`, server VAD, a chat mode other than `audio`, or a model code Zhipu does not list (1211,
"模型不存在"). `input_audio_buffer.append` must carry a base64 mono 16-bit PCM WAV file at the
session's rate (16 kHz for `wav`, 48 kHz for `wav48`), else an `error` event;
`input_audio_buffer.commit` is answered by `input_audio_buffer.committed` and
`conversation.item.created` (an `error` when nothing was appended); `response.create` by
`response.created`, then the reply; `response.cancel` ends a reply under way with `response.done`
status `cancelled`.

The reply (S2SScenario): 24 kHz pcm16 in `response.audio.delta` events - leading silence, then
speech - from `response_ms` (+ jitter) after the caller's speech end, never before
`response.create`, one every `send_every_ms`; then `response.audio.done`,
`response.audio_transcript.done` and `response.done` (status `completed`). The caller's speech end
is the first append's arrival plus `speech_end_for(<its PCM samples, the WAV header stripped>)`:
for the voxwatch adapter, the clip's first 16 kHz chunk as sent, so anchors and the ledger's stream
key (`first_audio`, `first_speech`, recorded just before each send) are the same as every 16 kHz
emulator's.

Stream faults: `malformed` (a broken event), `disconnect` (the socket dropped, no close frame),
`no_final` (no `response.done`), `inaudible` (silent audio). A `ZhipuScenario` adds what Zhipu
documents and the shared scenario cannot say: an `error` event mid-reply that the session survives
("most errors are recoverable"), and a reply that ends with another `response.done` status.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import json
import re
import time
import uuid
import wave
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import urlsplit

import websockets

from voxwatch.foundation.clock import sleep_until

from voxwatch.providers.emulators.faults import break_off, breaks, websocket_refusal
from voxwatch.providers.emulators.ledger import record
from voxwatch.providers.emulators.scenario import S2SScenario, scenario_for
from voxwatch.providers.emulators.speech import ChunkCache, b64

PATH = "/api/paas/v4/realtime"
RATE = 24000  # pcm output
MODELS = ("glm-realtime-air", "glm-realtime-flash")
HEARTBEAT_S = 30.0
# the reference's own example of a recoverable error
RECOVERABLE = {"type": "invalid_request_error", "code": "invalid_event", "message": "The 'type' field is missing."}


@dataclass(frozen=True)
class ZhipuScenario:
    """An S2SScenario plus the documented behaviours only this vendor's emulator shows."""

    s2s: S2SScenario
    error_mid_reply: bool = False  # a recoverable `error` event between two audio deltas
    reply_status: str = "completed"  # the `response.done` status; otherwise the reply stops after two deltas


def _id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex


def _input_rate(fmt) -> int | None:
    """The rate an `input_audio_format` names: `wav` is 16 kHz, `wav48` 48 kHz; None if it is not WAV."""
    m = re.fullmatch(r"wav(\d+)?", str(fmt))
    return None if m is None else int(m.group(1) or 16) * 1000


def _pcm_of(audio: str, rate: int) -> bytes:
    """The samples of one append: a base64 mono 16-bit PCM WAV file at the session's rate."""
    with wave.open(io.BytesIO(base64.b64decode(audio, validate=True))) as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2 or w.getframerate() != rate:
            raise ValueError(f"expected a mono 16-bit PCM WAV at {rate} Hz")
        return w.readframes(w.getnframes())


class ZhipuRealtimeEmulator:
    def __init__(self, scenario) -> None:
        self.quirks = scenario if isinstance(scenario, ZhipuScenario) else ZhipuScenario(scenario_for(scenario, "s2s"))
        self.scenario: S2SScenario = self.quirks.s2s
        # the one reply, encoded once, so no stream pays for it on the clock
        self.chunks, self.first_speech = ChunkCache(self.scenario, b64).get(self.scenario.transcript, RATE)

    def process_request(self, connection, request):
        if urlsplit(request.path).path != PATH:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        refusal = websocket_refusal(connection, self.scenario.fault)
        if refusal is not None:
            return refusal
        auth = request.headers.get("Authorization")
        if auth != f"Bearer {self.scenario.api_key}":
            code, message = ("1001", "Header 中未收到 Authentication 参数，无法进行身份验证") if not auth else \
                ("1000", "身份验证失败")
            return connection.respond(HTTPStatus.UNAUTHORIZED,
                                      json.dumps({"error": {"code": code, "message": message}}, ensure_ascii=False))
        return None

    async def handle(self, ws) -> None:
        await _Call(ws, self).run()


class _Call:
    """One WebSocket session."""

    def __init__(self, ws, emulator: ZhipuRealtimeEmulator) -> None:
        self.ws, self.em, self.s = ws, emulator, emulator.scenario
        self.config = {"object": "realtime.session", "id": _id("sess"), "model": MODELS[1],
                       "input_audio_format": "wav", "output_audio_format": "pcm",
                       "turn_detection": {"type": "client_vad"},
                       "beta_fields": {"chat_mode": "audio", "tts_source": "e2e", "auto_search": True}}
        self.t0: int | None = None
        self.first = b""
        self.buffered = 0
        self.reply: asyncio.Task | None = None
        self.response = ""

    async def send(self, event: dict) -> None:
        await self.ws.send(json.dumps({"event_id": _id("event"), **event}))

    async def error(self, code: str, message: str) -> None:
        await self.send({"type": "error", "error": {"type": "invalid_request_error", "code": code, "message": message}})

    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            await self.ws.send(json.dumps({"type": "heartbeat"}))

    async def run(self) -> None:
        beats = None
        try:
            await self.send({"type": "session.created", "session": self.config})
            await self.ws.send(json.dumps({"type": "heartbeat"}))
            beats = asyncio.create_task(self._heartbeats())
            async for message in self.ws:
                arrived = time.perf_counter_ns()
                try:
                    event = json.loads(message)
                    kind = event["type"]
                except (ValueError, KeyError, TypeError):
                    await self.error("invalid_event", "The 'type' field is missing.")
                    continue
                await self.on(kind, event, arrived)
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it
        finally:
            for task in (beats, self.reply):
                if task is not None:
                    task.cancel()

    def refused(self, session: dict) -> tuple[str, str] | None:
        """Why a session.update is refused: (code, message), or None."""
        merged = {**self.config, **session}
        if _input_rate(merged["input_audio_format"]) is None:
            return "1214", "input_audio_format 参数非法: only wav (or wav<kHz>) is supported"
        if merged["output_audio_format"] != "pcm":
            return "1214", "output_audio_format: this emulator serves pcm only"
        if (merged.get("turn_detection") or {}).get("type", "client_vad") != "client_vad":
            return "1214", "turn_detection: this emulator serves client_vad only"
        if (merged.get("beta_fields") or {}).get("chat_mode", "audio") != "audio":
            return "1214", "beta_fields.chat_mode: this emulator serves audio only"
        if merged["model"] not in MODELS:
            return "1211", "模型不存在，请检查模型代码"
        return None

    async def on(self, kind: str, event: dict, arrived: int) -> None:
        if kind == "session.update":
            session = event.get("session") if isinstance(event.get("session"), dict) else {}
            problem = self.refused(session)
            if problem:
                await self.error(*problem)
                return
            self.config.update(session)
            await self.send({"type": "session.updated", "session": self.config})
            await self.ws.send(json.dumps({"type": "heartbeat"}))
        elif kind == "input_audio_buffer.append":
            try:
                pcm = _pcm_of(event["audio"], _input_rate(self.config["input_audio_format"]))
            except (KeyError, TypeError, ValueError, EOFError, wave.Error) as exc:
                await self.error("invalid_audio", f"audio must be a base64 WAV file: {exc}")
                return
            if self.t0 is None:
                self.t0, self.first = arrived, pcm
            self.buffered += len(pcm)
        elif kind == "input_audio_buffer.clear":
            self.buffered = 0
            await self.send({"type": "input_audio_buffer.cleared"})
        elif kind == "input_audio_buffer.commit":
            if not self.buffered:
                await self.error("input_audio_buffer_commit_empty", "nothing was appended to commit")
                return
            item = _id("item")
            self.buffered = 0
            await self.send({"type": "input_audio_buffer.committed", "item_id": item})
            await self.send({"type": "conversation.item.created", "item": {
                "id": item, "object": "realtime.item", "type": "message", "status": "completed", "role": "user",
                "content": [{"type": "input_audio", "transcript": None}]}})
        elif kind == "response.create":
            if self.reply is not None and not self.reply.done():
                await self.error("response_in_progress", "a response is already being generated")
                return
            self.response = _id("resp")
            await self.send({"type": "response.created", "response": {
                "object": "realtime.response", "id": self.response, "status": "in_progress"}})
            self.reply = asyncio.create_task(self._reply(arrived))
        elif kind == "response.cancel" and self.reply is not None and not self.reply.done():
            self.reply.cancel()
            await self.done("cancelled")

    async def done(self, status: str) -> None:
        await self.send({"type": "response.done", "response": {
            "object": "realtime.response", "id": self.response, "status": status,
            "usage": {"total_tokens": 0, "input_tokens": 0, "output_tokens": 0}}})

    async def _reply(self, requested_at: int) -> None:
        s, quirks = self.s, self.em.quirks
        start = s.reply_at(self.first, self.t0, requested_at)
        every = int(s.send_every_ms * 1e6)
        ids = {"response_id": self.response, "item_id": _id("item"), "output_index": 0, "content_index": 0}
        stream = hashlib.sha256(self.first).hexdigest()  # the ledger's key, as the anchors'
        completed = quirks.reply_status == "completed"
        for i, data in enumerate(self.em.chunks if completed else self.em.chunks[:2]):
            await sleep_until(start + i * every)
            if i == 1 and s.fault == "malformed":
                await self.ws.send('{"type": "response.audio.delta", "delta": ')
            elif i == 2 and breaks(s.fault):
                await break_off(self.ws, s.fault)
                return
            elif i == 1 and quirks.error_mid_reply:
                await self.send({"type": "error", "error": RECOVERABLE})
            if i == 0:
                record(self.em, stream, "first_audio")
            if i == self.em.first_speech:
                record(self.em, stream, "first_speech")
            await self.send({"type": "response.audio.delta", **ids, "delta": data})
        await self.send({"type": "response.audio.done", **ids})
        await self.send({"type": "response.audio_transcript.done", **ids, "transcript": s.transcript})
        if s.fault == "no_final":
            return
        await self.done(quirks.reply_status)
