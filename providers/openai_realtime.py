"""OpenAI Realtime API over WebSocket (GA interface), as the vendor documents it: a transcription
session (streaming STT) and a speech-to-speech conversation (S2S).

- Connect to `/v1/realtime?intent=transcription` for a transcription-only session (no model in the
  URL; the transcription model goes in the session) or `/v1/realtime?model=<model>` for a realtime
  conversation. Auth: `Authorization: Bearer <key>`; no `OpenAI-Beta` header (that header selects
  the older beta interface). A refused key or a rate limit refuses the upgrade.
- The server opens with `session.created`; `session.update` with `session.type` `transcription` or
  `realtime` is answered by `session.updated`. Failures arrive as `error` events
  (`error.type`, `error.code`, `error.message`).
- Input audio: `input_audio_buffer.append` with base64 little-endian pcm16 mono at 24 kHz - the
  only PCM rate the API takes (`audio.input.format` `{"type": "audio/pcm", "rate": 24000}`).
  `audio.input.turn_detection: null` turns server VAD off, so the client ends the turn with
  `input_audio_buffer.commit` (answered by `input_audio_buffer.committed`): the final is forced
  when the audio ends.
- Transcription: `conversation.item.input_audio_transcription.delta` (`item_id`, `delta`: text to
  append) and `.completed` (`item_id`, `transcript`); `.failed` carries an `error`. The service
  transcribes a turn only once it is committed, so a gpt-4o-transcribe delta is not a partial
  heard during speech (the registry excludes first-partial for it).
- S2S: `response.create` asks for the reply; its audio arrives as base64 pcm16 24 kHz in
  `response.output_audio.delta` (`response.audio.delta` in the beta interface), and the reply
  ends with `response.done` (`response.status`; `status_details.error` when it failed).

Every server event is marked at its arrival stamp (the socket read that completed it, through
`stamped.received`), not when the reader task gets round to it.

Sample rate: the harness paces 16 kHz clips, so `sample_rate` is 16000 (what `send_audio` takes)
and each chunk is upsampled to 24 kHz here as it is sent (`Upsampler`: stateful linear
interpolation, holding back at most one output sample), so pacing stays real time - 20 ms of audio
in, 20 ms out, on the same deadline. The first append's audio is therefore the upsampled first
chunk (which is what a loopback emulator keys its per-stream truth on).
"""

from __future__ import annotations

import base64
import json
from urllib.parse import urlencode

import numpy as np
import websockets

from .base import ProviderError
from .endpoints import base_url, close_code, is_loopback, open_websocket, require_key
from .events import AUDIO, CLOSED, FINAL, PARTIAL, REQUEST_SENT, Timeline
from .openai_batch import DEFAULT_URL, VENDOR
from .registry import ModelInfo
from .ws_session import ReaderSession, settle, update_session
from .stamped import received

API_RATE = 24000
PCM_24K = {"type": "audio/pcm", "rate": API_RATE}
DEFAULT_VOICE = "marin"
TRANSCRIPT_DELTA = "conversation.item.input_audio_transcription.delta"
TRANSCRIPT_DONE = "conversation.item.input_audio_transcription.completed"
TRANSCRIPT_FAILED = "conversation.item.input_audio_transcription.failed"
AUDIO_DELTAS = ("response.output_audio.delta", "response.audio.delta")


class Upsampler:
    """16 kHz -> 24 kHz pcm16, chunk by chunk, continuous across chunks (linear interpolation).

    Output sample m sits at input position 2m/3; it is produced once both input samples around it
    have arrived, so a chunk yields 479-481 samples for 320 in, and nothing is lost between chunks.
    """

    def __init__(self) -> None:
        self._tail = np.zeros(0)  # input samples from index self._base on, still needed
        self._base = 0
        self._m = 0  # output samples produced so far

    def push(self, pcm16: bytes) -> bytes:
        buf = np.concatenate([self._tail, np.frombuffer(pcm16, dtype="<i2").astype(np.float64)])
        seen = self._base + buf.size
        if seen == 0:
            return b""
        end = (3 * (seen - 1)) // 2 + 1  # every output whose position is at most the last sample seen
        m = np.arange(self._m, end)
        left, frac = (2 * m) // 3 - self._base, ((2 * m) % 3) / 3.0
        right = np.minimum(left + 1, buf.size - 1)
        out = buf[left] * (1 - frac) + buf[right] * frac
        keep = (2 * end) // 3 - self._base
        self._tail, self._base, self._m = buf[keep:], self._base + keep, end
        return np.clip(np.round(out), -32768, 32767).astype("<i2").tobytes()


def _error_of(data: dict) -> ProviderError:
    err = data.get("error") or {}
    code = str(err.get("code") or err.get("type") or "error")
    status = "rate_limited" if "rate_limit" in code else "error"
    return ProviderError(f"{VENDOR} error ({code}): {str(err.get('message'))[:300]}", status)


