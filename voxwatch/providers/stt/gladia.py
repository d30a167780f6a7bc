"""Gladia live speech-to-text (live API v2: an HTTP POST, then a WebSocket), as the vendor documents it.

Protocol facts followed (read 2026-12-07 from gladiaio/docs @ ec35f7d9, 2026-04-30, published at
docs.gladia.io: chapters/live-stt/quickstart.mdx, features/partial-transcripts.mdx,
features/endpointing.mdx, api-reference/v2/live/*.mdx and asyncapi.yaml; and the official SDK
gladiaio/sdk @ 0ceed6a8, 2026-07-23: packages/sdk-js/src/v2/live/session.ts, generated-types.ts,
client.ts):
- Step one: `POST https://api.gladia.io/v2/live` with the key in `x-gladia-key` and the whole
  session config as the JSON body: `encoding` (`wav/pcm`, `wav/alaw`, `wav/ulaw`), `bit_depth`,
  `sample_rate`, `channels`, `model` (`solaria-1`, the SDK's only `LiveV2Model`) and
  `messages_config`. The answer is `{"id", "created_at", "url"}`; a refusal is an HTTP status
  (endpoints.http_failure reads it). Step two: a WebSocket to the returned `url`, whose token
  authorizes it (no auth header). Both steps are set-up: the clocks start at the first audio.
- Audio goes as binary frames of raw samples ("No need to add WAV headers"); Gladia suggests about
  100 ms a chunk for low latency; the harness's 20 ms chunks are sent as they come.
- `messages_config`: partial transcripts are off unless `receive_partial_transcripts` is set (they
  come from a faster, smaller model than the finals); lifecycle events (`start_session`,
  `start_recording`, `end_recording`, `end_session`) are requested so the end of the recording is seen.
- Server messages carry `session_id`, `created_at`, `type`. A `transcript` has `data.id` (shared by
  the partials and the final of one utterance), `data.is_final` and `data.utterance` (`text`,
  `start`, `end` in seconds, `words`, `language`). A partial replaces the previous one of its
  utterance; each final is one utterance. One documented example (the multiple-channels page)
  omits `is_final`: a transcript without it is read as a final, since partials are opt-in and
  always say `is_final: false`.
- Finals are utterance-level: an utterance ends after `endpointing` seconds of silence (default
  0.05 s) or after `maximum_duration_without_endpointing` (default 5 s); the defaults are used.
- `{"type": "stop_recording"}` ends the audio: Gladia sends the remaining finals, then
  `end_recording` (its post-processing and `end_session` follow, then the close, code 1000). So the
  end of the recording is the end of the final transcript; the close is not waited for.
- A close with 1000 is Gladia closing on purpose; the SDK treats 4400-4499 as final and retries the
  others (client.ts `wsRetry.closeCodes`). No code's meaning is documented, so close_codes.py's
  defaults read them. A close before `stop_recording` ends the session early.
"""

from __future__ import annotations

import asyncio
import copy
import json

from voxwatch.foundation.events import FINAL, PARTIAL, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import (WarmClients, base_url, http_errors, http_failure, http_status,
                                                  is_loopback, open_websocket, require_key)
from voxwatch.providers.session.ws_session import MALFORMED, ReaderSession, malformed

VENDOR = "Gladia"
DEFAULT_URL = "https://api.gladia.io"
PATH = "/v2/live"
ENCODINGS = {"mulaw": ("wav/ulaw", 8)}
"""Each wire encoding voxwatch sends (datasets.wire): Gladia's `encoding` and `bit_depth` for it."""
MESSAGES = {"receive_partial_transcripts": True, "receive_final_transcripts": True,
            "receive_lifecycle_events": True}


class GladiaSTT:
    sample_rate = 16000
    encoding, bit_depth = "wav/pcm", 16
    wire_encodings = tuple(ENCODINGS)

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)
        self._clients = WarmClients(self.url, VENDOR, lambda: {"x-gladia-key": require_key(model.vendor).reveal()})

    def on_wire(self, wire) -> "GladiaSTT":
        """A copy that declares the wire format (the phone line's 8 kHz mu-law) in its session config."""
        wired = copy.copy(self)
        (wired.encoding, wired.bit_depth), wired.sample_rate = ENCODINGS[wire.encoding], wire.sample_rate
        return wired

    async def connect(self, timeline: Timeline) -> "GladiaSession":
        """Create the live session, then open its WebSocket: both before the first audio."""
        require_key(self.model.vendor)
        client = await self._clients.get()
        config = {"encoding": self.encoding, "sample_rate": self.sample_rate, "bit_depth": self.bit_depth,
                  "channels": 1, "model": self.model.vendor_model, "messages_config": MESSAGES}
        with http_errors(VENDOR):
            response = await client.client.post(PATH, json=config)
        if response.status_code >= 400:
            raise http_failure(response.status_code, response.headers, VENDOR)
        try:
            url = response.json()["url"]
            if not isinstance(url, str) or not url.startswith(("wss://", "ws://")):
                raise TypeError("the session url is not a WebSocket url")
        except MALFORMED as exc:
            raise malformed(VENDOR, exc) from None
        ws = await open_websocket(url, {}, VENDOR, clock=timeline.clock)
        return GladiaSession(ws, timeline)


def _error_of(data: dict) -> ProviderError | None:
    """The failure an acknowledgment or add-on message reports (`error`: status_code, exception, message)."""
    error = data.get("error")
    if not isinstance(error, dict):
        return None
    code = error.get("status_code")
    return ProviderError(f"{VENDOR} error {code} {str(error.get('exception'))[:60]}: {str(error.get('message'))[:300]}",
                         http_status(code) if isinstance(code, int) else "error")


class GladiaSession(ReaderSession):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline) -> None:
        self.timeline = timeline
        self._stopped = False  # stop_recording sent: a close from now on is the session's end
        self._recorded = asyncio.Event()  # end_recording (or end_session) has come
        super().__init__(ws)

    async def _read(self) -> None:
        async for data, at in self._messages():
            kind = data["type"]
            if kind == "transcript":
                self._transcript(data["data"], at)
            elif kind in ("end_recording", "end_session"):
                self._recorded.set()
            elif (error := _error_of(data)) is not None:
                raise error
            # acknowledgments, speech events, add-ons and newer kinds carry no transcript
        if not self._stopped:
            raise closed(VENDOR, self.ws.close_code, "before the end of the audio")

    def _transcript(self, data: dict, at: int) -> None:
        text, final = data["utterance"]["text"], data.get("is_final", True)
        if not isinstance(text, str) or not isinstance(final, bool):
            raise TypeError("utterance.text or is_final of the wrong type")
        self.timeline.mark(FINAL if final else PARTIAL, at, text=text.strip())

    async def send_audio(self, pcm16: bytes) -> None:
        await self._send(pcm16)

    async def end_audio(self) -> None:
        """stop_recording: no more audio; the remaining finals come, then end_recording."""
        self._stopped = True
        await self._send(json.dumps({"type": "stop_recording"}))

    async def wait_final(self) -> None:
        """Return once the recording has ended (its finals are in) or the session closed."""
        await self._wait_for(self._recorded)

    async def aclose(self) -> None:
        await self._close_socket()
        self._reader.cancel()
