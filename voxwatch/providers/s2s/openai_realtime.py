"""OpenAI Realtime API over WebSocket (GA interface), as the vendor documents it: a transcription
session (streaming STT) and a speech-to-speech conversation (S2S).

- Connect to `/v1/realtime?intent=transcription` for a transcription-only session (no model in the
  URL; the transcription model goes in the session) or `/v1/realtime?model=<model>` for a realtime
  conversation. Auth: `Authorization: Bearer <key>`; no `OpenAI-Beta` header (that header selects
  the older beta interface). A refused key or a rate limit refuses the upgrade.
- The server opens with `session.created`; `session.update` with `session.type` `transcription` or
  `realtime` is answered by `session.updated`. Failures arrive as `error` events
  (`error.type`, `error.code`, `error.message`, and `error.event_id`: the `event_id` of the client
  event that caused it, when the client gave one). "Most errors are recoverable and the session will
  stay open" (the `error` event's reference; openai-python
  src/openai/types/realtime/realtime_error_event.py, realtime_error.py): an error is fatal only when
  the server then closes the session, as it does at the session's time limit (an `error` with code
  `session_expired`, then close 1001 with the same message: pollen-robotics/reachy_mini_conversation_app#134,
  fuwei007/OpenAIIOSRealtimeAPIDemo#4). So the adapter gives its turn's own requests (the commit,
  `response.create`) an `event_id`: an error naming one of them means the turn cannot complete and
  fails it at once; any other error is kept, the session goes on, and it becomes the row's reason
  only if the server closes the session before the turn completes. Set-up is stricter: the only
  event sent before `session.updated` is the `session.update`, so an error then refuses it.
- Input audio: `input_audio_buffer.append` with base64 little-endian pcm16 mono at 24 kHz - the
  only PCM rate the API takes (`audio.input.format` `{"type": "audio/pcm", "rate": 24000}`) - or
  G.711 at 8 kHz, `{"type": "audio/pcmu"}` (mu-law) or `audio/pcma` (A-law), no rate: the formats
  of openai-python src/openai/types/realtime/realtime_audio_formats.py. The phone condition's
  mu-law codes go as stored, as `audio/pcmu` (datasets.wire).
  `audio.input.turn_detection: null` turns server VAD off, so the client ends the turn with
  `input_audio_buffer.commit` (answered by `input_audio_buffer.committed`): the final is forced
  when the audio ends.
- Transcription: `conversation.item.input_audio_transcription.delta` (`item_id`, `delta`: text to
  append) and `.completed` (`item_id`, `transcript`); `.failed` carries an `error`. The service
  transcribes a turn only once it is committed, so a gpt-4o-transcribe delta is not a partial
  heard during speech (the registry excludes first-partial for it).
- S2S: `response.create` asks for the reply; its audio arrives as base64 pcm16 24 kHz in
  `response.output_audio.delta` (`response.audio.delta` in the beta interface), and the reply
  ends with `response.done`, whose `response.status` is `completed`, or `cancelled`
  (`status_details.reason` `turn_detected` or `client_cancelled`), `incomplete` (`max_output_tokens`
  or `content_filter`) or `failed` (`status_details.error`): openai-python
  src/openai/types/realtime/realtime_response.py, realtime_response_status.py. A reply that ends
  other than `completed` was cut off or never finished: a failure row with that status and its
  reason, whatever audio came before it.

Every server event is marked at its arrival stamp (the socket read that completed it, through
`stamped.received`), not when the reader task gets round to it.

Sample rate: the harness paces 16 kHz clips, so `sample_rate` is 16000 (what `send_audio` takes)
and each chunk is upsampled to 24 kHz here as it is sent (`Upsampler`: stateful linear
interpolation, holding back at most one output sample), so pacing stays real time - 20 ms of audio
in, 20 ms out, on the same deadline. The first append's audio is therefore the upsampled first
chunk (which is what a loopback emulator keys its per-stream truth on).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
from urllib.parse import urlencode

import websockets

from voxwatch.providers.base import ProviderError, language_copy
from voxwatch.providers.session.close_codes import close_code, closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.foundation.frame_rates import Upsampler
from voxwatch.foundation.events import AUDIO, CLOSED, FINAL, PARTIAL, REQUEST_SENT, Timeline
from voxwatch.providers.stt.openai_batch import DEFAULT_URL, VENDOR, WHISPER_LANGUAGES
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.ws_session import ReaderSession, settle, update_session
from voxwatch.providers.session.stamped import received

API_RATE = 24000
PCM_24K = {"type": "audio/pcm", "rate": API_RATE}
ENCODINGS = {"mulaw": {"type": "audio/pcmu"}}
"""Each wire encoding voxwatch sends (datasets.wire) and the Realtime API's input format for it."""
DEFAULT_VOICE = "marin"
TRANSCRIPT_DELTA = "conversation.item.input_audio_transcription.delta"
TRANSCRIPT_DONE = "conversation.item.input_audio_transcription.completed"
TRANSCRIPT_FAILED = "conversation.item.input_audio_transcription.failed"
AUDIO_DELTAS = ("response.output_audio.delta", "response.audio.delta")


