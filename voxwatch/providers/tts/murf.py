"""Murf Falcon text-to-speech over the stream-input WebSocket (`/v1/speech/stream-input`), as the
vendor documents it.

Protocol facts, each with its source (read 2026-12-07):
- `wss://global.api.murf.ai/v1/speech/stream-input` routes to a region itself; regional hosts
  (`us-east`, `eu-central`, ...) serve the same path; `VOXWATCH_MURF_BASE_URL` picks one
  (https://murf.ai/api/docs/api-reference/text-to-speech/stream-input).
- Auth: the `api-key` header (murf-ai/murf-python-sdk src/murf/core/client_wrapper.py @8cbd638,
  2026-03-05; the vendor-maintained Pipecat plugin murf-ai/pipecat-murf-tts src/pipecat_murf_tts/tts.py
  @0382741 sends it on the WebSocket handshake).
- Query parameters: `model` (SDK enum `FALCON`/`GEN2`; the plugin's default `falcon-2`), `sample_rate`
  (8000, 24000, 44100, 48000, and 16000 in the SDK and the plugin; "Defaults to 24000 for Falcon"),
  `channel_type` (`MONO`), `format` (default `WAV`; `PCM` is headerless). The adapter asks for `PCM` at 24 kHz mono, and still takes a
  RIFF header off a chunk that carries one (a WAV header is not audio).
- Client messages, bare JSON objects (SDK src/murf/stream_input/types, SendMessage): voice
  configuration `{"voice_config": {"voice_id", ...}, "context_id"}` (SetVoiceConfigurationOrInitializeContext),
  text `{"text", "context_id", "end"}` where `end: true` "indicates if this is the end of the text
  stream", and `{"clear": true, "context_id"}`. The server buffers text (`min_buffer_size` characters,
  `max_buffer_delay_in_ms`) unless `end` is set, so the adapter sends the prompt whole with `end: true`
  and the clock starts at that message.
- Server messages (SDK ReceiveMessage): `{"audio": <base64>, "context_id"}` (AudioOutput), then
  `{"final": true, "context_id"}` (FinalOutput: "you will not receive audio param in this message");
  an error is a JSON object with `error` (the plugin's `if "error" in data`).
- The session "will automatically close after 3 minutes of inactivity" (https://murf.ai/api/docs/text-to-speech/web-sockets);
  the adapter connects per item, just before its synthesis.
References for the same facts (not code): Coval's runner runner/src/coval_bench/providers/tts/murf.py
@bf95d1b (Apache-2.0). Murf documents no close codes of its own: a close reads by RFC 6455 (close_codes).

The language is not sent: the Falcon voice registered is an en-US voice (the `locale` of a
multilingual voice is not used here), so the adapter takes English datasets only.
"""

from __future__ import annotations

import base64
import json
import uuid
from urllib.parse import urlencode

import websockets

from voxwatch.foundation.events import Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.providers.session.pcm import PCMMarks, wav_payload
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import Reader

VENDOR = "Murf"
DEFAULT_URL = "wss://global.api.murf.ai"
PATH = "/v1/speech/stream-input"
SAMPLE_RATE = 24000


class MurfTTS:
    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "MurfSession":
        """Open the stream and set the voice for this context, before t0."""
        key = require_key(self.model.vendor)
        query = urlencode({"model": self.model.vendor_model, "sample_rate": SAMPLE_RATE, "channel_type": "MONO",
                           "format": "PCM"})
        ws = await open_websocket(f"{self.url}{PATH}?{query}", {"api-key": key.reveal()}, VENDOR, clock=timeline.clock)
        session = MurfSession(ws, timeline, str(uuid.uuid4()))
        try:
            await ws.send(json.dumps({"voice_config": {"voice_id": voice or self.model.voice or ""},
                                      "context_id": session.context}))
        except websockets.ConnectionClosed as exc:
            raise closed(VENDOR, exc, "at the voice configuration") from None
        return session


class MurfSession(Reader):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline, context: str) -> None:
        self.ws, self.timeline, self.context = ws, timeline, context

    async def synthesize(self, text: str) -> None:
        await self._request_reply([json.dumps({"text": text, "context_id": self.context, "end": True})])

    async def _read(self) -> None:
        """AudioOutput messages until FinalOutput for this context; an `error` ends the synthesis."""
        audio = PCMMarks(self.timeline, SAMPLE_RATE, VENDOR)
        async for message, at in received(self.ws):
            data = json.loads(message)
            if "error" in data:
                raise ProviderError(f"{VENDOR} error: {str(data['error'])[:300]}")
            if data.get("context_id") not in (None, self.context):
                continue
            if data.get("audio"):
                audio.add(wav_payload(base64.b64decode(data["audio"], validate=True), VENDOR), at)
            if data.get("final"):
                break
        else:  # the server closed normally before `final`: the audio was cut short
            raise closed(VENDOR, self.ws.close_code, "before final")
        audio.end()

    async def aclose(self) -> None:
        await self.ws.close()
