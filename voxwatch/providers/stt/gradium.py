"""Gradium speech-to-text over its `/api/speech/asr` WebSocket, as the vendor documents it.

Protocol facts followed (read 2026-12-07):
- `wss://api.gradium.ai/api/speech/asr` (regional hosts `eu.api.gradium.ai`, `us.api.gradium.ai`), auth
  header `x-api-key: <key>`; JSON text frames both ways (gradium-ai/gradium-py@5de9db21, 2026-07-26,
  docs/websocket_stt_description.md, rendered at docs.gradium.ai/api-reference/endpoint/stt-websocket).
- The first client message must be `setup` {model_name, input_format, json_config}: "The server will close
  the connection if any other message is sent first." The server answers `ready` {request_id, model_name,
  sample_rate, frame_size, delay_in_frames, text_stream_names} before any audio; connect waits for it,
  so worker allocation stays outside the clocks.
- `input_format` `pcm_16000`: 16-bit little-endian mono PCM at 16 kHz, so the harness's chunks go out as
  they are (the bare `pcm` is 24 kHz; docs.gradium.ai/guides/limits lists the explicit rates).
  `json_config.language` grounds the model to one of en, fr, de, es, pt; "any other value raises a
  server error" (docs.gradium.ai/guides/transcription-settings).
- Audio goes as `{"type": "audio", "audio": <base64>}` (80 ms chunks are recommended, not required).
- `text` {text, start_s} carries new words, not the whole transcript so far, and has no final flag:
  each is shown here as a PARTIAL holding the words so far. `end_text` {stop_s} closes a segment
  (timing only); `step` {vad: [{horizon_s, inactivity_prob}], ...} is the client's turn-taking signal,
  every 80 ms. Gradium has no server endpointing.
- The model holds `delay_in_frames` x 80 ms of lookahead; `{"type": "flush", "flush_id": n}` makes it
  emit what it holds and answer `flushed` {flush_id} (the STT page types flush_id an integer; the SDK's
  older page shows a string: it is compared as text). `end_audio` flushes, and the `flushed` reply is
  the turn's final (FINAL, with all the words), as docs.gradium.ai/guides/recipes/turn-taking takes it:
  TTFS is its arrival. (Pipecat's Gradium STT, BSD-2, and Coval's runner, Apache-2.0, also finalize on
  `flushed`: references, not sources.)
- `{"type": "end_of_stream"}` makes the server finish, send `end_of_stream` and close.
- `error` {message, code} comes "before closing the connection", its code a WebSocket close code: 1008
  Policy Violation (invalid API key, missing setup message, invalid audio format), 1011 Internal Server
  Error. Both an error message's code and a close are read with close_codes, as RFC 6455 reads them (a
  1008 is an `error` row whose reason is Gradium's message: "invalid API key" among the three).
- A session lasts at most 300 seconds (docs.gradium.ai/guides/limits); the SDK's tests note that the
  server may end one by resetting the connection (1006, a drop).

The TTS adapter (`tts/gradium.py`) shares this module's connection and error reading: one vendor,
one host, one handshake (setup, then ready).
"""

from __future__ import annotations

import asyncio
import base64
import json

import websockets

from voxwatch.foundation.events import FINAL, PARTIAL, Timeline
from voxwatch.providers.base import ProviderError, language_copy
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed, status_of
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import ReaderSession, settle, until_ready

VENDOR = "Gradium"
DEFAULT_URL = "wss://api.gradium.ai"
STT_PATH = "/api/speech/asr"
LANGUAGES = frozenset({"en", "fr", "de", "es", "pt"})
FLUSH_ID = 1
CLOSE_WAIT_S = 1.0


def error_of(data: dict) -> ProviderError:
    """An `error` message, by its code (a WebSocket close code, read as close_codes reads a close)."""
    code = data.get("code")
    status = status_of(VENDOR, code) if isinstance(code, int) else "error"
    return ProviderError(f"{VENDOR} error {code}: {str(data.get('message'))[:300]}", status)