def mark_audio_delta(timeline: Timeline, data: dict, at: int, offset: int) -> int:
    """Mark one `response.output_audio.delta` (base64 pcm16 at 24 kHz) as AUDIO at sample `offset`
    of the reply; the offset of the next one."""
    pcm = base64.b64decode(data["delta"], validate=True)
    if len(pcm) % 2:
        raise ValueError("an audio delta ended mid-sample")
    timeline.mark(AUDIO, at, sample_offset=offset, n_samples=len(pcm) // 2, sample_rate=API_RATE, audio=pcm)
    return offset + len(pcm) // 2


def _status_of(code: object) -> str:
    """The row status of an error code: a rate limit, or any other error."""
    return "rate_limited" if "rate_limit" in str(code or "") else "error"


def _error_of(data: dict) -> ProviderError:
    err = data.get("error") or {}
    code = str(err.get("code") or err.get("type") or "error")
    return ProviderError(f"{VENDOR} error ({code}): {str(err.get('message'))[:300]}", _status_of(code))


def _dropped(exc: websockets.ConnectionClosed) -> ProviderError:
    return closed(VENDOR, exc)


def _unfinished(response: dict) -> ProviderError:
    """A reply that ended `cancelled`, `incomplete` or `failed`: its status and why, from `status_details`."""
    details = response.get("status_details") or {}
    error = details.get("error") or {}
    why = error.get("message") or error.get("code") or details.get("reason") or "no reason given"
    return ProviderError(f"{VENDOR} response {response.get('status')}: {str(why)[:300]}", _status_of(error.get("code")))


async def _open(url: str, query: dict[str, str], vendor: str, session: dict, timeline: Timeline):
    key = require_key(vendor)
    ws = await open_websocket(f"{url}/v1/realtime?{urlencode(query)}", {"Authorization": f"Bearer {key.reveal()}"},
                              VENDOR, clock=timeline.clock)
    await settle(ws, update_session(ws, session, VENDOR, _error_of))
    return ws


class _Session(ReaderSession):
    """What both session types share: 24 kHz appends, the turn's own requests, one reader task, its
    error (recoverable errors kept aside), closing."""

    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline, upsampler: Upsampler | None = None) -> None:
        self.timeline = timeline
        self._upsampler = upsampler  # None: send_audio's bytes are already in the session's input format
        self._kept: ProviderError | None = None  # the last recoverable error, while the session stays open
        self._requests: set[str] = set()  # the event_ids of the turn's own requests
        self._closing = False
        super().__init__(ws)

    async def send_audio(self, pcm16: bytes) -> None:
        audio = self._upsampler.push(pcm16) if self._upsampler is not None else pcm16
        if audio:
            await self._send({"type": "input_audio_buffer.append", "audio": base64.b64encode(audio).decode()})

    async def _request(self, kind: str) -> None:
        """Send one of the turn's own requests, with an event_id an error about it will name."""
        event_id = f"voxwatch_{kind.replace('.', '_')}"
        self._requests.add(event_id)
        await self._send({"event_id": event_id, "type": kind})

    async def _send(self, event: dict) -> None:
        """Send a client event; once the server has closed the session, fail with the reader's reason."""
        try:
            await self.ws.send(json.dumps(event))
        except websockets.ConnectionClosed as exc:
            try:
                await asyncio.wait_for(self._done.wait(), self.close_wait_s)  # the reader sees the close too
            except asyncio.TimeoutError:
                pass
            raise self._error or _dropped(exc) from None

    def _on(self, kind: str, data: dict, at: int) -> bool:
        """Handle one server event that arrived at `at` (ns, timeline clock); True ends the reader."""
        raise NotImplementedError

    def _on_error(self, data: dict) -> bool:
        """An `error` event: it fails the turn when it refuses one of the turn's own requests; any
        other is recoverable (the session stays open) and kept as the reason in case it does not."""
        error = _error_of(data)
        if (data.get("error") or {}).get("event_id") in self._requests:
            self._error = error
            return True
        self._kept = error
        return False

    def _closed_after_error(self, code: int) -> ProviderError | None:
        """The server closed the session after an error, before the turn completed: that error was fatal."""
        if self._kept is None or self._closing or self._done.is_set():
            return None
        return ProviderError(f"{self._kept}; then {VENDOR} closed the session (code {code})", self._kept.status)

    def _dropped(self, exc: websockets.ConnectionClosed) -> ProviderError:
        """A close mid-session: the error the server sent before it, if any, says why; else the close does."""
        return self._closed_after_error(close_code(exc)) or _dropped(exc)

    async def _read(self) -> None:
        async for message, at in received(self.ws):
            data = json.loads(message)
            kind = data["type"]
            if self._on_error(data) if kind == "error" else self._on(kind, data, at):
                return
        # the server closed cleanly (1000, or 1001 at the session's time limit) before the turn was
        # complete: the error it sent first, if any, says why; else the close does (close_codes)
        if not (self._closing or self._done.is_set()):
            code = self.ws.close_code or 1005
            self._error = self._closed_after_error(code) or closed(VENDOR, code, "before the turn was complete")

    def _reader_ended(self) -> None:
        """CLOSED, unless the turn already ended (marked at its own event)."""
        if not self._done.is_set():
            self.timeline.mark(CLOSED)

    async def aclose(self) -> None:
        self._closing = True
        await super().aclose()


