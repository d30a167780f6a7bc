"""xAI Grok Voice Agent API ("Speech to Speech", the `/v1/realtime` WebSocket), as xAI documents it.

It borrows the OpenAI Realtime event names but has its own session shape. Protocol facts followed
(xAI: docs.x.ai/developers/model-capabilities/audio/speech-to-speech, the guide formerly at
docs.x.ai/docs/guides/voice/agent; docs.x.ai/docs/guides/voice; the model pages
docs.x.ai/developers/models/grok-voice-think-fast-2.0 and docs.x.ai/developers/models/speech-to-speech;
the event schema docs.x.ai/voice-realtime.ws.json):
- Endpoint `wss://api.x.ai/v1/realtime?model=<id>` (the model goes in the query; `grok-voice-latest`
  is a floating alias of the newest model, so the registry pins a versioned id); the key goes in
  `Authorization: Bearer <key>` on the upgrade. A refused key or a rate limit refuses the upgrade.
- The server opens with `session.created` and `conversation.created`; `session.update` carries a flat
  session (`voice`, `turn_detection`, `audio.input.format` / `audio.output.format` as
  `{"type": "audio/pcm", "rate": <Hz>}`) and is answered by `session.updated`, which echoes it.
- `turn_detection: {"type": null}` turns server VAD off (xAI's shape: the type is null, where OpenAI
  sets the whole field to null). Then `input_audio_buffer.commit` ends the caller's turn (it is
  only available with that type null, and is answered by `input_audio_buffer.committed`) and
  `response.create` asks for the reply.
- Input audio: `input_audio_buffer.append` {audio: base64 little-endian pcm16 mono}; `audio/pcm`
  takes 8, 16, 22.05, 24, 32, 44.1 or 48 kHz, so the harness's 16 kHz chunks go as they are (no
  resampling: the first append is the clip's first chunk, which an emulator keys its truth on).
  The output is asked for at 24 kHz, the documented default, and read at the rate the server
  echoes in `session.updated`.
- The reply: `response.created`, `response.output_audio.delta` {response_id, delta: base64 pcm16}
  (`response.audio.delta` is the documented older name of the same event), then `response.done`
  {response: {status}}: `completed` is the reply; `cancelled`, `failed` and `incomplete` are not.
- Failures: `error` {error: {type, code, message, param, event_id}}, where `event_id` names the
  client event that caused it. "Most errors are recoverable and the session stays open": an error
  ends the turn only when it names one of the turn's own client events (its commit or its
  `response.create` was refused, so no reply is coming) or when its type is `max_duration` or
  `timeout` (the server has ended the session); any other error is noted and the turn goes on.
  Before the session is configured an error refuses the `session.update` and fails the set-up.
- A session lasts at most 120 minutes (the Speech to Speech model page; the registry's
  `session_limit_s`).

Every server event is marked at its arrival stamp (`stamped.received`).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import uuid
from urllib.parse import urlencode

import websockets

from voxwatch.providers.base import ProviderError
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.foundation.events import AUDIO, CLOSED, REQUEST_SENT, Timeline
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import ReaderSession, decode_event, malformed, settle

VENDOR = "xAI"
DEFAULT_URL = "wss://api.x.ai"
PATH = "/v1/realtime"
INPUT_RATE = 16000
OUTPUT_RATE = 24000
DEFAULT_VOICE = "eve"
AUDIO_DELTAS = ("response.output_audio.delta", "response.audio.delta")
SESSION_OVER = ("max_duration", "timeout")  # error types after which the server has ended the session
CLOSE_WAIT_S = 1.0
# what a broken event (bad JSON, fields or base64) or a dropped socket raises while reading
BROKEN = (ValueError, KeyError, TypeError, AttributeError, binascii.Error, websockets.ConnectionClosed)


def _pcm(rate: int) -> dict:
    return {"type": "audio/pcm", "rate": rate}


def _error_text(data: dict) -> str:
    err = data.get("error") or {}
    kind = err.get("code") or err.get("type") or "error"
    return f"{VENDOR} error ({kind}): {str(err.get('message'))[:300]}"


def _broken(exc: BaseException | None, close: int | None, when: str) -> ProviderError:
    """A session that broke `when`: a malformed event, or the socket closed (`exc` None: closed cleanly)."""
    if exc is None or isinstance(exc, websockets.ConnectionClosed):
        return closed(VENDOR, close if exc is None else exc, when)
    return malformed(VENDOR, exc)


async def _configure(ws, session: dict) -> int:
    """Send session.update and wait for session.updated (before t0); the output rate it confirms."""
    stream = received(ws)  # keeps the connection's arrival stamps in step with its messages
    try:
        await ws.send(json.dumps({"type": "session.update", "session": session}))
        async for message, _ in stream:
            data = decode_event(message)
            if data["type"] == "error":
                raise ProviderError(f"{VENDOR} refused the session: {_error_text(data)}")
            if data["type"] == "session.updated":
                audio = (data.get("session") or {}).get("audio") or {}
                if ((audio.get("input") or {}).get("format") or _pcm(INPUT_RATE)) != _pcm(INPUT_RATE):
                    raise ProviderError(f"{VENDOR} did not take 16 kHz pcm input: {audio.get('input')}")
                return int(((audio.get("output") or {}).get("format") or {}).get("rate") or OUTPUT_RATE)
        raise _broken(None, ws.close_code, "during set-up")
    except BROKEN as exc:
        raise _broken(exc, None, "during set-up") from None
    finally:
        await stream.aclose()


class XAIVoiceAgentS2S:
    sample_rate = INPUT_RATE  # what send_audio takes, and what the session is told it gets

    def __init__(self, model: ModelInfo) -> None:
        self.model, self.url = model, base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    async def connect(self, timeline: Timeline) -> "VoiceAgentTurn":
        """Open the socket and configure a manual-turn session (all before t0)."""
        bearer = {"Authorization": f"Bearer {require_key(self.model.vendor).reveal()}"}
        query = urlencode({"model": self.model.vendor_model})
        ws = await open_websocket(f"{self.url}{PATH}?{query}", bearer, VENDOR, clock=timeline.clock)
        session = {"voice": self.model.voice or DEFAULT_VOICE, "turn_detection": {"type": None},
                   "audio": {"input": {"format": _pcm(INPUT_RATE)}, "output": {"format": _pcm(OUTPUT_RATE)}}}
        return VoiceAgentTurn(ws, timeline, await settle(ws, _configure(ws, session)))


class VoiceAgentTurn(ReaderSession):
    """One caller turn and the model's reply on a configured session; one reader task reads it
    until `response.done` (or what ends the turn) and holds the outcome."""

    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline, output_rate: int) -> None:
        self.timeline, self.output_rate = timeline, output_rate
        self._own: set[str] = set()  # event_ids of this turn's client events
        self._noted: str | None = None  # the last recoverable error, named if the turn then fails
        self._closed_at: int | None = None  # response.done's arrival: the stream's CLOSED
        super().__init__(ws)

    def _fail(self, error: ProviderError) -> None:
        """The turn failed (the first failure wins); a recoverable error seen before is named too."""
        if self._error is None:
            note = f" (earlier, recoverable: {self._noted})" if self._noted else ""
            self._error = ProviderError(f"{error}{note}", error.status)

    def _ends_turn(self, data: dict) -> bool:
        """An `error` event: True when it ends the turn (see the module docstring), else it is noted."""
        err = data.get("error") or {}
        if err.get("event_id") in self._own or err.get("type") in SESSION_OVER:
            self._noted = None
            self._fail(ProviderError(_error_text(data)))
            return True
        self._noted = _error_text(data)
        return False

    def _mark_audio(self, delta: str, at: int, offset: int) -> int:
        """Mark one base64 pcm16 delta at its arrival; the sample offset after it."""
        pcm = base64.b64decode(delta, validate=True)
        if len(pcm) % 2:
            raise ValueError("an audio delta ended mid-sample")
        n = len(pcm) // 2
        self.timeline.mark(AUDIO, at, sample_offset=offset, n_samples=n, sample_rate=self.output_rate, audio=pcm)
        return offset + n

    async def _read(self) -> None:
        offset = 0
        async for message, at in received(self.ws):
            data = decode_event(message)
            kind = data["type"]
            if kind in AUDIO_DELTAS:
                offset = self._mark_audio(data["delta"], at, offset)
            elif kind == "response.done":
                status, self._closed_at = data["response"].get("status"), at
                if status != "completed":
                    details = str(data["response"].get("status_details"))[:300]
                    self._fail(ProviderError(f"{VENDOR} response {status}: {details}"))
                return
            elif kind == "error" and self._ends_turn(data):
                return
        self._fail(_broken(None, self.ws.close_code, "before response.done"))

    def _dropped(self, exc: websockets.ConnectionClosed) -> ProviderError:
        return _broken(exc, None, "before response.done")

    def _reader_ended(self) -> None:
        """The stream is CLOSED at response.done's arrival, or now when the turn ended otherwise."""
        self.timeline.mark(CLOSED, self._closed_at)

    async def _send(self, event: dict) -> None:
        try:
            await self.ws.send(json.dumps(event))
        except websockets.ConnectionClosed as exc:
            await asyncio.wait([self._reader], timeout=CLOSE_WAIT_S)  # its reason names the close
            raise self._error or _broken(exc, None, "mid-turn") from None

    async def _send_own(self, kind: str) -> None:
        event_id = f"event_{uuid.uuid4().hex[:20]}"
        self._own.add(event_id)
        await self._send({"type": kind, "event_id": event_id})

    async def send_audio(self, pcm16: bytes) -> None:
        await self._send({"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm16).decode()})

    async def end_audio(self) -> None:
        """Manual turn: commit the caller's audio, then ask for the reply."""
        await self._send_own("input_audio_buffer.commit")
        await self._send_own("response.create")
        self.timeline.mark(REQUEST_SENT)

    async def wait_response(self) -> None:
        """The reader's outcome: the reply is complete, or the turn's failure is raised."""
        await asyncio.shield(self._reader)
        if self._error is not None:
            raise self._error

    async def aclose(self) -> None:
        self._reader.cancel()  # the turn is over (or timed out): nothing more is read
        await self.ws.close()
