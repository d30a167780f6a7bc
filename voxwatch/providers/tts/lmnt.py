"""LMNT text to speech over the Speech Sessions WebSocket (API version 1.1), as the vendor documents it.

Protocol facts (copied as facts; sources: the official SDK lmnt-com/lmnt-python @ e20c3856 (2026-05-09,
PyPI lmnt 2.13.0), generated from LMNT's AsyncAPI spec: src/lmnt/resources/sessions.py,
src/lmnt/types/speech_session_*.py, src/lmnt/types/error_body.py, src/lmnt/_api_version.py; the
vendor pages https://docs.lmnt.com/api/speech-sessions/create, https://docs.lmnt.com/build-with-lmnt/speech-sessions-api
and https://api.lmnt.com/spec; Coval's runner providers/tts/lmnt.py @ bf95d1b, Apache-2.0, read as a
reference for the same facts):

- `wss://api.lmnt.com/v1/ai/speech/stream`. No auth on the handshake: the key goes in the first
  (init) message, `{"X-API-Key", "lmnt-version": "1.1", "voice", "format", "sample_rate",
  "language", "return_timestamps"}` ("except for the WebSocket endpoint, which accepts an api key in
  the init message": api.lmnt.com/spec `conventions.auth`). The type model names it
  `{"type": "init"}` (types/speech_session_init.py); the SDK leaves `type` out, Coval sends it.
- The server answers the init with `{"type": "ready", "request_id"}`. That exchange is the session's
  set-up: it happens in `connect`, before t0 (METHOD: set-up is `connect_ms`, not TTFB).
- `format` `pcm_s16le` is raw 16-bit little-endian samples; `sample_rate` is 8000, 16000 or 24000
  (default 24000). Other formats: mp3 (96 kbps, the legacy default), pcm_f32le, ulaw (with a WAV
  header), webm.
- Client frames: `{"type": "text", "text"}` appends text; the server buffers it "until enough text
  has been received", so text alone may yield no speech (docs speech-sessions-api); `{"type":
  "flush", "nonce"}` has the buffered text spoken now; `{"type": "reset", "nonce"}` drops it;
  `{"type": "finish"}`: no more text, the server closes once it has spoken the rest. REQUEST_SENT is
  the flush: it is what starts synthesis.
- Server frames: the audio as binary WebSocket frames in the chosen format (nothing base64);
  `{"type": "timestamps", "timestamps": [{"text", "start", "duration"}]}` when asked for;
  `{"type": "flush_complete", "nonce"}` "once it has finished streaming the flushed audio" (the end
  of one synthesis); `{"type": "error", "error": {"message", "type"}, "request_id"}`, after which
  "the connection closes immediately", its `type` one of invalid_request_error,
  authentication_error, permission_error, not_found_error, payment_required_error,
  rate_limit_error, internal_server_error (types/error_body.py).
- LMNT documents no close codes of its own (the shared RFC 6455 reading applies) and no rate limit
  headers on this endpoint; its refusals are the error envelope above.

The adapter asks for English (`language: "en"`, not the default `auto`, which would guess from the
text): the languages LMNT's voices take were not confirmed here, so it speaks English only.
"""

from __future__ import annotations

import json

import websockets

from voxwatch.foundation.events import CLOSED, REQUEST_SENT, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.providers.session.pcm import PCMMarks
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import Reader, settle, until_ready

VENDOR = "LMNT"
DEFAULT_URL = "wss://api.lmnt.com"
PATH = "/v1/ai/speech/stream"
API_VERSION = "1.1"
SAMPLE_RATE = 24000
DEFAULT_VOICE = "leah"  # the SDK README's example voice
ERROR_STATUS = {  # types/error_body.py `type` -> the row status
    "authentication_error": "auth_error",
    "permission_error": "auth_error",
    "rate_limit_error": "rate_limited",
    "internal_server_error": "server_error",
}


def error_of(data: dict) -> ProviderError:
    """LMNT's error envelope `{"type": "error", "error": {"message", "type"}}`, by kind."""
    body = data.get("error") if isinstance(data.get("error"), dict) else {}
    kind = str(body.get("type") or "unknown")
    return ProviderError(f"{VENDOR} {kind}: {str(body.get('message') or '')[:300]}", ERROR_STATUS.get(kind, "error"))


class LMNTTTS:
    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "LMNTSession":
        """Open the session and send the init; return once LMNT says `ready` (all before t0)."""
        key = require_key(self.model.vendor)
        ws = await open_websocket(f"{self.url}{PATH}", {}, VENDOR, clock=timeline.clock)
        init = {"type": "init", "X-API-Key": key.reveal(), "lmnt-version": API_VERSION,
                "voice": voice or self.model.voice or DEFAULT_VOICE, "format": "pcm_s16le",
                "sample_rate": SAMPLE_RATE, "language": "en", "return_timestamps": False}
        await settle(ws, until_ready(ws, VENDOR, _ready, send=json.dumps(init)))
        return LMNTSession(ws, timeline)


def _ready(data: dict) -> bool | None:
    """`ready` after the init (an `error` instead refuses it)."""
    if data["type"] == "error":
        raise error_of(data)
    return True if data["type"] == "ready" else None


class LMNTSession(Reader):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline) -> None:
        self.ws, self.timeline = ws, timeline
        self._nonce = 0

    async def synthesize(self, text: str) -> None:
        self._nonce += 1
        try:
            await self.ws.send(json.dumps({"type": "text", "text": text}))
            await self.ws.send(json.dumps({"type": "flush", "nonce": self._nonce}))
            self.timeline.mark(REQUEST_SENT)
        except websockets.ConnectionClosed as exc:
            raise closed(VENDOR, exc) from None
        await self._read_reply()
        self.timeline.mark(CLOSED)

    async def _read(self) -> None:
        """Binary audio until the `flush_complete` of this flush's nonce; an error envelope fails it."""
        audio = PCMMarks(self.timeline, SAMPLE_RATE, VENDOR)
        async for message, at in received(self.ws):
            if isinstance(message, bytes):
                audio.add(message, at)
                continue
            data = json.loads(message)
            kind = data["type"]
            if kind == "error":
                raise error_of(data)
            if kind == "flush_complete" and data["nonce"] == self._nonce:
                break
        else:  # the server closed normally before flush_complete: the audio was cut short
            raise closed(VENDOR, self.ws.close_code, "before flush_complete")
        audio.end()

    async def aclose(self) -> None:
        """`finish` (the server closes once nothing is left to speak), then close the socket."""
        try:
            await self.ws.send(json.dumps({"type": "finish"}))
        except websockets.ConnectionClosed:
            pass
        await self.ws.close()
