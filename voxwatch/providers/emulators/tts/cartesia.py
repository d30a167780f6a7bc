"""A loopback emulator of Cartesia's TTS WebSocket (`/tts/websocket`).

Checks `Authorization: Bearer <key>` and the `Cartesia-Version` header, and that a request's
`language` (English when absent) is an ISO 639-1 code; for each generation request sends base64 `pcm_s16le` `chunk` messages at the requested sample rate - leading silence,
then the speech (a sharp-onset tone, or eSpeak NG saying the transcript) - the first `ttfb_ms` after the request arrived and the rest
every `send_every_ms` (faster than real time; the speech `gaming_delay_ms` after the silence, when
set), then a `done` message for the context.
"""

from __future__ import annotations

import asyncio
import json
import time
from http import HTTPStatus

import websockets

from voxwatch.foundation.clock import sleep_until

from voxwatch.providers.emulators.faults import break_off, breaks, websocket_refusal
from voxwatch.providers.emulators.ledger import record
from voxwatch.providers.emulators.scenario import Scenarios, TTSScenario, scenario_for
from voxwatch.providers.emulators.speech import ChunkCache, b64


class CartesiaEmulator:
    def __init__(self, scenario: TTSScenario | Scenarios) -> None:
        self.scenario = scenario_for(scenario, "tts")
        self._chunks = ChunkCache(self.scenario, b64)
        self._chunks.get("", 24000)  # first-use costs paid before any stream is timed

    def process_request(self, connection, request):
        if request.path.split("?")[0] != "/tts/websocket":
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        if request.headers.get("Authorization") != f"Bearer {self.scenario.api_key}":
            return connection.respond(HTTPStatus.UNAUTHORIZED, "invalid API key\n")
        if not request.headers.get("Cartesia-Version"):
            return connection.respond(HTTPStatus.BAD_REQUEST, "Cartesia-Version header required\n")
        return websocket_refusal(connection, self.scenario.fault)

    async def handle(self, ws) -> None:
        try:
            await self._serve(ws)
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it

    async def _serve(self, ws) -> None:
        async for message in ws:
            arrived = time.perf_counter_ns()
            request = json.loads(message)
            context = request.get("context_id")
            try:
                rate = int(request["output_format"]["sample_rate"])
                transcript = str(request["transcript"])
                language = request.get("language", "en")
                if not (isinstance(language, str) and language.isalpha() and 2 <= len(language) <= 3):
                    raise ValueError("language")
            except (KeyError, TypeError, ValueError):
                await ws.send(json.dumps({"type": "error", "done": True, "status_code": 400, "context_id": context,
                                          "title": "Invalid request",
                                          "message": "missing transcript or output_format, or a language that is "
                                                     "not an ISO 639-1 code"}))
                continue
            s = self.scenario
            chunks, first_speech = await asyncio.to_thread(self._chunks.get, transcript, rate)
            for i, (data, at) in enumerate(zip(chunks, s.send_times(arrived, transcript, len(chunks), first_speech))):
                await sleep_until(at)
                if s.fault == "malformed" and i == 1:
                    await ws.send('{"type": "chunk", "data": ')
                elif breaks(s.fault) and i == 2:
                    await break_off(ws, s.fault)
                    return
                if i == 0:
                    record(self, transcript, "first_audio")
                if i == first_speech:
                    record(self, transcript, "first_speech")
                await ws.send(json.dumps({"type": "chunk", "data": data, "done": False, "status_code": 206,
                                          "step_time": 1, "context_id": context}))
            if s.fault != "no_final":
                await ws.send(json.dumps({"type": "done", "done": True, "status_code": 206, "context_id": context}))