class OpenAIRealtimeSTT:
    sample_rate = 16000  # what send_audio takes; sent upsampled to the API's 24 kHz
    input_format: dict | None = None  # None: 16 kHz PCM upsampled to PCM_24K; else a wire format, sent as is
    wire_encodings = tuple(ENCODINGS)
    language = "en"  # audio.input.transcription.language (ISO 639-1)

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    def on_wire(self, wire) -> "OpenAIRealtimeSTT":
        """A copy that declares the wire format (the phone line's 8 kHz mu-law) as the session's input format."""
        wired = copy.copy(self)
        wired.input_format, wired.sample_rate = ENCODINGS[wire.encoding], wire.sample_rate
        return wired

    def in_language(self, language: str) -> "OpenAIRealtimeSTT | None":
        """A copy whose session names `language`, or None outside Whisper's list."""
        return language_copy(self, language, WHISPER_LANGUAGES)

    async def connect(self, timeline: Timeline) -> "RealtimeTranscription":
        session = {"type": "transcription", "audio": {"input": {
            "format": self.input_format or PCM_24K,
            "transcription": {"model": self.model.vendor_model, "language": self.language}, "turn_detection": None}}}
        ws = await _open(self.url, {"intent": "transcription"}, self.model.vendor, session, timeline)
        return RealtimeTranscription(ws, timeline, Upsampler() if self.input_format is None else None)


class RealtimeTranscription(_Session):
    def __init__(self, ws, timeline: Timeline, upsampler: Upsampler | None) -> None:
        self._text: dict[str, str] = {}
        super().__init__(ws, timeline, upsampler)

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
        await self._request("input_audio_buffer.commit")

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

    async def converse(self, timeline: Timeline, setup, history=()):
        """A multi-turn voice-agent session (voxwatch/providers/conversation.py), with `history` replayed:
        openai_realtime_agent.py."""
        from voxwatch.providers.s2s.openai_realtime_agent import RealtimeAgentSession, session_config

        ws = await _open(self.url, {"model": self.model.vendor_model}, self.model.vendor,
                         session_config(setup, self.model.voice), timeline)
        return await RealtimeAgentSession(ws, timeline, self.model.session_limit_s).opened(history)


class RealtimeConversation(_Session):
    def __init__(self, ws, timeline: Timeline) -> None:
        self._offset = 0
        super().__init__(ws, timeline, Upsampler())

    def _on(self, kind: str, data: dict, at: int) -> bool:
        if kind in AUDIO_DELTAS:
            self._offset = mark_audio_delta(self.timeline, data, at, self._offset)
        elif kind == "response.done":
            response = data["response"]
            if response.get("status") != "completed":
                self._error = _unfinished(response)
            self.timeline.mark(CLOSED, at)
            self._done.set()
        return False

    async def end_audio(self) -> None:
        """Manual turn: commit the caller's audio, then ask for the reply."""
        await self._request("input_audio_buffer.commit")
        await self._request("response.create")
        self.timeline.mark(REQUEST_SENT)

    async def wait_response(self) -> None:
        await self._wait()
