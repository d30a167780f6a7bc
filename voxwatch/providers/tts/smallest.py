"""Smallest.ai Lightning text to speech over its live WebSocket, as the vendor documents it (its Pulse
speech to text is stt/smallest.py).

Protocol facts followed (docs.smallest.ai/waves/v-4-0-0/api-reference/api-reference/text-to-speech/tts,
the AsyncAPI 2.6.0 of channel `/waves/v1/tts/live`; the "Streaming" guide at
docs.smallest.ai/waves/documentation/text-to-speech-lightning/streaming; concurrency at
docs.smallest.ai/waves/api-reference/api-references/concurrency-and-limits; read 2026-12-07):
- `wss://api.smallest.ai/waves/v1/tts/live`, auth `Authorization: Bearer <key>` on the handshake.
- One JSON request a synthesis: `text` and `voice_id` (required), `model` (`lightning_v3.1`, the
  default, or `lightning_v3.1_pro`), `language`, `sample_rate` (8000, 16000, 24000 or 44100; the
  default is 44100, so it is always named), `output_format` (`pcm`: headerless 16-bit PCM) and
  `complete_backoff_ms` (0-10000, default 4000: "the time in ms to wait after the last chunk is sent
  before sending the complete response").
- The server answers with `{"status": "chunk", "data": {"audio": <base64>}}` messages, then
  `{"status": "complete"}`, the terminal frame, after which it closes the WebSocket; an error is
  `{"status": "error", "message"}` (the documented idle-timeout example).
- `complete` comes `complete_backoff_ms` after the last chunk. The request sets it to 0: the whole
  text goes in one request, so there is nothing to wait for, and the default would hold every
  session (and its worker's slot) 4 s past its audio. No clock reads `complete` (synthesis time runs
  to the last chunk), so the setting changes no number.
References (protocol facts only): pipecat-ai/pipecat src/pipecat/services/smallest/tts.py @ acead05;
coval-ai/benchmarks runner/src/coval_bench/providers/tts/smallest.py @ bf95d1b.
"""

from __future__ import annotations

import json

from voxwatch.foundation.events import Timeline
from voxwatch.providers.base import ProviderError, language_copy
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.providers.session.pcm import mark_base64
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import Reader

VENDOR = "Smallest"
DEFAULT_URL = "wss://api.smallest.ai"
PATH = "/waves/v1/tts/live"
SAMPLE_RATE = 24000


class SmallestLightningTTS:
    language = "en"

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    def in_language(self, language: str) -> "SmallestLightningTTS":
        """A copy whose requests name `language`; which voice speaks which language differs per voice
        (the voices endpoint), so Smallest refuses one its voice does not take (a failure row)."""
        return language_copy(self, language, None)

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "LightningSession":
        key = require_key(self.model.vendor)
        ws = await open_websocket(f"{self.url}{PATH}", {"Authorization": f"Bearer {key.reveal()}"}, VENDOR,
                                  clock=timeline.clock)
        return LightningSession(ws, timeline, self.model.vendor_model, voice or self.model.voice or "", self.language)


class LightningSession(Reader):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline, model: str, voice_id: str, language: str) -> None:
        self.ws, self.timeline, self.model, self.voice_id, self.language = ws, timeline, model, voice_id, language

    async def synthesize(self, text: str) -> None:
        await self._request_reply([json.dumps({"text": text, "voice_id": self.voice_id, "model": self.model,
                                               "language": self.language, "sample_rate": SAMPLE_RATE,
                                               "output_format": "pcm", "complete_backoff_ms": 0})])

    async def _read(self) -> None:
        offset = 0
        async for message, at in received(self.ws):
            data = json.loads(message)
            status = data.get("status")  # a message without one (a pong) carries no audio
            if status == "chunk":
                offset = mark_base64(self.timeline, at, data["data"]["audio"], offset, SAMPLE_RATE)
            elif status == "complete":
                return
            elif status == "error":
                raise ProviderError(f"{VENDOR} error: {str(data.get('message') or data.get('error'))[:300]}")
        raise closed(VENDOR, self.ws.close_code, "before complete")  # closed normally: the audio was cut short

    async def aclose(self) -> None:
        await self.ws.close()
