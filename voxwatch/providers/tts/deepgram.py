"""Deepgram Aura-2 text to speech over the `/v1/speak` WebSocket, as the vendor documents it.

`wss://api.deepgram.com/v1/speak?model=aura-2-thalia-en&encoding=linear16&sample_rate=24000` (the
voice is part of the model name), auth `Authorization: Token <key>`. The client sends
`{"type": "Speak", "text"}`, then `{"type": "Flush"}` to have the buffered text spoken at once, and
`{"type": "Close"}` to end the session (the server flushes and closes). The server sends the audio
as binary frames (linear16: little-endian int16, no header), `{"type": "Flushed", "sequence_id"}`
once a flush's audio is out, and JSON `Metadata` (request_id, model_name, model_version,
model_uuid), `Cleared` and `Warning` (description, code) messages.

Streamed text (METHOD "TTS: streamed text and cancel"; docs/vendor-notes/tts-streamed-text.md): a
`Speak` per piece, then `Flush`; once the reply is audible, `{"type": "Clear"}`, which the server
answers with `Cleared` once it has stopped: the reply is read until then.
"""

from __future__ import annotations

import json
from typing import Sequence
from urllib.parse import urlencode

import websockets

from voxwatch.providers.base import ProviderError
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.foundation.events import AUDIO, CANCEL_ACK, CLOSED, Timeline
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.text_feed import Audible, TextFeed
from voxwatch.providers.session.ws_session import Reader

VENDOR = "Deepgram"
DEFAULT_URL = "wss://api.deepgram.com"
SAMPLE_RATE = 24000


class DeepgramAuraTTS:
    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "DeepgramAuraSession":
        """Open the stream before t0; the voice is the model name (`voice` is not a separate parameter)."""
        key = require_key(self.model.vendor)
        query = urlencode({"model": self.model.vendor_model, "encoding": "linear16", "sample_rate": SAMPLE_RATE})
        ws = await open_websocket(f"{self.url}/v1/speak?{query}", {"Authorization": f"Token {key.reveal()}"},
                                  VENDOR, clock=timeline.clock)
        return DeepgramAuraSession(ws, timeline)


class DeepgramAuraSession(Reader):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline) -> None:
        self.ws, self.timeline = ws, timeline
        self._feed: TextFeed | None = None  # a streamed-text reply's writer and cancel

    async def synthesize(self, text: str) -> None:
        await self._request_reply([json.dumps({"type": "Speak", "text": text}), json.dumps({"type": "Flush"})])

    async def synthesize_streamed(self, pieces: Sequence[tuple[str, float]], audible: Audible) -> None:
        """A `Speak` per piece (text, ms after the first piece's write), then `Flush`; `Clear` once audible."""
        self._feed = TextFeed(self.ws, self.timeline, audible, json.dumps({"type": "Clear"}))
        self._feed.start([json.dumps({"type": "Speak", "text": text}) for text, _ in pieces], [at for _, at in pieces],
                         then=[json.dumps({"type": "Flush"})])
        try:
            await self._read_reply()
        finally:
            await self._feed.finish()
        self.timeline.mark(CLOSED)

    async def _read(self) -> None:
        """Binary audio until `Flushed` (once a streamed reply is cancelled: until `Cleared`); a warning
        with no audio at all is the reason for the failure."""
        left, offset, warning, flushed, feed = b"", 0, None, False, self._feed
        async for message, at in received(self.ws):
            if isinstance(message, bytes):
                data = left + message
                cut = len(data) - len(data) % 2
                left, pcm = data[cut:], data[:cut]
                if pcm:
                    self.timeline.mark(AUDIO, at, sample_offset=offset, n_samples=len(pcm) // 2,
                                       sample_rate=SAMPLE_RATE, audio=pcm)
                    offset += len(pcm) // 2
                    if feed is not None:
                        await feed.heard_chunk()
                continue
            data = json.loads(message)
            kind = data["type"]
            if kind == "Cleared" and feed is not None and feed.cancelled:
                self.timeline.mark(CANCEL_ACK, at)
                flushed = True
                break
            if kind == "Flushed":
                flushed = True
                if feed is None or not feed.cancelled:
                    break
            if kind == "Warning":
                warning = f"{data.get('code')}: {data.get('description')}"
            elif kind == "Error":
                raise ProviderError(f"{VENDOR} error: {str(data.get('description') or data.get('err_msg'))[:300]}")
        if left:
            raise ProviderError(f"malformed audio from {VENDOR} (a split sample)", "malformed")
        if offset == 0 and warning is not None:
            raise ProviderError(f"{VENDOR} spoke nothing; warning {warning[:300]}")
        if not flushed:  # the server closed normally before Flushed: the audio was cut short
            raise closed(VENDOR, self.ws.close_code, "before Flushed")

    async def aclose(self) -> None:
        """Close (the server flushes and ends the session), then close the socket."""
        try:
            await self.ws.send(json.dumps({"type": "Close"}))
        except websockets.ConnectionClosed:
            pass
        await self.ws.close()
