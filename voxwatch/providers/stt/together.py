"""Together AI realtime transcription (`/v1/realtime` WebSocket, OpenAI-Realtime-style JSON events), as
the vendor documents it.

Sources: Together's OpenAPI spec, togethercomputer/openapi openapi.yaml path `/realtime` (operationId
`realtime-transcription`) @090263aa (2026-04-28) [O1]; docs.together.ai/docs/inference/transcription/streaming
[D1], .../voice-activity-detection [D2], docs.together.ai/reference/audio-transcriptions-realtime [D3],
all read 2026-12-07. Protocol references only (facts, no code): Pipecat src/pipecat/services/together/stt.py
@acead050 (BSD-2) and Coval runner/src/coval_bench/providers/stt/together.py @bf95d1b1 (Apache-2.0).

- `wss://api.together.ai/v1/realtime?model=<model>&input_audio_format=pcm_s16le_16000` [D1][O1];
  `input_audio_format` is required and takes only `pcm_s16le_16000` (16-bit PCM, 16 kHz, mono) [O1].
  Auth: `Authorization: Bearer <key>`; the streaming guide also sends `OpenAI-Beta: realtime=v1` [D1].
- The server opens with `session.created` (`session.id`, `session.model`) [O1]; the adapter waits for
  it before t0.
- Audio: `{"type": "input_audio_buffer.append", "audio": "<base64 PCM>"}` [D1][O1]; no minimum size is
  documented, so each 20 ms harness chunk goes as it is.
- Server VAD is on by default (Silero: `threshold` 0.3, `min_silence_duration_ms` 500,
  `min_speech_duration_ms` 250, `max_speech_duration_s` 5.0, `speech_pad_ms` 250) [O1][D2]: each VAD
  segment streams `conversation.item.input_audio_transcription.delta` events and ends with one
  `.completed` (`transcript`), its final; speech longer than `max_speech_duration_s` is split into
  several segments [O1]. The defaults are kept (they are how Together transcribes), so a clip may get
  several finals; the hypothesis is their join.
- "Each delta message overrides the previous delta" [D1]: a delta is the segment's whole text so far
  (it replaces, never appends: unlike OpenAI's incremental deltas), and "the next delta event continues
  from where this completed" [D1]. A PARTIAL is marked with the delta as it is.
- `{"type": "input_audio_buffer.commit"}` "Forces transcription of any remaining audio in the server-side
  buffer" / "Signal end of audio stream" [D1][O1]: sent at the end of the audio. The stream's final is
  the `.completed` that ends the segment open at the commit; when no segment is open then (the VAD has
  already closed the last one) the last `.completed` already was. The server does not close after the
  commit (Coval: "The server never closes; the client closes after draining the forced final"), so the
  client closes.
- Errors: `conversation.item.input_audio_transcription.failed` with `error: {message, type, param,
  code}`; codes `invalid_api_key` and `missing_api_key` (401), `model_not_available` and an
  unsupported audio format (400) [O1]. A generic `{"type": "error", "error": {...}}` is read the same
  way (Pipecat and Coval both handle it). Together documents no close codes and no realtime rate limit
  (a refused upgrade is read as HTTP: endpoints.http_failure).
- No word timings in the realtime events [O1].

Model names: Together's API names carry the publisher (`openai/whisper-large-v3`); a registry id
holds one slash, so the id names the model and `API_MODELS` gives the publisher.
"""

from __future__ import annotations

import asyncio
import base64
from urllib.parse import urlencode

import websockets

from voxwatch.foundation.events import FINAL, PARTIAL, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import ReaderSession, decode_event, malformed, settle

VENDOR = "Together"
DEFAULT_URL = "wss://api.together.ai"
INPUT_AUDIO_FORMAT = "pcm_s16le_16000"  # the only input format the realtime endpoint takes [O1]
API_MODELS = {"whisper-large-v3": "openai/whisper-large-v3",
              "parakeet-tdt-0.6b-v3": "nvidia/parakeet-tdt-0.6b-v3",
              "nemotron-3.5-asr-streaming-0.6b": "nvidia/nemotron-3.5-asr-streaming-0.6b"}
