"""Cartesia Sonic text-to-speech over the `/tts/websocket` WebSocket, as the vendor documents it.

A generation request is one JSON message (model_id, transcript, voice, output_format, context_id,
continue, language: the dataset's, an ISO 639-1 code); audio comes back as `{"type": "chunk", "data": <base64 PCM>}` messages, then
`{"type": "done"}`; `{"type": "error"}` ends the context. Auth: `Authorization: Bearer <key>`
with the `Cartesia-Version` header.

Streamed text (METHOD "TTS: streamed text and cancel"; docs/vendor-notes/tts-streamed-text.md): one
context fed piece by piece, `continue: true` on every input but the last (`continue: false`), the
inputs' other fields the same; once the reply is audible, `{"context_id", "cancel": true}`. Cartesia
acknowledges no cancel, so the reply is over once nothing came for CANCEL_QUIET_S after it.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Sequence

from voxwatch.providers.base import ProviderError, language_copy
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.foundation.events import CLOSED, Timeline
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.pcm import mark_base64
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.text_feed import Audible, TextFeed
from voxwatch.providers.session.ws_session import Reader

DEFAULT_URL = "wss://api.cartesia.ai"
API_VERSION = "2026-03-01"
SAMPLE_RATE = 24000
CANCEL_QUIET_S = 0.5


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
        self._feed: TextFeed | None = None  # a streamed-text reply's writer and cancel

    async def synthesize(self, text: str) -> None:
        self._context = str(uuid.uuid4())
        await self._request_reply([self._input(text, more=False)])

    async def synthesize_streamed(self, pieces: Sequence[tuple[str, float]], audible: Audible) -> None:
        """One context fed `pieces` (text, ms after the first piece's write), cancelled once audible."""
        self._context = str(uuid.uuid4())
        self._feed = TextFeed(self.ws, self.timeline, audible, json.dumps({"context_id": self._context,
                                                                           "cancel": True}))
        self._feed.start([self._input(text, more=i < len(pieces) - 1) for i, (text, _) in enumerate(pieces)],
                         [at for _, at in pieces])
        try:
            await self._read_reply()
        finally:
            await self._feed.finish()
        self.timeline.mark(CLOSED)

    def _input(self, transcript: str, more: bool) -> str:
        """One generation input on the context under way (`continue`: more inputs follow)."""
        return json.dumps({
            "model_id": self.model_id, "transcript": transcript, "voice": {"mode": "id", "id": self.voice_id},
            "language": self.language, "context_id": self._context, "continue": more,
            "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": SAMPLE_RATE}})

    async def _read(self) -> None:
        """Chunks until `done`; once a streamed reply is cancelled, until `done` or a quiet CANCEL_QUIET_S."""
        offset, feed = 0, self._feed
        try:
            async with asyncio.timeout(None) as quiet:
                async for message, at in received(self.ws):
                    data = json.loads(message)
                    if data.get("context_id") not in (None, self._context):
                        continue
                    if data.get("type") == "chunk":
                        offset = mark_base64(self.timeline, at, data["data"], offset, SAMPLE_RATE)
                        if feed is not None:
                            await feed.heard_chunk()
                    elif data.get("type") == "error":
                        raise ProviderError(f"Cartesia error: {data.get('title') or data.get('error') or data.get('message')}")
                    if data.get("done"):
                        return
                    if feed is not None and feed.cancelled:
                        quiet.reschedule(asyncio.get_running_loop().time() + CANCEL_QUIET_S)
        except TimeoutError:
            return  # quiet since the cancel: the reply is over
        raise closed("Cartesia", self.ws.close_code, "before done")  # closed normally before `done`: cut short

    async def aclose(self) -> None:
        await self.ws.close()