async def open_session(model: ModelInfo, path: str, setup: dict, timeline: Timeline) -> tuple[object, dict]:
    """Connect with the key, send `setup` and wait for `ready` (before t0): the socket and the ready message."""
    key = require_key(model.vendor)
    ws = await open_websocket(f"{base_url(model.vendor, DEFAULT_URL)}{path}", {"x-api-key": key.reveal()}, VENDOR,
                              clock=timeline.clock)

    def ready(data: dict) -> dict | None:
        if data["type"] == "error":
            raise error_of(data)
        return data if data["type"] == "ready" else None

    setup_message = json.dumps({"type": "setup", **setup})
    return ws, await settle(ws, until_ready(ws, VENDOR, ready, "before ready", send=setup_message))


class GradiumSTT:
    sample_rate = 16000
    language = "en"

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.emulator = is_loopback(base_url(model.vendor, DEFAULT_URL))

    def in_language(self, language: str) -> "GradiumSTT | None":
        """A copy that grounds the model to `language` (json_config.language), or None for one it refuses."""
        return language_copy(self, language, LANGUAGES)

    async def connect(self, timeline: Timeline) -> "GradiumSTTSession":
        ws, _ = await open_session(self.model, STT_PATH, {
            "model_name": self.model.vendor_model, "input_format": f"pcm_{self.sample_rate}",
            "json_config": {"language": self.language}}, timeline)
        return GradiumSTTSession(ws, timeline)


class GradiumSTTSession(ReaderSession):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline) -> None:
        self.timeline = timeline
        self._words: list[str] = []
        self._flushed = asyncio.Event()
        self._flush_id: int | None = None
        super().__init__(ws)

    async def _read(self) -> None:
        async for message, at in received(self.ws):
            data = json.loads(message)
            kind = data["type"]
            if kind == "text":
                words = data["text"].strip()
                if words:
                    self._words.append(words)
                    self.timeline.mark(PARTIAL, at, text=" ".join(self._words))
            elif kind == "flushed":
                if self._flush_id is not None and str(data["flush_id"]) == str(self._flush_id):
                    self.timeline.mark(FINAL, at, text=" ".join(self._words))
                    self._flushed.set()
            elif kind == "end_of_stream":
                return
            elif kind == "error":
                raise error_of(data)
            # ready, step (VAD) and end_text (a segment's end time) carry no words
        if not self._flushed.is_set():  # closed normally before the flush was answered
            raise closed(VENDOR, self.ws.close_code, "before flushed")

    def _dropped(self, exc: websockets.ConnectionClosed) -> ProviderError:
        return closed(VENDOR, exc, "before flushed" if not self._flushed.is_set() else "mid-stream")

    async def _send(self, message: dict) -> None:
        try:
            await self.ws.send(json.dumps(message))
        except websockets.ConnectionClosed as exc:
            raise self._error or closed(VENDOR, exc) from None

    async def send_audio(self, pcm16: bytes) -> None:
        await self._send({"type": "audio", "audio": base64.b64encode(pcm16).decode()})

    async def end_audio(self) -> None:
        """Flush: the model emits the words its lookahead holds, then answers `flushed`."""
        self._flush_id = FLUSH_ID
        await self._send({"type": "flush", "flush_id": FLUSH_ID})

    async def wait_final(self) -> None:
        await self._wait_for(self._flushed)

    async def _end_of_stream(self) -> None:
        await self.ws.send(json.dumps({"type": "end_of_stream"}))

    async def aclose(self) -> None:
        """`end_of_stream` (the server finishes and closes), briefly, then close (a session whose reader
        failed is dropped: nothing reads the `step` messages Gradium keeps sending every 80 ms)."""
        await self._end_and_close(self._end_of_stream, CLOSE_WAIT_S)
