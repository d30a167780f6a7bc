"""A loopback emulator of the Gemini Live API WebSocket (`BidiGenerateContent`).

Serves `/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent`; takes the key
from `x-goog-api-key` (or the `key` query parameter) and, when it is wrong, closes the session with
1007 and a reason naming the key. Answers `setup` with `setupComplete`; takes `realtimeInput` audio
(`audio` or the older `mediaChunks`; camelCase or snake_case field names, as the JSON API accepts),
`activityStart` and `activityEnd`. All server messages go out as binary frames of JSON.

The reply follows the S2SScenario: its audio (leading silence, then speech, 24 kHz
`audio/pcm;rate=24000` `inlineData` parts, `chunk_ms` each) starts `response_ms` (+ jitter) after the
caller's speech end on this clock, which is the arrival of the turn's first audio chunk plus
`speech_end_for(<that chunk's raw PCM bytes, decoded from base64>)`: the scenario's `anchors` are
keyed by the sha256 of those bytes. With manual activity detection the reply never starts before
`activityEnd`. Chunks go out every `send_every_ms`, then `generationComplete`, then `turnComplete`.
A ConversationScript makes it a scripted multi-turn agent with function calls (gemini_agent.py).
The same port serves the Gemini API's TTS models (gemini_tts.py), so `app()` serves both over ASGI
(uvicorn); `process_request` + `handle` still serve the Live API alone on a `websockets` server.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import time
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

import websockets

from voxwatch.foundation.clock import sleep_until

from voxwatch.providers.emulators.faults import break_off, breaks, websocket_refusal
from voxwatch.providers.emulators.ledger import record
from voxwatch.providers.emulators.scenario import ConversationScript, S2SScenario, jitter_ms, scenario_for
from voxwatch.providers.emulators.speech import ChunkCache, b64

PATH = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
RATE = 24000
BAD_KEY = "API key not valid. Please pass a valid API key."
BAD_REQUEST = "Request contains an invalid argument."


def _field(obj: dict, camel: str):
    """A field by its JSON (camelCase) or proto (snake_case) name; the API accepts both."""
    snake = "".join("_" + c.lower() if c.isupper() else c for c in camel)
    return obj.get(camel, obj.get(snake))


def _message(data: dict) -> bytes:
    return json.dumps(data).encode()


class GeminiLiveEmulator:
    def __init__(self, scenario) -> None:
        self.scenario: S2SScenario = scenario_for(scenario, "s2s")
        self.tts = scenario  # the TTS methods' scenario (gemini_tts.py), served on the same port
        if self.scenario is None:  # TTS alone
            return
        # the one reply, encoded once, so no stream pays for it on the clock
        self.chunks, self.first_speech = ChunkCache(self.scenario, b64).get(self.scenario.transcript, RATE)
        self.agent_audio = ChunkCache(self.scenario, b64)
        for turn in getattr(self.scenario, "turns", ()):  # a script's replies, made before any clock
            self.agent_audio.get(turn.reply, RATE)

    def app(self):
        """The Live WebSocket and the TTS methods (gemini_tts.py) on one port, as Google serves them
        from one host: an ASGI app, the Live handlers unchanged behind gemini_tts.LiveSocket."""
        from voxwatch.providers.emulators.s2s.gemini_tts import GeminiTTSRoutes

        return GeminiTTSRoutes(self, self.tts).app(PATH)

    def process_request(self, connection, request):
        if urlsplit(request.path).path != PATH:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        return websocket_refusal(connection, self.scenario.fault)

    def _key_ok(self, ws) -> bool:
        request = ws.request
        key = request.headers.get("x-goog-api-key") or parse_qs(urlsplit(request.path).query).get("key", [""])[0]
        return key == self.scenario.api_key

    async def accept(self, ws) -> dict | None:
        """Check the key and take the `setup` (answered with `setupComplete`); None when the session
        was refused (and closed)."""
        if not self._key_ok(ws):
            await ws.close(1007, BAD_KEY)
            return None
        try:
            setup = _field(json.loads(await ws.recv()), "setup")
        except (ValueError, AttributeError):
            setup = None
        if not isinstance(setup, dict) or not str(setup.get("model", "")).startswith("models/"):
            await ws.close(1007, BAD_REQUEST)
            return None
        await ws.send(_message({"setupComplete": {}}))
        return setup

    async def handle(self, ws) -> None:
        if isinstance(self.scenario, ConversationScript):  # the scripted multi-turn agent
            from voxwatch.providers.emulators.s2s.gemini_agent import ScriptedGeminiAgent

            await ScriptedGeminiAgent(self, ws).run()
            return
        sender: asyncio.Task | None = None
        try:
            setup = await self.accept(ws)
            if setup is None:
                return
            detection = _field(_field(setup, "realtimeInputConfig") or {}, "automaticActivityDetection") or {}
            manual = bool(detection.get("disabled"))
            ended = asyncio.Event()
            async for message in ws:
                arrived = time.perf_counter_ns()
                try:
                    realtime = _field(json.loads(message), "realtimeInput")
                except (ValueError, AttributeError):
                    await ws.close(1007, BAD_REQUEST)
                    return
                if not isinstance(realtime, dict):
                    continue  # clientContent, toolResponse: not part of a spoken turn
                if _field(realtime, "activityStart") is not None and (sender is None or sender.done()):
                    sender, ended = None, asyncio.Event()  # a new turn
                if _field(realtime, "activityEnd") is not None or _field(realtime, "audioStreamEnd"):
                    ended.set()
                blobs = [_field(realtime, "audio")] if _field(realtime, "audio") else _field(realtime, "mediaChunks") or []
                for blob in blobs:
                    if not str(_field(blob, "mimeType") or "").startswith("audio/pcm"):
                        await ws.close(1007, BAD_REQUEST)
                        return
                    if sender is None:
                        first = base64.b64decode(blob["data"])
                        sender = asyncio.create_task(self._reply(ws, arrived, first, ended if manual else None))
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it
        finally:
            if sender is not None:
                sender.cancel()

    async def _reply(self, ws, arrived: int, first_chunk: bytes, ended: asyncio.Event | None) -> None:
        s = self.scenario
        stream = hashlib.sha256(first_chunk).hexdigest()  # the ledger's stream key, as the anchors'
        speech_end = arrived + int(s.speech_end_for(first_chunk) * 1e9)
        at = speech_end + int((s.response_ms + jitter_ms(first_chunk, s.jitter_ms)) * 1e6)
        if ended is not None:
            await ended.wait()  # manual activity detection: the model answers a closed turn
        every = int(s.send_every_ms * 1e6)
        for i, data in enumerate(self.chunks):
            await sleep_until(at + i * every)
            if s.fault == "malformed" and i == 1:
                await ws.send(b'{"serverContent": {"modelTurn": ')
            elif breaks(s.fault) and i == 2:
                await break_off(ws, s.fault)
                return
            if i == 0:
                record(self, stream, "first_audio")
            if i == self.first_speech:
                record(self, stream, "first_speech")
            await ws.send(_message({"serverContent": {"modelTurn": {"role": "model", "parts": [
                {"inlineData": {"mimeType": f"audio/pcm;rate={RATE}", "data": data}}]}}}))
        if s.fault == "no_final":
            return
        await ws.send(_message({"serverContent": {"generationComplete": True}}))
        await ws.send(_message({"serverContent": {"turnComplete": True}}))
