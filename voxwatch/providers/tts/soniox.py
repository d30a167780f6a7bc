"""Soniox real-time text to speech (the `/tts-websocket` WebSocket), as Soniox documents it.

Protocol facts followed (read 2026-12-07 from stored copies): the API reference
https://soniox.com/docs/api-reference/tts/websocket-api, "Stream termination"
https://soniox.com/docs/tts/rt/termination, "Connection keepalive" https://soniox.com/docs/tts/rt/connection-keepalive,
"Limits & quotas" https://soniox.com/docs/tts/rt/limits-and-quotas and "Models" https://soniox.com/docs/tts/models:
- `wss://tts-rt.soniox.com/tts-websocket`, JSON text frames both ways, audio base64 inside. The key
  is sent in-band, as the `api_key` of each stream's config; the upgrade carries none.
- A connection multiplexes up to 5 streams by a client-chosen `stream_id`. Each stream starts with
  its config {api_key, model, language, voice, audio_format, sample_rate, stream_id}, then text
  `{"text", "text_end", "stream_id"}`: the last text carries `text_end: true`. Here every utterance
  is a new stream (a fresh stream_id on the open connection) whose text goes whole, with text_end:
  the config is part of the request, as any vendor's request carries its model and voice, and
  REQUEST_SENT is the text's write.
- Audio comes as `{"audio": <base64>, "stream_id"}`; the last audio message carries `"audio_end":
  true` (the audio is complete: the reply ends there), then `{"terminated": true, "stream_id"}`
  releases the stream, without closing the socket. `audio_format` `pcm_s16le` at 24 kHz here.
- An error is `{"stream_id", "error_code", "error_message"}`, then `terminated` for that stream; the
  connection stays open unless the failure is the connection's. The error codes read as HTTP
  statuses (400 "Missing required field: model" is the documented example; 401 a refused key and 429
  over the limits, as Soniox's limits pages say a rejected request is): `endpoints.http_status`.
- Limits: 3 concurrent connections, 5 streams a connection, 100 requests a minute, a stream at most
  2 minutes. No Retry-After is documented; idle connections are closed (keepalive every 20-30 s,
  which one utterance never needs).
"""

from __future__ import annotations

import json
import uuid

from voxwatch.foundation.events import Timeline
from voxwatch.providers.base import ProviderError, language_copy
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, http_status, is_loopback, open_websocket, require_key
from voxwatch.providers.session.pcm import mark_base64
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import Reader

VENDOR = "Soniox"
DEFAULT_URL = "wss://tts-rt.soniox.com"
PATH = "/tts-websocket"
SAMPLE_RATE = 24000
DEFAULT_VOICE = "Adrian"  # the API reference's example voice


class SonioxTTS:
    language = "en"

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    def in_language(self, language: str) -> "SonioxTTS":
        """A copy whose configs name `language`: every Soniox voice speaks every language it supports,
        and its list was not copied here, so Soniox refuses one it does not take itself."""
        return language_copy(self, language, None)

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "SonioxTTSSession":
        key = require_key(self.model.vendor)  # before the socket: no key, no connection
        ws = await open_websocket(f"{self.url}{PATH}", {}, VENDOR, clock=timeline.clock)
        config = {"api_key": key.reveal(), "model": self.model.vendor_model, "language": self.language,
                  "voice": voice or self.model.voice or DEFAULT_VOICE, "audio_format": "pcm_s16le",
                  "sample_rate": SAMPLE_RATE}
        return SonioxTTSSession(ws, timeline, config)


class SonioxTTSSession(Reader):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline, config: dict) -> None:
        self.ws, self.timeline, self._config = ws, timeline, config
        self._stream = ""  # the stream_id of the utterance under way

    async def synthesize(self, text: str) -> None:
        self._stream = f"stream-{uuid.uuid4().hex[:12]}"
        await self._request_reply([json.dumps({**self._config, "stream_id": self._stream}),
                                   json.dumps({"text": text, "text_end": True, "stream_id": self._stream})])

    async def _read(self) -> None:
        offset = 0
        async for message, at in received(self.ws):
            data = json.loads(message)
            if data.get("stream_id") != self._stream:
                continue  # an earlier stream's terminated, say
            if "error_code" in data:
                code = int(data["error_code"])
                raise ProviderError(f"{VENDOR} error {code}: {str(data.get('error_message'))[:300]}", http_status(code))
            if "audio" in data:
                offset = mark_base64(self.timeline, at, data["audio"], offset, SAMPLE_RATE)
            if data.get("audio_end"):
                return
            if data.get("terminated"):
                raise ProviderError(f"{VENDOR} terminated the stream before audio_end", "disconnected")
        raise closed(VENDOR, self.ws.close_code, "before audio_end")

    async def aclose(self) -> None:
        await self.ws.close()
