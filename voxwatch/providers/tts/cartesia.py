"""Cartesia Sonic text-to-speech over the `/tts/websocket` WebSocket, as the vendor documents it.

A generation request is one JSON message (model_id, transcript, voice, output_format, context_id,
continue, language: the dataset's, an ISO 639-1 code); audio comes back as `{"type": "chunk", "data": <base64 PCM>}` messages, then
`{"type": "done"}`; `{"type": "error"}` ends the context. Auth: `Authorization: Bearer <key>`
with the `Cartesia-Version` header.
"""

from __future__ import annotations

import json
import uuid

from voxwatch.providers.base import ProviderError, language_copy
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.foundation.events import Timeline
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.pcm import mark_base64
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import Reader

DEFAULT_URL = "wss://api.cartesia.ai"
API_VERSION = "2026-03-01"
SAMPLE_RATE = 24000


class CartesiaTTS:
    language = "en"

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    def in_language(self, language: str) -> "CartesiaTTS":
        """A copy whose requests name `language`: Sonic's voices speak every language it supports, and
        its list was not confirmed here, so Cartesia refuses one it does not take itself (a failure row)."""
        return language_copy(self, language, None)

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "CartesiaSession":
        key = require_key(self.model.vendor)
        ws = await open_websocket(f"{self.url}/tts/websocket", {"Authorization": f"Bearer {key.reveal()}",
                                                                "Cartesia-Version": API_VERSION}, "Cartesia",
                                  clock=timeline.clock)
        return CartesiaSession(ws, timeline, self.model.id.split("/", 1)[1], voice or self.model.voice or "",
                               self.language)


class CartesiaSession(Reader):
    vendor = "Cartesia"

    def __init__(self, ws, timeline: Timeline, model_id: str, voice_id: str, language: str = "en") -> None:
        self.ws, self.timeline, self.model_id, self.voice_id = ws, timeline, model_id, voice_id
        self.language = language
        self._context = ""  # the context_id of the generation under way

    async def synthesize(self, text: str) -> None:
        self._context = str(uuid.uuid4())
        await self._request_reply([json.dumps({
            "model_id": self.model_id, "transcript": text, "voice": {"mode": "id", "id": self.voice_id},
            "language": self.language, "context_id": self._context, "continue": False,
            "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": SAMPLE_RATE}})])

    async def _read(self) -> None:
        offset = 0
        async for message, at in received(self.ws):
            data = json.loads(message)
            if data.get("context_id") not in (None, self._context):
                continue
            if data.get("type") == "chunk":
                offset = mark_base64(self.timeline, at, data["data"], offset, SAMPLE_RATE)
            elif data.get("type") == "error":
                raise ProviderError(f"Cartesia error: {data.get('title') or data.get('error') or data.get('message')}")
            if data.get("done"):
                break
        else:  # the server closed normally before `done`: the audio was cut short
            raise closed("Cartesia", self.ws.close_code, "before done")

    async def aclose(self) -> None:
        await self.ws.close()
