"""Rime text-to-speech over the `/ws3` JSON WebSocket, as the vendor documents it.

Protocol facts, each with its source (read 2026-12-07; the pages are Rime's Mintlify docs):
- `wss://users-ws.rime.ai/ws3`, auth `Authorization: Bearer <key>` ("The Rime API authenticates every
  request with a bearer token in the `Authorization` header"; https://docs.rime.ai/docs/websockets).
- Every synthesis argument is a query parameter of the connection, no configuration message:
  `speaker` (required), `modelId` ("If you omit it, the server routes the request to Mist v3"),
  `audioFormat` (`pcm`: headerless 16-bit little-endian; "Unrecognized values fall back to `wav`"),
  `samplingRate` (default 24000; above the model's native rate is upsampled), `lang`, and `segment`:
  `bySentence` (the default) buffers text "up to one of the following punctuation characters: `.`,
  `?`, `!`", `never` only on an explicit flush or eos, `immediate` at once
  (https://docs.rime.ai/api-reference/coda/websockets-json, .../mistv3/websockets-json).
- Client messages: `{"text", "contextId"}`; `{"operation": "flush"}` (speak what is buffered);
  `{"operation": "clear"}`; `{"operation": "eos"}` ("generate audio for whatever remains in the buffer,
  and then have the connection immediately closed").
- Server messages: `{"type": "chunk", "data": <base64>, "contextId"}`, `{"type": "timestamps",
  "word_timestamps": {"words", "start", "end"}, "contextId"}`, `{"type": "done", "contextId"}` "after the
  last audio chunk for a synthesis batch", `{"type": "error", "message"}` (the server "will *not* close
  the connection"). "Rime will not maintain multiple simultaneous context IDs": an event may carry
  `contextId: null`, so the adapter reads every event of its one-synthesis connection.
- A pcm chunk "may end mid-sample" (Pipecat src/pipecat/services/rime/tts.py @acead05,
  `_sample_aligned_audio`): the odd byte waits for the next chunk (session/pcm.py).

The adapter asks for `segment=never` and sends the prompt whole, then `eos`: synthesis starts on that
explicit signal, where the clock starts, whatever punctuation the prompt ends with (with the default
`bySentence`, a prompt without a final `.`, `?` or `!` waits for the eos, one with it starts on the text
message). References for the same facts (not code): Coval's runner
runner/src/coval_bench/providers/tts/rime.py @bf95d1b (Apache-2.0: `segment=never` + eos); Pipecat's
Rime service (BSD-2). Rime documents no close codes: a close reads by RFC 6455 (close_codes).
Timestamps are received and left alone: word timing is no metric here.
"""

from __future__ import annotations

import base64
import json
from urllib.parse import urlencode

from voxwatch.foundation.events import Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.providers.session.pcm import PCMMarks
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import Reader

VENDOR = "Rime"
DEFAULT_URL = "wss://users-ws.rime.ai"
PATH = "/ws3"
SAMPLE_RATES = {"mistv3": 22050}  # each model's native rate (Coval's runner asks for these); 24000 otherwise


class RimeTTS:
    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)
        self.sample_rate = SAMPLE_RATES.get(model.vendor_model, 24000)

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "RimeSession":
        """Open the stream, its synthesis set by the query, before t0."""
        key = require_key(self.model.vendor)
        query = urlencode({"speaker": voice or self.model.voice or "", "modelId": self.model.vendor_model,
                           "audioFormat": "pcm", "samplingRate": self.sample_rate, "lang": "en", "segment": "never"})
        ws = await open_websocket(f"{self.url}{PATH}?{query}", {"Authorization": f"Bearer {key.reveal()}"}, VENDOR,
                                  clock=timeline.clock)
        return RimeSession(ws, timeline, self.sample_rate)


class RimeSession(Reader):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline, sample_rate: int) -> None:
        self.ws, self.timeline, self.sample_rate = ws, timeline, sample_rate

    async def synthesize(self, text: str) -> None:
        await self._request_reply([json.dumps({"text": text}), json.dumps({"operation": "eos"})])

    async def _read(self) -> None:
        """Chunks until `done`; an `error` is the answer to this connection's one synthesis."""
        audio = PCMMarks(self.timeline, self.sample_rate, VENDOR)
        async for message, at in received(self.ws):
            data = json.loads(message)
            kind = data["type"]
            if kind == "chunk":
                audio.add(base64.b64decode(data["data"], validate=True), at)
            elif kind == "error":
                raise ProviderError(f"{VENDOR} error: {str(data.get('message'))[:300]}")
            elif kind == "done":
                break
        else:  # the server closed before `done`: the audio was cut short
            raise closed(VENDOR, self.ws.close_code, "before done")
        audio.end()

    async def aclose(self) -> None:
        await self.ws.close()
