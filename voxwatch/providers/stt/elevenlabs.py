"""ElevenLabs Scribe v2 Realtime speech to text, as the vendor documents it (its text to speech is
tts/elevenlabs.py). Auth: `xi-api-key`.

`GET /v1/speech-to-text/realtime?model_id=scribe_v2_realtime&audio_format=pcm_16000&commit_strategy=manual`:
the server opens with `session_started`; audio goes up as `{"message_type": "input_audio_chunk",
"audio_base_64", "commit": false, "sample_rate"}`; the same message with `"commit": true` and no
audio commits the segment (manual strategy: the final is forced). `audio_format` is `pcm_<rate>`
(8000-48000) or `ulaw_8000`, G.711 mu-law (elevenlabs-python src/elevenlabs/realtime/scribe.py
`AudioFormat`): the phone condition's codes go as stored, declared `ulaw_8000`, `sample_rate` 8000. `partial_transcript` and
`committed_transcript` carry `text`; an error is a message whose `message_type` names it
(`auth_error`, `quota_exceeded`, `rate_limited`, `transcriber_error`, ...) with an `error` text.
The client ends the session by closing the WebSocket.
"""

from __future__ import annotations

import base64
import copy
import json
from urllib.parse import urlencode

import websockets

from voxwatch.providers.base import ProviderError, language_copy
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.foundation.events import FINAL, PARTIAL, Timeline
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import MALFORMED, ReaderSession, malformed

VENDOR = "ElevenLabs"
DEFAULT_URL = "https://api.elevenlabs.io"  # wss:// for the WebSocket endpoints (endpoints.ws_url)

# Scribe realtime error message types -> row status (the rest are "error")
STT_ERROR_STATUS = {
    "auth_error": "auth_error", "unaccepted_terms": "auth_error",
    "quota_exceeded": "rate_limited", "rate_limited": "rate_limited", "commit_throttled": "rate_limited",
    "transcriber_error": "server_error", "resource_exhausted": "server_error",
}
STT_ERRORS = {*STT_ERROR_STATUS, "error", "input_error", "invalid_request", "queue_overflow",
              "session_time_limit_exceeded", "chunk_size_exceeded", "insufficient_audio_activity"}


STT_ENCODINGS = {"mulaw": "ulaw_8000"}
"""Each wire encoding voxwatch sends (datasets.wire) and Scribe's audio_format for it."""


class ElevenLabsRealtimeSTT:
    sample_rate = 16000
    audio_format = "pcm_16000"
    wire_encodings = tuple(STT_ENCODINGS)
    language = "en"  # the query's language_code

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    def on_wire(self, wire) -> "ElevenLabsRealtimeSTT":
        """A copy that declares the wire format (the phone line's 8 kHz mu-law) as its audio_format."""
        wired = copy.copy(self)
        wired.audio_format, wired.sample_rate = STT_ENCODINGS[wire.encoding], wire.sample_rate
        return wired

    def in_language(self, language: str) -> "ElevenLabsRealtimeSTT":
        """A copy whose query's `language_code` is `language`: Scribe documents 90+ languages and no
        list voxwatch can check against, so it refuses one it does not take itself (a failure row)."""
        return language_copy(self, language, None)

    async def connect(self, timeline: Timeline) -> "ScribeSession":
        """Open the session and wait for `session_started`, before t0."""
        key = require_key(self.model.vendor)
        query = urlencode({"model_id": self.model.vendor_model, "audio_format": self.audio_format,
                           "commit_strategy": "manual", "language_code": self.language})
        ws = await open_websocket(f"{self.url}/v1/speech-to-text/realtime?{query}", {"xi-api-key": key.reveal()},
                                  VENDOR, clock=timeline.clock)
        session = ScribeSession(ws, timeline, self.sample_rate)
        try:
            await session.started()
        except BaseException:
            await ws.close()
            raise
        return session


class ScribeSession(ReaderSession):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline, sample_rate: int) -> None:
        self.timeline, self.sample_rate = timeline, sample_rate
        self._messages = received(ws)
        self._committing = False
        super().__init__(ws, start=False)  # `started` reads session_started, then starts the reader

    async def started(self) -> None:
        try:
            message, _ = await anext(self._messages)
            data = json.loads(message)
            kind = data["message_type"]
        except StopAsyncIteration:
            raise ProviderError(f"{VENDOR} closed the session before it started", "disconnected") from None
        except websockets.ConnectionClosed as exc:
            raise closed(VENDOR, exc) from None
        except MALFORMED as exc:
            raise malformed(VENDOR, exc) from None
        if kind in STT_ERRORS:
            raise self._failure(kind, data)
        if kind != "session_started":
            raise ProviderError(f"malformed session start from {VENDOR} ({str(kind)[:40]!r})", "malformed")
        self._start_reader()

    @staticmethod
    def _failure(kind: str, data: dict) -> ProviderError:
        return ProviderError(f"{VENDOR} {kind}: {str(data.get('error') or '')[:300]}",
                             STT_ERROR_STATUS.get(kind, "error"))

    async def _read(self) -> None:
        async for message, at in self._messages:
            data = json.loads(message)
            kind = data["message_type"]
            if kind in ("partial_transcript", "committed_transcript"):
                text = data["text"]
                if not isinstance(text, str):
                    raise TypeError("text is not a string")
                self.timeline.mark(FINAL if kind == "committed_transcript" else PARTIAL, at, text=text)
                if kind == "committed_transcript" and self._committing:
                    break
            elif kind in STT_ERRORS:
                self._error = self._failure(kind, data)
                break

    async def _send(self, audio: bytes, commit: bool) -> None:
        try:
            await self.ws.send(json.dumps({"message_type": "input_audio_chunk", "audio_base_64":
                                           base64.b64encode(audio).decode(), "commit": commit,
                                           "sample_rate": self.sample_rate}))
        except websockets.ConnectionClosed as exc:
            raise (self._error or closed(VENDOR, exc)) from None

    async def send_audio(self, pcm16: bytes) -> None:
        await self._send(pcm16, False)

    async def end_audio(self) -> None:
        """Commit what was sent: the committed transcript that answers it is the final."""
        self._committing = True
        await self._send(b"", True)

    async def wait_final(self) -> None:
        await self._wait()

    async def aclose(self) -> None:
        await self._close_socket()
        if self._reader is not None:
            self._reader.cancel()
