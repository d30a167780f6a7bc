"""A loopback emulator of Deepgram's live transcription WebSocket (`/v1/listen`).

Checks `Authorization: Token <key>`; takes linear16 binary frames; sends interim `Results`
(`is_final: false`) on a cadence from `first_partial_ms` after the start of speech, and the final
(`is_final`, `speech_final`, `from_finalize` when a `Finalize` has arrived) `final_ms` after the end
of speech; answers a late `Finalize` with an empty `from_finalize` final; `CloseStream` gets a
`Metadata` message and a normal close.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from http import HTTPStatus

import websockets

from voxwatch.clock import sleep_until

from .faults import drop, websocket_refusal
from .scenario import STTScenario, jitter_ms


def _results(text: str, is_final: bool, from_finalize: bool = False) -> str:
    return json.dumps({"type": "Results", "channel_index": [0, 1], "duration": 0.0, "start": 0.0,
                       "is_final": is_final, "speech_final": is_final, "from_finalize": from_finalize,
                       "channel": {"alternatives": [{"transcript": text, "confidence": 0.99, "words": []}]}})


class DeepgramEmulator:
    def __init__(self, scenario: STTScenario) -> None:
        self.scenario = scenario

    def process_request(self, connection, request):
        if request.path.split("?")[0] != "/v1/listen":
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        if request.headers.get("Authorization") != f"Token {self.scenario.api_key}":
            return connection.respond(HTTPStatus.UNAUTHORIZED, "invalid credentials\n")
        return websocket_refusal(connection, self.scenario.fault)

    async def handle(self, ws) -> None:
        finalized = asyncio.Event()
        final_sent = asyncio.Event()
        sender: asyncio.Task | None = None
        try:
            async for message in ws:
                if isinstance(message, bytes):
                    if sender is None:
                        sender = asyncio.create_task(self._speak(ws, time.perf_counter_ns(), message, finalized, final_sent))
                    continue
                kind = json.loads(message).get("type")
                if kind == "Finalize":
                    finalized.set()
                    if final_sent.is_set():
                        await ws.send(_results("", True, from_finalize=True))
                elif kind == "CloseStream":
                    await ws.send(json.dumps({"type": "Metadata", "request_id": str(uuid.uuid4()), "channels": 1}))
                    break
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it
        finally:
            if sender is not None:
                sender.cancel()

    async def _speak(self, ws, t0: int, first_chunk: bytes, finalized: asyncio.Event, final_sent: asyncio.Event) -> None:
        s = self.scenario
        j = jitter_ms(first_chunk, s.jitter_ms)
        speech_start, speech_end = s.anchors_for(first_chunk)
        words = s.transcript.split()
        at = t0 + int((speech_start * 1000 + s.first_partial_ms + j) * 1e6)
        final_at = t0 + int((speech_end * 1000 + s.final_ms + j) * 1e6)
        k = 1
        while at < final_at:
            await sleep_until(at)
            if s.fault == "malformed":
                await ws.send('{"type": "Results", "channel": ')
            elif s.fault == "disconnect":
                await drop(ws)
                return
            await ws.send(_results(" ".join(words[:k]), False))
            k = min(k + 1, len(words))
            at += int(s.partial_every_ms * 1e6)
        if s.fault == "no_final":
            return
        await sleep_until(final_at)
        await ws.send(_results(s.transcript, True, from_finalize=finalized.is_set()))
        final_sent.set()
