"""Gradium text-to-speech over its `/api/speech/tts` WebSocket, as the vendor documents it.

Protocol facts followed (read 2026-12-07):
- `wss://api.gradium.ai/api/speech/tts`, auth header `x-api-key: <key>`, JSON text frames both ways
  (docs.gradium.ai/guides/websocket-lifecycle; docs.gradium.ai/api-reference/endpoint/tts-websocket).
- The first message must be `setup` {model_name, voice_id, output_format}; the server answers `ready`
  {request_id, ...} (the SDK refuses a session whose first message is not `ready`: gradium-ai/gradium-py
  gradium/speech.py @1fec2be3). Connect waits for it, so worker allocation stays outside the clocks
  (the lifecycle page: then `text` messages, then `end_of_stream`).
- `output_format` defaults to `wav` (a header in the first chunk): this adapter asks for `pcm`, raw
  16-bit mono PCM at 48 kHz in 3840-sample (80 ms) chunks (gradium-ai/gradium-py@240192e5
  docs/websocket_tts_description.md; docs.gradium.ai/guides/limits). The rate is `ready.sample_rate`
  where the server states it, else pcm's documented 48 kHz.
- The client sends `{"type": "text", "text": ...}` (the clock starts at its write) and then
  `{"type": "end_of_stream"}`; the server sends `audio` {audio: base64} and `text` {text, start_s,
  stop_s} (word timings, not marked here), then `end_of_stream`, and closes (`close_ws_on_eos`
  defaults to true). The server's `end_of_stream`, not the close, is the end of the audio.
- `error` {message, code} before a close, read as `stt/gradium.py` reads it (the same host and codes:
  1008 policy violation, 1011 internal error). A session lasts at most 300 s (docs.gradium.ai/guides/limits).
- The voice is a voice id; `YTpq7expH9539ERJ` ("Emma") is the one every example of Gradium's uses.
"""

from __future__ import annotations

import json

from voxwatch.foundation.events import Timeline
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import is_loopback, base_url
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.pcm import mark_base64
from voxwatch.providers.session.ws_session import Reader
from voxwatch.providers.stt.gradium import DEFAULT_URL, VENDOR, error_of, open_session

TTS_PATH = "/api/speech/tts"
PCM_RATE = 48000  # output_format "pcm"
DEFAULT_VOICE = "YTpq7expH9539ERJ"


class GradiumTTS:
    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.emulator = is_loopback(base_url(model.vendor, DEFAULT_URL))

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "GradiumTTSSession":
        ws, ready = await open_session(self.model, TTS_PATH, {
            "model_name": self.model.vendor_model, "voice_id": voice or self.model.voice or DEFAULT_VOICE,
            "output_format": "pcm"}, timeline)
        rate = ready.get("sample_rate")
        return GradiumTTSSession(ws, timeline, rate if isinstance(rate, int) and rate > 0 else PCM_RATE)


class GradiumTTSSession(Reader):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline, sample_rate: int) -> None:
        self.ws, self.timeline, self.sample_rate = ws, timeline, sample_rate

    async def synthesize(self, text: str) -> None:
        """The text (the clock starts at its write), then `end_of_stream`: all the text there is."""
        await self._request_reply([json.dumps({"type": "text", "text": text}), json.dumps({"type": "end_of_stream"})],
                                  sent=1)

    async def _read(self) -> None:
        offset = 0
        async for message, at in received(self.ws):
            data = json.loads(message)
            kind = data["type"]
            if kind == "audio":
                offset = mark_base64(self.timeline, at, data["audio"], offset, self.sample_rate)
            elif kind == "end_of_stream":
                return
            elif kind == "error":
                raise error_of(data)
            # text: a word's timing in the audio, nothing to mark
        raise closed(VENDOR, self.ws.close_code, "before end_of_stream")  # closed normally, the audio cut short

    async def aclose(self) -> None:
        await self.ws.close()
