"""Modulate Velma-2 streaming speech to text over its WebSocket, as the vendor documents it.

Protocol facts followed (read 2026-12-07; docs/vendor-notes/stt-modulate.md has the excerpts):
- `wss://platform.modulate.ai/api/<model>`: the model id is the path segment, `velma-2-stt-streaming`
  (multilingual; docs.modulate.ai/api-reference/stt/streaming) or `velma-2-stt-streaming-english-v2`
  (English VFast; docs.modulate.ai/api-reference/stt/streaming-vfast, whose stored copy shows the
  older host modulate-developer-apis.com).
- Auth is the `api_key` query parameter only: "Unlike the batch endpoints, the streaming API does not
  use an X-API-Key header" (docs.modulate.ai/api-reference/stt/streaming; /guides/authentication).
  The key is therefore in the URL; no error message here ever carries the URL.
- Raw audio needs `audio_format`, `sample_rate` and `num_channels` in the query; "For lowest
  end-to-end latency, send audio_format=s16le&sample_rate=16000&num_channels=1" (streaming-vfast).
  Audio goes as binary frames: "Frames can be any size" (streaming).
- Multilingual options are query parameters: `partial_results` (default false: "Stream interim
  partial_utterance messages with in-progress text before each utterance is finalized") is asked
  for, and `speaker_diarization` (default true) is turned off, so one speaker's utterance is not split
  per speaker (Coval's reference does the same: coval-ai/benchmarks runner/src/coval_bench/providers/
  stt/modulate.py @ bf95d1b, Apache-2.0). English v2 takes no feature toggles and always sends a rolling
  partial "every ~1.5 seconds", with "one complete final transcript at end-of-stream" (streaming-vfast).
- The flow, quoted (streaming): "Receive utterance JSON messages as speech is transcribed. Send an
  empty text frame ("") to signal end of audio. Receive a done message containing total audio
  duration. The connection closes automatically." So the empty text frame is the finalize: what
  remains comes as `utterance` messages, then `done`, then the close.
- `{"type": "utterance", "utterance": {"utterance_uuid", "text", "start_ms", "duration_ms", "speaker",
  "language"}}` is one final segment (times in ms); the hypothesis is the joined utterances.
  `{"type": "partial_utterance", "partial_utterance": {"text"}}` is the utterance in progress.
  `{"type": "done", "duration_ms"}` ends the results.
- Errors: `{"type": "error", "error": <text>}` (the shape Coval's and Pipecat's clients read:
  pipecat-ai/pipecat tests/test_modulate_stt.py, BSD-2; Modulate's own page was not retrievable past
  its first example). Modulate documents no WebSocket close codes; a refused upgrade is read as its
  HTTP status (401 bad key, 403 model not enabled or usage limit, per /guides/authentication).
- Pipecat's client also sends a JSON config frame (`partial_results`, `speaker_diarization`) after
  connecting; Modulate's pages read here put those in the query, which is what this adapter does.

Timeline: each `utterance` with text is a FINAL at its arrival, each `partial_utterance` with text a
PARTIAL; the turn ends at `done`. A clean close before `done` ended the session early.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlencode

from voxwatch.foundation.events import FINAL, PARTIAL, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.providers.session.ws_session import ReaderSession

VENDOR = "Modulate"
DEFAULT_URL = "wss://platform.modulate.ai"
PATH = "/api/"
CLOSE_WAIT_S = 2.0
OPTIONS = {"velma-2-stt-streaming": {"partial_results": "true", "speaker_diarization": "false"}}
"""Each model's feature query parameters (English v2 takes none)."""


class ModulateSTT:
    sample_rate = 16000
    audio_format = "s16le"

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    async def connect(self, timeline: Timeline) -> "ModulateSession":
        """Open the socket; Modulate sends nothing until it has audio, so set-up ends at the upgrade."""
        key = require_key(self.model.vendor)
        query = urlencode({"api_key": key.reveal(), "audio_format": self.audio_format,
                           "sample_rate": self.sample_rate, "num_channels": 1,
                           **OPTIONS.get(self.model.vendor_model, {})})
        ws = await open_websocket(f"{self.url}{PATH}{self.model.vendor_model}?{query}", {}, VENDOR,
                                  clock=timeline.clock)
        return ModulateSession(ws, timeline)


class ModulateSession(ReaderSession):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline) -> None:
        self.timeline = timeline
        self._ended = False  # the empty text frame sent
        self._finished = asyncio.Event()  # `done` arrived
        super().__init__(ws)

    async def _read(self) -> None:
        async for data, at in self._messages():
            kind = data["type"]
            if kind == "error":
                raise ProviderError(f"{VENDOR} error: {str(data.get('error'))[:300]}")
            if kind in ("partial_utterance", "utterance"):
                text = data[kind]["text"]
                if not isinstance(text, str):
                    raise TypeError("an utterance's text is not a string")
                if text:
                    self.timeline.mark(FINAL if kind == "utterance" else PARTIAL, at, text=text)
            elif kind == "done":
                self._finished.set()
                return
        raise closed(VENDOR, self.ws.close_code, "before its done message")

    async def send_audio(self, pcm16: bytes) -> None:
        await self._send(pcm16)

    async def end_audio(self) -> None:
        """The empty text frame: the end of the audio, which finalizes what remains."""
        if not self._ended:
            self._ended = True
            await self._send("")

    async def wait_final(self) -> None:
        """Return once `done` has come (every utterance is in), or the stream ended."""
        await self._wait_for(self._finished)

    async def aclose(self) -> None:
        """End the audio (unless ended), let the server send `done` and close (briefly), then close."""
        await self._end_and_close(self.end_audio, CLOSE_WAIT_S)