"""The registry's model name -> the name Together's API takes (publisher/model)."""
DELTA = "conversation.item.input_audio_transcription.delta"
COMPLETED = "conversation.item.input_audio_transcription.completed"
FAILED = "conversation.item.input_audio_transcription.failed"
AUTH_CODES = ("invalid_api_key", "missing_api_key")  # 401 in the spec's error table [O1]


def error_of(data: dict) -> ProviderError:
    """A `.failed` (or `error`) event: its code and message, by kind (a refused key, else an error)."""
    err = data.get("error") or {}
    code = str(err.get("code") or err.get("type") or "error") if isinstance(err, dict) else "error"
    message = err.get("message") if isinstance(err, dict) else err
    return ProviderError(f"{VENDOR} error ({code}): {str(message)[:300]}",
                         "auth_error" if code in AUTH_CODES else "error")


class TogetherSTT:
    sample_rate = 16000

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    async def connect(self, timeline: Timeline) -> "TogetherSession":
        """Open the session and wait for `session.created`, before t0."""
        key = require_key(self.model.vendor)
        query = urlencode({"model": API_MODELS.get(self.model.vendor_model, self.model.vendor_model),
                           "input_audio_format": INPUT_AUDIO_FORMAT})
        ws = await open_websocket(f"{self.url}/v1/realtime?{query}",
                                  {"Authorization": f"Bearer {key.reveal()}", "OpenAI-Beta": "realtime=v1"},
                                  VENDOR, clock=timeline.clock)
        session = TogetherSession(ws, timeline)
        await settle(ws, session.created())
        return session


class TogetherSession(ReaderSession):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline) -> None:
        self.timeline = timeline
        self._messages = received(ws)
        self._open = False  # a segment has deltas and no `.completed` yet
        self._completed = 0  # segments completed so far
        self._committed = False
        self._closing = False
        self._final = asyncio.Event()  # the stream's last segment has completed after the commit
        super().__init__(ws, start=False)  # `created` reads session.created, then starts the reader

    async def created(self) -> None:
        try:
            async for message, _ in self._messages:
                data = decode_event(message)
                if data["type"] == "session.created":
                    self._start_reader()
                    return
                if data["type"] in (FAILED, "error"):
                    raise error_of(data)
            raise closed(VENDOR, self.ws.close_code, "before the session was created")
        except websockets.ConnectionClosed as exc:
            raise closed(VENDOR, exc, "before the session was created") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise malformed(VENDOR, exc) from None

    async def _read(self) -> None:
        async for message, at in self._messages:
            data = decode_event(message)
            kind = data["type"]
            if kind == DELTA:
                text = data["delta"]
                if not isinstance(text, str):
                    raise TypeError("delta is not a string")
                self._open = self._open or bool(text.strip())
                self.timeline.mark(PARTIAL, at, text=text)  # the segment so far: it overrides the previous delta
            elif kind == COMPLETED:
                text = data["transcript"]
                if not isinstance(text, str):
                    raise TypeError("transcript is not a string")
                self._open, self._completed = False, self._completed + 1
                self.timeline.mark(FINAL, at, text=text)
                if self._committed:
                    self._final.set()
            elif kind in (FAILED, "error"):
                raise error_of(data)
            # session.created, transcription_session.updated, input_audio_buffer.committed: no transcript
        if not (self._closing or self._final.is_set()):  # a clean close before the final
            self._error = closed(VENDOR, self.ws.close_code or 1005, "before the final transcript")

    async def send_audio(self, pcm16: bytes) -> None:
        await self._send_event({"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm16).decode()})

    async def end_audio(self) -> None:
        """Commit: the remaining audio is transcribed now."""
        await self._send_event({"type": "input_audio_buffer.commit"})
        self._committed = True
        if not self._open and self._completed:
            self._final.set()  # the VAD closed the last segment before the audio ended

    async def wait_final(self) -> None:
        await self._wait_for(self._final)

    async def aclose(self) -> None:
        self._closing = True
        await super().aclose()
