"""Hume Octave text to speech over the bidirectional `/v0/tts/stream/input` WebSocket.

Protocol facts followed (read 2026-12-07): Hume's reference
https://dev.hume.ai/reference/text-to-speech-tts/stream-input; the official SDK HumeAI/hume-python-sdk
@ aefc9b4 (Fern-generated from Hume's API definition: `src/hume/tts/stream_input/raw_client.py`,
`src/hume/tts/types/snippet_audio_chunk.py`, `publish_tts.py`); the official example
HumeAI/hume-api-examples @ c35b1cf `tts/tts-dotnet-quickstart` (StreamingTtsService.cs, Program.cs):
- `wss://api.hume.ai/v0/tts/stream/input` with every setting in the query, the key included
  (`api_key`: the endpoint takes no auth header; a refused key is a 401 on the upgrade). Here, as the
  official example connects: `no_binary=true` (audio only as base64 in JSON, so it is read one way),
  `instant_mode=true` (the stream-input default; it needs a voice), `strip_headers=true`,
  `format_type=pcm`; and `version` "1" or "2", the Octave generation the registry id names.
- The client sends `PublishTts` messages: `{"text", "voice": {"name", "provider": "HUME_AI"}}` (text is
  incremental; a library voice needs the HUME_AI provider, CUSTOM_VOICE being the default), then
  `{"flush": true}` ("Force the generation of audio regardless of how much text has been supplied")
  and `{"close": true}` ("Force the generation of audio and close the stream"), the official example's
  ending. REQUEST_SENT is the close's write.
- The server answers `SnippetAudioChunk` messages {type "audio", audio (base64), chunk_index,
  is_last_chunk ("last chunk streamed back from the decoder for one input snippet"), snippet_id,
  generation_id, ...} (and `timestamp` messages, ignored here), then closes the socket. The reply is
  over at that close, once the last audio message was a snippet's last chunk; a close before that
  cut the reply short. PCM is 48 kHz mono s16le (no rate parameter exists; Pipecat's and Coval's
  Hume services read it so).
- An error arrives as a JSON message with `status_code` and `message` (as Coval's runner observed
  Hume send it, `runner/tests/providers/tts/test_hume.py` @ bf95d1b: no top-level type) or with
  `type: "error"`; its status code is read as an HTTP status. Close codes, rate limits and
  concurrency caps of this endpoint are not documented (the RFC reading of a close applies).
"""

from __future__ import annotations

import base64
import json
from urllib.parse import urlencode

from voxwatch.foundation.events import AUDIO, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, http_status, is_loopback, open_websocket, require_key
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import Reader

VENDOR = "Hume"
DEFAULT_URL = "wss://api.hume.ai"
PATH = "/v0/tts/stream/input"
SAMPLE_RATE = 48000
VERSIONS = {"octave-1": "1", "octave-2": "2"}  # registry model name -> the API's `version`


def _error_text(data: dict) -> str:
    return f"{VENDOR} error {data.get('status_code') or data.get('code') or ''}: {str(data.get('message'))[:300]}"


class HumeOctaveTTS:
    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "HumeOctaveSession":
        key = require_key(self.model.vendor)
        version = VERSIONS.get(self.model.vendor_model)
        if version is None:
            raise ProviderError(f"{VENDOR}: no Octave version for {self.model.vendor_model!r} (known: {', '.join(VERSIONS)})")
        query = urlencode({"api_key": key.reveal(), "no_binary": "true", "instant_mode": "true",
                           "strip_headers": "true", "format_type": "pcm", "version": version})
        ws = await open_websocket(f"{self.url}{PATH}?{query}", {}, VENDOR, clock=timeline.clock)
        return HumeOctaveSession(ws, timeline, voice or self.model.voice or "")


class HumeOctaveSession(Reader):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline, voice: str) -> None:
        self.ws, self.timeline, self.voice = ws, timeline, voice

    async def synthesize(self, text: str) -> None:
        """One utterance on this connection: the stream closes after it (`close`)."""
        await self._request_reply([json.dumps({"text": text, "voice": {"name": self.voice, "provider": "HUME_AI"}}),
                                   json.dumps({"flush": True}), json.dumps({"close": True})])

    async def _read(self) -> None:
        offset, complete = 0, False
        async for message, at in received(self.ws):
            if isinstance(message, bytes):
                continue  # no_binary is set: audio is read from the JSON only
            data = json.loads(message)
            if data.get("type") == "audio":
                pcm = base64.b64decode(data["audio"], validate=True)
                if len(pcm) % 2:
                    raise ValueError("an audio chunk ended mid-sample")
                self.timeline.mark(AUDIO, at, sample_offset=offset, n_samples=len(pcm) // 2,
                                   sample_rate=SAMPLE_RATE, audio=pcm)
                offset += len(pcm) // 2
                complete = bool(data["is_last_chunk"])
            elif data.get("type") == "error" or "status_code" in data:
                code = int(data.get("status_code") or 400)
                raise ProviderError(_error_text(data), http_status(code))
        if not complete:
            raise closed(VENDOR, self.ws.close_code, "before the last chunk")

    async def aclose(self) -> None:
        await self.ws.close()
