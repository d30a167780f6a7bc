"""xAI text to speech, streaming (the `/v1/tts` WebSocket).

xAI's reference renders its "Streaming text to speech" WebSocket section client-side, so its text
could not be read; the protocol facts below come from the REST section of the same page
(https://docs.x.ai/developers/rest-api-reference/inference/voice, read 2026-12-07: languages,
voices, codecs and sample rates), the official SDK's REST client (xai-org/xai-sdk-python
src/xai_sdk/aio/tts.py @ 34e8c3e: `voice_id` defaults to `eve`), and, for the WebSocket messages, two
references that speak it: Pipecat `src/pipecat/services/xai/tts.py` @ 002d791 (BSD-2) and Coval's
runner `runner/src/coval_bench/providers/tts/xai.py` @ bf95d1b (Apache-2.0). Facts, not code:
- `wss://api.x.ai/v1/tts?voice=<id>&language=<code>&codec=pcm&sample_rate=24000`, the key in
  `Authorization: Bearer <key>` on the upgrade. Every audio setting is a query parameter: a voice or
  rate is fixed for the connection. No model parameter exists.
- The client sends `{"type": "text.delta", "delta": <text>}` (any number), then `{"type":
  "text.done"}`, which ends the utterance and has it spoken. Here the prompt goes whole, in one
  delta: REQUEST_SENT is text.done's write.
- The server answers `{"type": "audio.delta", "delta": <base64 audio>}` events, then `{"type":
  "audio.done"}` (the utterance is over; the socket stays open); `{"type": "error", "message"}` is a
  failure. `codec=pcm` is signed 16-bit little-endian mono; 24 kHz is the documented default rate.
- Close codes, rate limits and session limits of this endpoint: not documented where readable (the
  RFC reading of a close applies; a refused upgrade is read by its HTTP status).
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

from voxwatch.foundation.events import Timeline
from voxwatch.providers.base import ProviderError, language_copy
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.providers.session.pcm import mark_base64
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import Reader, decode_event

VENDOR = "xAI"
DEFAULT_URL = "wss://api.x.ai"
PATH = "/v1/tts"
SAMPLE_RATE = 24000
DEFAULT_VOICE = "eve"
LANGUAGES = frozenset({"en", "bn", "zh", "fr", "de", "hi", "id", "it", "ja", "ko", "ru", "tr", "vi"})
"""The documented `language` values that are a bare ISO 639-1 code (the others name a region:
ar-EG, pt-BR, es-MX, ...; voxwatch declares a dataset's primary subtag)."""


class XAITTS:
    language = "en"

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    def in_language(self, language: str) -> "XAITTS | None":
        """A copy whose query names `language`, or None when xAI documents no bare code for it."""
        return language_copy(self, language, LANGUAGES)

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "XAITTSSession":
        key = require_key(self.model.vendor)
        query = urlencode({"voice": voice or self.model.voice or DEFAULT_VOICE, "language": self.language,
                           "codec": "pcm", "sample_rate": SAMPLE_RATE})
        ws = await open_websocket(f"{self.url}{PATH}?{query}", {"Authorization": f"Bearer {key.reveal()}"},
                                  VENDOR, clock=timeline.clock)
        return XAITTSSession(ws, timeline)


class XAITTSSession(Reader):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline) -> None:
        self.ws, self.timeline = ws, timeline

    async def synthesize(self, text: str) -> None:
        await self._request_reply([json.dumps({"type": "text.delta", "delta": text}),
                                   json.dumps({"type": "text.done"})])

    async def _read(self) -> None:
        offset = 0
        async for message, at in received(self.ws):
            data = decode_event(message)
            kind = data["type"]
            if kind == "audio.delta":
                offset = mark_base64(self.timeline, at, data["delta"], offset, SAMPLE_RATE)
            elif kind == "audio.done":
                return
            elif kind == "error":
                raise ProviderError(f"{VENDOR} error: {str(data.get('message') or data.get('error'))[:300]}")
        raise closed(VENDOR, self.ws.close_code, "before audio.done")

    async def aclose(self) -> None:
        await self.ws.close()
