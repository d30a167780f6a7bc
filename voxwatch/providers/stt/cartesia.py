"""Cartesia Ink speech to text over the realtime manual-finalize WebSocket (`/stt/websocket`), as the
vendor documents it (its Sonic text to speech is tts/cartesia.py).

Protocol facts followed (docs.cartesia.ai/api-reference/stt/websocket, "Realtime Speech-to-Text
(Manual)"; docs.cartesia.ai/use-the-api/compare-stt-endpoints; the official SDK cartesia-ai/cartesia-python
src/cartesia/types/stt/ and tests/lib/resources/stt/test_manual_finalize.py @ 30f08c77, 2026-08-14;
read 2026-12-07):
- `wss://api.cartesia.ai/stt/websocket?model=ink-2&encoding=pcm_s16le&sample_rate=16000&language=en`,
  auth `Authorization: Bearer <key>` with the `Cartesia-Version` header (required). `model`,
  `encoding` and `sample_rate` are required; ink-2 is English only. For the phone condition the
  encoding is `pcm_mulaw` at 8000 Hz (the SDK's STTEncoding).
- Audio goes as binary frames, at most one second of audio a second (real time, as the harness paces).
- The manual endpoint does no turn detection: its finals come when the client sends the text
  command `finalize` (a plain string, not JSON), answered by the finals and then `flush_done`.
  `close` (the SDK's; `done` on the older page) processes the rest, is answered `done`, and the
  server closes.
- `{"type": "transcript", "is_final", "text", "request_id", "duration", "language", "words"}`: a final's
  `text` "is a delta from the last transcript chunk with is_final: true": the finals joined are the
  transcript (the metrics join them with one space, which is their concatenation where the deltas
  break between words, as the documented ones do: "hello ").
- `{"type": "error", "title", "message", "error_code", "status_code", "request_id"}` (the SDK's
  STTErrorResponse): its `status_code` is read as an HTTP status (endpoints.http_status). A refused
  key or plan limit is an HTTP status on the upgrade. Cartesia documents no close codes.

The turn ends at `flush_done` after the finalize that `end_audio` sends; TTFS is the arrival of the
last final with words before it.
"""

from __future__ import annotations

import asyncio
import copy
import json
from urllib.parse import urlencode

from voxwatch.foundation.events import FINAL, PARTIAL, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, http_status, is_loopback, open_websocket, require_key
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import ReaderSession

VENDOR = "Cartesia"
DEFAULT_URL = "wss://api.cartesia.ai"
API_VERSION = "2026-03-01"  # the date the API reference's examples send
CLOSE_WAIT_S = 2.0

ENCODINGS = {"mulaw": "pcm_mulaw"}
"""Each wire encoding voxwatch sends (datasets.wire) and Cartesia's `encoding` for it."""


class CartesiaInkSTT:
    sample_rate = 16000
    encoding = "pcm_s16le"
    wire_encodings = tuple(ENCODINGS)

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    def on_wire(self, wire) -> "CartesiaInkSTT":
        """A copy that declares the wire format (the phone line's 8 kHz mu-law) in its query."""
        wired = copy.copy(self)
        wired.encoding, wired.sample_rate = ENCODINGS[wire.encoding], wire.sample_rate
        return wired

    async def connect(self, timeline: Timeline) -> "InkSession":
        key = require_key(self.model.vendor)
        query = urlencode({"model": self.model.vendor_model, "encoding": self.encoding,
                           "sample_rate": self.sample_rate, "language": "en"})
        ws = await open_websocket(f"{self.url}/stt/websocket?{query}", {"Authorization": f"Bearer {key.reveal()}",
                                                                       "Cartesia-Version": API_VERSION}, VENDOR,
                                  clock=timeline.clock)
        return InkSession(ws, timeline)


def error_of(data: dict) -> ProviderError:
    """An error message's failure, by its status_code read as an HTTP status."""
    code = data.get("status_code") or data.get("code")
    status = http_status(int(code)) if isinstance(code, int) else "error"
    return ProviderError(f"{VENDOR} error {data.get('error_code') or code}: "
                         f"{str(data.get('message') or data.get('title'))[:300]}", status)


class InkSession(ReaderSession):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline) -> None:
        self.timeline = timeline
        self._finalizing = False  # finalize sent
        self._closing = False  # close sent
        self._flushed = asyncio.Event()
        super().__init__(ws)

    async def _read(self) -> None:
        async for message, at in received(self.ws):
            if isinstance(message, bytes):
                continue
            data = json.loads(message)
            kind = data["type"]
            if kind == "transcript":
                text, is_final = data["text"], data.get("is_final", False)
                if not isinstance(text, str) or not isinstance(is_final, bool):
                    raise TypeError("transcript fields of the wrong type")
                if is_final:
                    self.timeline.mark(FINAL, at, text=text)
                elif text.strip():
                    self.timeline.mark(PARTIAL, at, text=text)
            elif kind == "flush_done" and self._finalizing:
                self._flushed.set()
            elif kind == "done":
                return
            elif kind == "error":
                raise error_of(data)
        if not self._closing:  # closed normally while the stream was open: cut short
            raise closed(VENDOR, self.ws.close_code)

    async def send_audio(self, pcm16: bytes) -> None:
        await self._send(pcm16)

    async def end_audio(self) -> None:
        """finalize: the finals for all the audio sent, then flush_done."""
        self._finalizing = True
        await self._send("finalize")

    async def wait_final(self) -> None:
        await self._wait_for(self._flushed)

    async def _close(self) -> None:
        self._closing = True
        await self._send("close")

    async def aclose(self) -> None:
        """close, let the server answer done and close (briefly), then close."""
        await self._end_and_close(self._close, CLOSE_WAIT_S)
