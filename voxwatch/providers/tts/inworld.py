"""Inworld text to speech over its bidirectional WebSocket, as the vendor documents it (its speech to
text is stt/inworld.py).

Protocol facts followed (Inworld's API reference "Synthesize speech (WebSocket)",
docs.inworld.ai/api-reference/ttsAPI/texttospeech/synthesize-speech-websocket, its AsyncAPI export,
and docs.inworld.ai/docs/tts/synthesize-speech-websocket; read 2026-12-07):
- `wss://api.inworld.ai/tts/v1/voice:streamBidirectional`, auth `Authorization: Basic <key>` on the
  upgrade (the portal's key is already Base64 and is sent as it is).
- A context is created with `{"create": {"voiceId", "modelId", "audioConfig": {"audioEncoding",
  "sampleRateHertz"}}, "contextId"}` and answered `contextCreated`; this happens in `connect`, before
  the clock. Text goes as `{"send_text": {"text", "flush_context": {}}, "contextId"}`: at most 1000
  characters a message, and `flush_context` synthesizes the buffer at once (without it the context
  buffers until `bufferCharThreshold` or `maxBufferDelayMs`, 3000 ms by default: seconds of silence
  in the TTFA). `{"close_context": {}, "contextId"}` is "equivalent to sending a flush message right
  before" and is answered `contextClosed`; it is sent right after the text (one prompt a session).
- Every server message is `{"result": {"contextId", <event>, "status": {"code", "message"}}}`:
  `audioChunk` carries `audioContent`, base64 audio, `usage` and `timestampInfo`; `flushCompleted`
  ends a flush's audio (the AsyncAPI's message list); `contextClosed` ends the context. A LINEAR16
  chunk is a whole WAV file (the documented example's `audioContent` starts `UklGR`, "RIFF"), so
  every chunk's RIFF header is read off, not only the first one's (its `fmt ` gives the rate). A
  non-zero `status.code` is a gRPC status (session/grpc_status.py); the reference clients also read
  a top-level `error`.
- Limits: 20 connections and 5 contexts a connection by default; a session inactive for 10 minutes
  is closed. Inworld documents no close codes.
References (protocol facts only): pipecat-ai/pipecat src/pipecat/services/inworld/tts.py @ acead05;
coval-ai/benchmarks runner/src/coval_bench/providers/tts/inworld.py @ bf95d1b.
"""

from __future__ import annotations

import base64
import json
import struct
import uuid

import websockets

from voxwatch.foundation.events import AUDIO, CLOSED, REQUEST_SENT, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.providers.session.grpc_status import UNKNOWN, status_failure
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import Reader, malformed, settle

VENDOR = "Inworld"
DEFAULT_URL = "wss://api.inworld.ai"
PATH = "/tts/v1/voice:streamBidirectional"
SAMPLE_RATE = 24000
MAX_TEXT = 1000  # characters a send_text message may carry


def failure_of(data: dict) -> ProviderError | None:
    """The failure a message reports: a top-level `error`, or a non-zero `result.status` (gRPC codes)."""
    return (status_failure(VENDOR, data.get("error"), UNKNOWN)
            or status_failure(VENDOR, (data.get("result") or {}).get("status")))


def pcm_of(chunk: bytes) -> tuple[bytes, int | None]:
    """The 16-bit samples of one audio chunk and their rate: the `data` and `fmt ` of a WAV file
    (RIFF), else the bytes themselves at the requested rate (None)."""
    if not chunk.startswith(b"RIFF"):
        return chunk, None
    if chunk[8:12] != b"WAVE":
        raise ValueError("a RIFF chunk that is not WAVE")
    at, rate = 12, None
    while at + 8 <= len(chunk):
        name, size = chunk[at:at + 4], struct.unpack_from("<I", chunk, at + 4)[0]
        if name == b"fmt ":
            channels, rate, _, _, bits = struct.unpack_from("<HIIHH", chunk, at + 10)
            if channels != 1 or bits != 16:
                raise ValueError("a WAV chunk that is not 16-bit mono")
        elif name == b"data":
            return chunk[at + 8:at + 8 + size], rate
        at += 8 + size + (size & 1)
    raise ValueError("a WAV chunk without data")


class InworldTTS:
    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "InworldTTSSession":
        """Open the socket and create the context (answered `contextCreated`), before t0."""
        key = require_key(self.model.vendor)
        ws = await open_websocket(f"{self.url}{PATH}", {"Authorization": f"Basic {key.reveal()}"}, VENDOR,
                                  clock=timeline.clock)
        session = InworldTTSSession(ws, timeline, str(uuid.uuid4()))
        await settle(ws, session.create(voice or self.model.voice or "", self.model.vendor_model))
        return session


class InworldTTSSession(Reader):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline, context: str) -> None:
        self.ws, self.timeline, self.context = ws, timeline, context
        self._messages = received(ws)

    def _send(self, body: dict) -> str:
        return json.dumps({**body, "contextId": self.context})

    async def create(self, voice: str, model: str) -> None:
        try:
            await self.ws.send(self._send({"create": {
                "voiceId": voice, "modelId": model,
                "audioConfig": {"audioEncoding": "LINEAR16", "sampleRateHertz": SAMPLE_RATE}}}))
            async for message, _ in self._messages:
                data = json.loads(message)
                failure = failure_of(data)
                if failure is not None:
                    raise failure
                if data["result"].get("contextId") == self.context and "contextCreated" in data["result"]:
                    return
            raise closed(VENDOR, self.ws.close_code, "before the context was created")
        except websockets.ConnectionClosed as exc:
            raise closed(VENDOR, exc, "before the context was created") from None
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise malformed(VENDOR, exc) from None

    async def synthesize(self, text: str) -> None:
        parts = [text[i:i + MAX_TEXT] for i in range(0, len(text), MAX_TEXT)] or [""]
        try:
            for i, part in enumerate(parts):
                flush = {"flush_context": {}} if i == len(parts) - 1 else {}
                await self.ws.send(self._send({"send_text": {"text": part, **flush}}))
            self.timeline.mark(REQUEST_SENT)
            await self.ws.send(self._send({"close_context": {}}))
        except websockets.ConnectionClosed as exc:
            raise closed(VENDOR, exc) from None
        await self._read_reply()
        self.timeline.mark(CLOSED)

    async def _read(self) -> None:
        offset = 0
        async for message, at in self._messages:
            data = json.loads(message)
            failure = failure_of(data)
            if failure is not None:
                raise failure
            result = data["result"]
            if result.get("contextId") not in (None, self.context):
                continue
            if "audioChunk" in result:
                pcm, rate = pcm_of(base64.b64decode(result["audioChunk"]["audioContent"], validate=True))
                if len(pcm) % 2:
                    raise ValueError("a split sample")
                if pcm:
                    self.timeline.mark(AUDIO, at, sample_offset=offset, n_samples=len(pcm) // 2,
                                       sample_rate=rate or SAMPLE_RATE, audio=pcm)
                    offset += len(pcm) // 2
            elif "flushCompleted" in result or "contextClosed" in result:
                return
        raise closed(VENDOR, self.ws.close_code, "before the flush completed")  # closed normally: cut short

    async def aclose(self) -> None:
        await self.ws.close()
