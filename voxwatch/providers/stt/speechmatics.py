"""Speechmatics real-time transcription (Realtime API v2 WebSocket), as the vendor documents it.

Protocol facts followed (speechmatics/docs spec/realtime.yaml, the turn-detection and WebSocket
protocol guides, and the speechmatics-python-sdk `rt` client):
- Endpoints (docs.speechmatics.com/get-started/authentication#supported-endpoints and
  /administration/regions; speechmatics/docs docs/get-started/authentication.mdx @ 8783a7ae,
  2026-08): Realtime SaaS is served in EU1 (`eu.rt.speechmatics.com`) and US1
  (`us.rt.speechmatics.com`), and `global.rt.speechmatics.com` routes each connection to the
  nearest region, possibly any. `eu2.rt` is no longer listed (the SDK still defaults to it).
  A worker whose region is named for Europe (`eu-*`, `europe-*`) is pinned to EU1, one named for
  the US (`us-*`) to US1, so the path a series measures stays in the region its rows name; any
  other region uses `global`, the nearest. `VOXWATCH_SPEECHMATICS_BASE_URL` overrides the choice
  (e.g. `wss://global.rt.speechmatics.com` for every worker).
- The path is `/v2`; auth `Authorization: Bearer <key>`; a refused key is
  HTTP 401 on the handshake (or an `Error` of type `not_authorised` with close code 4001).
- The client sends `StartRecognition` (`audio_format` raw pcm_s16le at the sample rate, or for the
  phone condition raw `mulaw` at 8000: docs.speechmatics.com/speech-to-text/realtime/input lists
  `pcm_f32le`, `pcm_s16le` and `mulaw` for raw audio, with a mandatory `sample_rate`;
  `transcription_config` with `language`, `model` (`enhanced` | `standard`, which replaced the
  deprecated `operating_point`), `enable_partials`, `max_delay`) and must wait for
  `RecognitionStarted` before sending audio; `Info` messages may come first.
- Audio goes as binary frames; the server acknowledges each with `AudioAdded` (`seq_no`).
- `AddPartialTranscript` and `AddTranscript` carry `metadata.transcript`. Finals come per segment
  (every up to `max_delay` seconds), not once per stream: each AddTranscript with words is a FINAL
  event, so the hypothesis is the joined segments and TTFS the last segment's final (what
  metrics.timeline.stt_stream_metrics computes).
- `ForceEndOfUtterance` (with `timestamp`, the seconds of audio sent, as the SDK does) makes the
  server finalize what it has now: an `AddTranscript`, then `EndOfUtterance`. That is the forced
  final, without ending the session. `EndOfStream` (`last_seq_no`) ends the input; the server
  sends any last finals and `EndOfTranscript`.
- `Error` (`type`, `reason`) ends the session, followed by a close (4001 not authorised,
  4005 quota, 4013 job error, 1011 internal error, 1003 protocol error).

- End of utterance (docs.speechmatics.com/speech-to-text/realtime/turn-detection): with
  `conversation_config.end_of_utterance_silence_trigger` in `transcription_config` (0 to 2 s; the
  docs' example is 0.5, taken here), "if the configured interval passes without another word being
  detected ... the server sends a final transcript message to the client, followed by an extra
  EndOfUtterance message". One that comes before voxwatch sent ForceEndOfUtterance is the server's
  own end of utterance, stamped END_OF_TURN (METHOD "STT end of turn"); after it, the forced one
  cannot be told from it, so none is.

Settings measured: `max_delay` 0.7 s (the minimum, in Speechmatics' low-latency configuration)
with `max_delay_mode` flexible and partials on; end-of-utterance detection after 0.5 s of silence.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re

import websockets

from voxwatch.foundation.languages import primary

from voxwatch.providers.base import ProviderError
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.foundation.events import END_OF_TURN, FINAL, PARTIAL, Timeline
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import ReaderSession, malformed

GLOBAL_URL = "wss://global.rt.speechmatics.com"
REGIONAL_URLS = {"eu": "wss://eu.rt.speechmatics.com", "europe": "wss://eu.rt.speechmatics.com",
                 "us": "wss://us.rt.speechmatics.com"}  # a worker region's first word -> its endpoint
MAX_DELAY_S = 0.7
EOU_SILENCE_S = 0.5  # end_of_utterance_silence_trigger: the docs' example value
CLOSE_WAIT_S = 2.0
# Error.type -> row status; any other type is an "error"
ERROR_STATUS = {"not_authorised": "auth_error", "quota_exceeded": "rate_limited", "timelimit_exceeded": "rate_limited",
                "job_error": "server_error", "session_transfer": "server_error"}


def endpoint_for(region: str | None) -> str:
    """The documented real-time endpoint for a worker region: EU1 for `eu-*` / `europe-*`, US1 for
    `us-*`, else global (the nearest region)."""
    first = re.split(r"[^a-z]", (region or "").lower(), maxsplit=1)[0]
    return REGIONAL_URLS.get(first, GLOBAL_URL)


def error_from(data: dict) -> ProviderError:
    kind = str(data.get("type"))
    return ProviderError(f"Speechmatics error {kind}: {str(data.get('reason'))[:300]}", ERROR_STATUS.get(kind, "error"))


def closed_error(exc: websockets.ConnectionClosed, during: str) -> ProviderError:
    """A close that ended the session early, by kind (close_codes: Speechmatics' documented codes),
    with Speechmatics' reason."""
    return closed("Speechmatics", exc, during)


ENCODINGS = {"mulaw": "mulaw"}
"""Each wire encoding voxwatch sends (datasets.wire) and Speechmatics' name for it (one byte a sample)."""


class SpeechmaticsSTT:
    """`<model>-<language>` ids, e.g. `speechmatics/enhanced-en`: the realtime model and the language pack."""

    sample_rate = 16000
    per_region = True  # Registry.create passes the worker's region: the endpoint follows it
    encoding, bytes_per_sample = "pcm_s16le", 2
    wire_encodings = tuple(ENCODINGS)

    def on_wire(self, wire) -> "SpeechmaticsSTT":
        """A copy that declares the wire format (the phone line's 8 kHz mu-law) in its audio_format."""
        wired = copy.copy(self)
        wired.encoding, wired.bytes_per_sample, wired.sample_rate = ENCODINGS[wire.encoding], 1, wire.sample_rate
        return wired

    def __init__(self, model: ModelInfo, region: str | None = None) -> None:
        self.model = model
        self.url = base_url(model.vendor, endpoint_for(region))
        self.emulator = is_loopback(self.url)
        self.model_name, _, self.language = model.vendor_model.rpartition("-")

    def in_language(self, language: str) -> "SpeechmaticsSTT | None":
        """The adapter itself when `language` is its id's language pack (`enhanced-en` takes en), else None:
        another language is another id, never this one's pack sent other speech."""
        return self if primary(language) == self.language else None

    async def connect(self, timeline: Timeline) -> "SpeechmaticsSession":
        """Open the session and wait for `RecognitionStarted`, so set-up stays outside the clocks."""
        key = require_key(self.model.vendor)
        ws = await open_websocket(f"{self.url}/v2", {"Authorization": f"Bearer {key.reveal()}"}, "Speechmatics",
                                  clock=timeline.clock)
        try:
            await ws.send(json.dumps({
                "message": "StartRecognition",
                "audio_format": {"type": "raw", "encoding": self.encoding, "sample_rate": self.sample_rate},
                "transcription_config": {"language": self.language, "model": self.model_name, "enable_partials": True,
                                         "max_delay": MAX_DELAY_S, "max_delay_mode": "flexible",
                                         "conversation_config": {"end_of_utterance_silence_trigger": EOU_SILENCE_S}}}))
            while True:
                message = await ws.recv()
                ws.arrivals.popleft()  # keep the arrival stamps in step with the messages
                data = json.loads(message)
                kind = data.get("message")
                if kind == "RecognitionStarted":
                    break
                if kind == "Error":
                    raise error_from(data)
        except websockets.ConnectionClosed as exc:
            raise closed_error(exc, "before recognition started") from None
        except (json.JSONDecodeError, TypeError, AttributeError) as exc:
            await ws.close()
            raise malformed("Speechmatics", exc) from None
        except ProviderError:
            await ws.close()
            raise
        return SpeechmaticsSession(ws, timeline, self.sample_rate, self.bytes_per_sample)


class SpeechmaticsSession(ReaderSession):
    vendor = "Speechmatics"

    def __init__(self, ws, timeline: Timeline, sample_rate: int, bytes_per_sample: int = 2) -> None:
        self.timeline, self.sample_rate = timeline, sample_rate
        self.bytes_per_sample = bytes_per_sample
        self._sent_chunks = 0  # the server numbers AudioAdded seq_no from 1 in the order it reads them
        self._sent_bytes = 0
        self._forced = False
        self._utterance_ended = asyncio.Event()
        super().__init__(ws)

    async def _read(self) -> None:
        async for message, at in received(self.ws):
            if isinstance(message, bytes):
                continue
            data = json.loads(message)
            kind = data["message"]
            if kind in ("AddTranscript", "AddPartialTranscript"):
                text = data["metadata"]["transcript"]
                if not isinstance(text, str):
                    raise TypeError("metadata.transcript is not a string")
                self.timeline.mark(FINAL if kind == "AddTranscript" else PARTIAL, at, text=text)
            elif kind == "EndOfUtterance":
                if self._forced:
                    self._utterance_ended.set()
                else:
                    self.timeline.mark(END_OF_TURN, at)
            elif kind == "EndOfTranscript":
                break
            elif kind == "Error":
                raise error_from(data)
            # AudioAdded, Info, Warning, AudioEvent* and newer kinds carry no transcript

    async def _send(self, message: bytes | str) -> None:
        """Send; a session Speechmatics has closed fails with its Error, or its close code and reason."""
        try:
            await self.ws.send(message)
        except websockets.ConnectionClosed as exc:
            raise self._error or closed_error(exc, "mid-stream") from None

    async def send_audio(self, pcm16: bytes) -> None:
        await self._send(pcm16)
        self._sent_chunks += 1
        self._sent_bytes += len(pcm16)

    async def end_audio(self) -> None:
        """ForceEndOfUtterance: finalize everything sent so far, keeping the session open."""
        self._forced = True
        await self._send(json.dumps({"message": "ForceEndOfUtterance",
                                     "timestamp": self._sent_bytes / self.bytes_per_sample / self.sample_rate}))

    async def wait_final(self) -> None:
        """Return once the forced utterance has ended (its finals are in) or the stream closed."""
        await self._wait_for(self._utterance_ended)

    async def _end_of_stream(self) -> None:
        await self.ws.send(json.dumps({"message": "EndOfStream", "last_seq_no": self._sent_chunks}))

    async def aclose(self) -> None:
        """EndOfStream, let the server send EndOfTranscript (briefly), then close."""
        await self._end_and_close(self._end_of_stream, CLOSE_WAIT_S)
