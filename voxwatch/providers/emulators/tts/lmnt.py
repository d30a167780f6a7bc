"""A loopback emulator of LMNT's Speech Sessions WebSocket (`/v1/ai/speech/stream`, API version 1.1).

The protocol as voxwatch/providers/tts/lmnt.py lists it, with its sources. The handshake carries no
auth (the handshake faults refuse it all the same, as a gateway would); the first message must be
the init: a wrong `X-API-Key` is answered with an `authentication_error` envelope and a close, an
`lmnt-version` other than 1.1, a missing voice, a `format` other than `pcm_s16le` (the one this
emulator speaks) or a `sample_rate` other than 8000/16000/24000 with an `invalid_request_error`
envelope and a close. Then `{"type": "ready", "request_id"}`.

`text` frames are buffered and nothing is spoken until a `flush` or `finish` (LMNT buffers text
"until enough text has been received"; a client that never flushes waits for nothing). On a
flush the buffered text is spoken as binary `pcm_s16le` frames at the init's sample rate - leading
silence, then the speech (a sharp-onset tone, or eSpeak NG saying it) - the first `ttfb_ms` after
the flush arrived and the rest every `send_every_ms` (the speech `gaming_delay_ms` after the
silence, when set), then `timestamps` (when the init asked for them: the words spread over the
speech, in seconds, starting again at 0 for the chunk as LMNT's do) and `{"type":
"flush_complete", "nonce"}` with the flush's nonce. `reset` drops the buffer (`reset_complete`).
`finish` speaks what is left, then closes normally. Any other frame is an `invalid_request_error`
and a close ("Connection closes immediately afterward").

LMNT's own behaviour, beyond the shared scenario (`LMNTScenario`): `error_type` answers the init
with that error envelope (say `rate_limit_error`) and closes; `sequence` replays the SDK's own test
fixtures instead of synthesizing (below).

Faults: the handshake faults refuse the upgrade; `malformed` sends a broken JSON frame amid the
audio, `disconnect` drops the socket and `close:<code>` closes it with that code after two audio
frames; `no_final` never sends `flush_complete`; `inaudible` sends silence.

Calibration ledger: `first_audio` and `first_speech`, keyed by the flushed text.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import uuid
from http import HTTPStatus

import websockets

from voxwatch.foundation.clock import sleep_until

from voxwatch.providers.emulators.faults import websocket_refusal
from voxwatch.providers.emulators.scenario import TTSScenario, scenario_as
from voxwatch.providers.emulators.speech import ChunkCache, send_binary_reply

PATH = "/v1/ai/speech/stream"
RATES = (8000, 16000, 24000)
ERROR_TYPES = ("invalid_request_error", "authentication_error", "permission_error", "not_found_error",
               "payment_required_error", "rate_limit_error", "internal_server_error")  # types/error_body.py

# The cited sequence: the official SDK's own test fixtures, quoted (lmnt-com/lmnt-python
# tests/api_resources/test_sessions.py @ 04ce21eefeae58c1081ebedb8f52527a41e77220; each test there
# replays one frame through a fake socket, the order here is the protocol's: init, ready, text,
# flush, audio, timestamps, flush_complete, finish). What the client sends (the init's asserted keys):
SDK_INIT = {"X-API-Key": "test-api-key", "lmnt-version": "1.1", "voice": "voice-id"}
SDK_TEXT = {"type": "text", "text": "text-value"}
SDK_FLUSH = {"type": "flush", "nonce": 1}
SDK_FINISH = {"type": "finish"}
# What the server sends:
SDK_READY = {"type": "ready", "request_id": "request_id-value"}
SDK_AUDIO = b"\x00\x01\x02\x03"
SDK_TIMESTAMPS = {"type": "timestamps", "timestamps": [{"text": "hi", "start": 0.0, "duration": 0.5}]}
SDK_FLUSH_COMPLETE = {"type": "flush_complete", "nonce": 1}
SDK_ERROR = {"type": "error", "error": None, "request_id": "request_id-value"}
SEQUENCES = (None, "sdk_speech", "sdk_error")


@dataclasses.dataclass(frozen=True)
class LMNTScenario(TTSScenario):
    """A TTSScenario with the LMNT behaviours the shared faults do not cover.

    `error_type`: the init is answered with that error envelope (one of ERROR_TYPES), then a close.
    `sequence`: "sdk_speech" answers every flush with the SDK fixtures' frames (SDK_AUDIO, then
    SDK_TIMESTAMPS and SDK_FLUSH_COMPLETE) and the init with SDK_READY; "sdk_error" answers the first
    flush with SDK_ERROR and a close. Both check that the client's frames have the fixtures' shapes
    (the init's keys, a text frame, a flush with an integer nonce), refusing any other."""

    error_type: str | None = None
    sequence: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.error_type not in (None, *ERROR_TYPES) or self.sequence not in SEQUENCES:
            raise ValueError(f"unknown LMNT behaviour {self.error_type!r} / {self.sequence!r}")


def _error(kind: str, message: str) -> str:
    return json.dumps({"type": "error", "error": {"message": message, "type": kind}, "request_id": str(uuid.uuid4())})


class LMNTEmulator:
    def __init__(self, scenario) -> None:
        self.scenario = scenario_as(scenario, "tts", LMNTScenario)
        self._chunks = ChunkCache(self.scenario)
        self._chunks.get("", 24000)  # first-use costs paid before any stream is timed

    def process_request(self, connection, request):
        if request.path.split("?")[0] != PATH:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        return websocket_refusal(connection, self.scenario.fault)

    async def handle(self, ws) -> None:
        try:
            await self._serve(ws)
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it

    def _init_problem(self, init) -> tuple[str, str] | None:
        """(error type, message) refusing an init, or None."""
        if not isinstance(init, dict) or init.get("type", "init") != "init":
            return "invalid_request_error", "the first message must be the init"
        if init.get("X-API-Key") != self.scenario.api_key:
            return "authentication_error", "invalid API key"
        if init.get("lmnt-version") != "1.1":
            return "invalid_request_error", "this emulator speaks lmnt-version 1.1 only"
        if not isinstance(init.get("voice"), str) or not init["voice"]:
            return "invalid_request_error", "voice is required"
        if init.get("format", "mp3") != "pcm_s16le":
            return "invalid_request_error", "this emulator speaks format pcm_s16le only"
        if init.get("sample_rate", 24000) not in RATES:
            return "invalid_request_error", f"sample_rate must be one of {RATES}"
        return None

    async def _serve(self, ws) -> None:
        s = self.scenario
        try:
            init = json.loads(await ws.recv())
        except ValueError:
            init = None
        problem = self._init_problem(init) or ((s.error_type, "emulated refusal") if s.error_type else None)
        if problem is not None:
            await ws.send(_error(*problem))
            await ws.close()
            return
        rate, timestamps = int(init.get("sample_rate", 24000)), bool(init.get("return_timestamps"))
        await ws.send(json.dumps(SDK_READY if s.sequence else {"type": "ready", "request_id": str(uuid.uuid4())}))
        buffered: list[str] = []
        async for message in ws:
            arrived = time.perf_counter_ns()
            try:
                data = json.loads(message) if isinstance(message, str) else None
                kind = data.get("type")
                if kind == "text":
                    buffered.append(str(data["text"]))
                    continue
                nonce = data["nonce"] if kind in ("flush", "reset") else None
                if nonce is not None and not isinstance(nonce, int):
                    raise TypeError("nonce")
                if s.sequence and kind == "flush" and data != SDK_FLUSH:
                    raise ValueError("not the SDK fixture's flush")
            except (ValueError, KeyError, TypeError, AttributeError):
                await ws.send(_error("invalid_request_error", "expected a text, flush, reset or finish frame"))
                await ws.close()
                return
            if kind == "reset":
                buffered.clear()
                await ws.send(json.dumps({"type": "reset_complete", "nonce": nonce}))
            elif kind in ("flush", "finish"):
                text = "".join(buffered)
                buffered.clear()
                if kind == "flush" or text:
                    if not await self._speak(ws, arrived, text, rate, timestamps):
                        return
                    if kind == "flush" and s.fault != "no_final":
                        await ws.send(json.dumps(SDK_FLUSH_COMPLETE if s.sequence else
                                                 {"type": "flush_complete", "nonce": nonce}))
                if kind == "finish":
                    await ws.close()
                    return
            else:
                await ws.send(_error("invalid_request_error", f"unknown message type {kind!r}"))
                await ws.close()
                return

    async def _speak(self, ws, arrived: int, text: str, rate: int, timestamps: bool) -> bool:
        """One flush's audio (and timestamps); False when the session ended instead."""
        s = self.scenario
        if s.sequence is not None:
            return await self._replay(ws, arrived)
        chunks, first_speech = await asyncio.to_thread(self._chunks.get, text, rate)  # eSpeak must finish within ttfb_ms
        if not await send_binary_reply(ws, self, text, chunks, first_speech, s, arrived, '{"type": "flush_complete", '):
            return False
        if timestamps:
            words = text.split() or [""]
            each = s.speech_ms / 1000 / len(words)
            start = s.leading_silence_ms / 1000
            await ws.send(json.dumps({"type": "timestamps", "timestamps": [
                {"text": w, "start": round(start + k * each, 3), "duration": round(each, 3)} for k, w in enumerate(words)]}))
        return True

    async def _replay(self, ws, arrived: int) -> bool:
        """The SDK fixtures' frames for one flush, `ttfb_ms` after it arrived."""
        s = self.scenario
        await sleep_until(arrived + int(s.ttfb_ms * 1e6))
        if s.sequence == "sdk_error":
            await ws.send(json.dumps(SDK_ERROR))
            await ws.close()
            return False
        await ws.send(SDK_AUDIO)
        await ws.send(json.dumps(SDK_TIMESTAMPS))
        return True