async def _open(url: str, query: dict[str, str], vendor: str, session: dict, timeline: Timeline):
    key = require_key(vendor)
    ws = await open_websocket(f"{url}/v1/realtime?{urlencode(query)}", {"Authorization": f"Bearer {key.reveal()}"},
                              VENDOR, clock=timeline.clock)
    await settle(ws, update_session(ws, session, VENDOR, _error_of))
    return ws


class _Session(ReaderSession):
    """What both session types share: 24 kHz appends, one reader task, its error, closing."""

    def __init__(self, ws, timeline: Timeline) -> None:
        self.timeline = timeline
        self._upsampler = Upsampler()
        super().__init__(ws)

    async def send_audio(self, pcm16: bytes) -> None:
        audio = self._upsampler.push(pcm16)
        if audio:
            await self.ws.send(json.dumps({"type": "input_audio_buffer.append",
                                           "audio": base64.b64encode(audio).decode()}))

    def _on(self, kind: str, data: dict, at: int) -> bool:
        """Handle one server event that arrived at `at` (ns, timeline clock); True ends the reader."""
        raise NotImplementedError

    async def _receive(self) -> None:
        try:
            async for message, at in received(self.ws):
                data = json.loads(message)
                kind = data["type"]
                if kind == "error":
                    self._error = _error_of(data)
                    break
                if self._on(kind, data, at):
                    break
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:  # bad JSON, fields or base64
            self._error = ProviderError(f"malformed message from {VENDOR} ({type(exc).__name__})", "malformed")
        except websockets.ConnectionClosedError as exc:
            self._error = ProviderError(f"{VENDOR} closed the connection mid-stream (code {close_code(exc)})",
                                        "disconnected")
        except websockets.ConnectionClosed:
            pass
        finally:
            if not self._done.is_set():
                self.timeline.mark(CLOSED)
                self._done.set()


class OpenAIRealtimeSTT:
    sample_rate = 16000  # what send_audio takes; sent upsampled to the API's 24 kHz

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    async def connect(self, timeline: Timeline) -> "RealtimeTranscription":
        session = {"type": "transcription", "audio": {"input": {
            "format": PCM_24K, "transcription": {"model": self.model.vendor_model, "language": "en"},
            "turn_detection": None}}}
        ws = await _open(self.url, {"intent": "transcription"}, self.model.vendor, session, timeline)
        return RealtimeTranscription(ws, timeline)


class RealtimeTranscription(_Session):
    def __init__(self, ws, timeline: Timeline) -> None:
        self._text: dict[str, str] = {}
        super().__init__(ws, timeline)

    def _on(self, kind: str, data: dict, at: int) -> bool:
        if kind == TRANSCRIPT_DELTA:
            item = data["item_id"]
            self._text[item] = self._text.get(item, "") + str(data.get("delta") or "")
            self.timeline.mark(PARTIAL, at, text=self._text[item].strip())
        elif kind == TRANSCRIPT_DONE:
            self.timeline.mark(FINAL, at, text=str(data["transcript"]).strip())
            self._done.set()
        elif kind == TRANSCRIPT_FAILED:
            self._error = _error_of(data)
            return True
        return False

    async def end_audio(self) -> None:
        await self.ws.send(json.dumps({"type": "input_audio_buffer.commit"}))

    async def wait_final(self) -> None:
        await self._wait()


class OpenAIRealtimeS2S:
    sample_rate = 16000  # what send_audio takes; sent upsampled to the API's 24 kHz

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    async def connect(self, timeline: Timeline) -> "RealtimeConversation":
        session = {"type": "realtime", "output_modalities": ["audio"], "audio": {
            "input": {"format": PCM_24K, "turn_detection": None},
            "output": {"format": PCM_24K, "voice": self.model.voice or DEFAULT_VOICE}}}
        ws = await _open(self.url, {"model": self.model.vendor_model}, self.model.vendor, session, timeline)
        return RealtimeConversation(ws, timeline)


class RealtimeConversation(_Session):
    def __init__(self, ws, timeline: Timeline) -> None:
        self._offset = 0
        super().__init__(ws, timeline)

    def _on(self, kind: str, data: dict, at: int) -> bool:
        if kind in AUDIO_DELTAS:
            pcm = base64.b64decode(data["delta"], validate=True)
            if len(pcm) % 2:
                raise ValueError("an audio delta ended mid-sample")
            self.timeline.mark(AUDIO, at, sample_offset=self._offset, n_samples=len(pcm) // 2, sample_rate=API_RATE,
                               audio=pcm)
            self._offset += len(pcm) // 2
        elif kind == "response.done":
            response = data["response"]
            if response.get("status") == "failed":
                error = (response.get("status_details") or {}).get("error") or {}
                self._error = ProviderError(f"{VENDOR} response failed: {str(error.get('message') or error)[:300]}")
            self.timeline.mark(CLOSED, at)
            self._done.set()
        return False

    async def end_audio(self) -> None:
        """Manual turn: commit the caller's audio, then ask for the reply."""
        await self.ws.send(json.dumps({"type": "input_audio_buffer.commit"}))
        await self.ws.send(json.dumps({"type": "response.create"}))
        self.timeline.mark(REQUEST_SENT)

    async def wait_response(self) -> None:
        await self._wait()
