"""Smallest.ai Pulse speech to text over its live WebSocket, as the vendor documents it (its
Lightning text to speech is tts/smallest.py).

Protocol facts followed (Smallest's docs-as-code repository smallest-inc/smallest-ai-documentation:
fern/apis/waves/asyncapi/stt-live-ws.yaml @ 004cd61c and @ bfc4ef15 (2026-08-21), the unified
endpoint; fern/apis/waves/asyncapi/pulse-stt-ws.yaml @ 012ff34d, the same messages on the legacy
path; rendered at docs.smallest.ai/waves/api-reference/api-reference/speech-to-text/speech-to-text):
- `wss://api.smallest.ai/waves/v1/stt/live?model=pulse&language=en&sample_rate=16000&encoding=linear16`,
  auth `Authorization: Bearer <key>`. Every setting is a query parameter (booleans as the strings
  'true' / 'false'); `model` and `language` are required, and only `pulse` streams (`pulse-pro` is
  refused with HTTP 400 before the upgrade). A missing or bad key is HTTP 401 before the upgrade.
- Audio goes as binary frames in the query's `encoding` (linear16, or mulaw for the phone
  condition) at its `sample_rate` (8000 to 48000; "the server does not resample").
- `{"type": "finalize"}` flushes the audio buffer and forces an immediate `is_final` transcript,
  marked `from_finalize: true`; the session stays open. `{"type": "close_stream"}` ends the input:
  the server flushes, sends its last transcript with `is_last: true`, then closes.
- `transcription` events carry `transcription` (the unified examples) or `transcript` (the legacy
  examples; the unified schema says the WebSocket emits both), `is_final`, `is_last`,
  `from_finalize`, `session_id`, `language`, and `words` (`start`/`end` in seconds) with
  `word_timestamps=true`. An `is_final` transcript holds its segment only, not what came before:
  the hypothesis is the joined finals. Interim transcripts are the segment so far.
- `{"type": "error", "status": "error", "message"}` is "emitted as JSON before a forced close" (the
  legacy schema's ErrorResponse nests it: `{"status": "error", "error": {"message", "code"}}`);
  close 1008 is the concurrency limit (close_codes.VENDOR).
- Endpointing is on by default since 2026-07-12 (changelog-entries/pulse-stt/
  2026-07-12-pulse-stt-endpointing-default-on.mdx) and `finalize_on_words` (default 'true') also
  finalizes by word count, so finals can arrive mid-sentence; `eou_timeout_ms` (100-10000, default
  800) bounds the trailing silence. The query pins the documented defaults of the first and last,
  so a change of default cannot move the series unseen, and turns word-count finalization off (the
  spec's own advice when the client finalizes, as this adapter does at the end of the audio).

The turn ends at the `from_finalize` final, or at the `is_last` transcript when endpointing had
already finalized everything. TTFS is the arrival of the last final with words, whichever brought it.
References (protocol facts only): pipecat-ai/pipecat src/pipecat/services/smallest/stt.py @ acead05;
coval-ai/benchmarks runner/src/coval_bench/providers/stt/smallest.py @ bf95d1b.
"""

from __future__ import annotations

import asyncio
import copy
import json
from urllib.parse import urlencode

from voxwatch.foundation.events import FINAL, PARTIAL, Timeline
from voxwatch.providers.base import ProviderError, language_copy
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import ReaderSession

VENDOR = "Smallest"
DEFAULT_URL = "wss://api.smallest.ai"
PATH = "/waves/v1/stt/live"
CLOSE_WAIT_S = 2.0
EOU_TIMEOUT_MS = 800  # the documented default, pinned

ENCODINGS = {"mulaw": "mulaw"}
"""Each wire encoding voxwatch sends (datasets.wire) and Pulse's `encoding` for it."""

LANGUAGES = frozenset({"en", "hi", "de", "es", "ru", "it", "fr", "nl", "pt", "gu", "mr", "or", "bn", "ta", "te",
                       "kn", "ml"})
"""The streaming single-language codes of pulse-stt-ws.yaml @ 012ff34d that the default host serves:
zh, yue, ja and ko are served from the US host only (api.us.smallest.ai), which closes without a
transcript when the default host is asked for them."""


class SmallestPulseSTT:
    sample_rate = 16000
    encoding = "linear16"
    wire_encodings = tuple(ENCODINGS)
    language = "en"

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    def in_language(self, language: str) -> "SmallestPulseSTT | None":
        """A copy whose query names `language`, or None when the default host does not serve it."""
        return language_copy(self, language, LANGUAGES)

    def on_wire(self, wire) -> "SmallestPulseSTT":
        """A copy that declares the wire format (the phone line's 8 kHz mu-law) in its query."""
        wired = copy.copy(self)
        wired.encoding, wired.sample_rate = ENCODINGS[wire.encoding], wire.sample_rate
        return wired

    async def connect(self, timeline: Timeline) -> "PulseSession":
        key = require_key(self.model.vendor)
        query = urlencode({"model": self.model.vendor_model, "language": self.language,
                           "sample_rate": self.sample_rate, "encoding": self.encoding, "word_timestamps": "false",
                           "endpointing": "true", "eou_timeout_ms": EOU_TIMEOUT_MS, "finalize_on_words": "false"})
        ws = await open_websocket(f"{self.url}{PATH}?{query}", {"Authorization": f"Bearer {key.reveal()}"}, VENDOR,
                                  clock=timeline.clock)
        return PulseSession(ws, timeline)


def _error_text(data: dict) -> str:
    """An error event's text: `message` (the unified ErrorEvent), or `error.message` with its `code`
    (the legacy ErrorResponse schema)."""
    error = data.get("error")
    if isinstance(error, dict):
        return f"{error.get('code')}: {error.get('message')}"
    return str(data.get("message") or error)


class PulseSession(ReaderSession):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline) -> None:
        self.timeline = timeline
        self._closing = False  # close_stream sent
        self._finalized = asyncio.Event()  # the from_finalize final, or the is_last transcript, arrived
        super().__init__(ws)

    async def _read(self) -> None:
        async for message, at in received(self.ws):
            if isinstance(message, bytes):
                continue
            data = json.loads(message)
            kind = data.get("type", "transcription")  # the legacy examples carry no type
            if kind == "error" or data.get("status") == "error":
                raise ProviderError(f"{VENDOR} error: {_error_text(data)[:300]}")
            if kind != "transcription":
                continue  # speech_started / speech_ended (vad_events) and newer kinds carry no transcript
            text = data["transcription"] if "transcription" in data else data["transcript"]
            if not isinstance(text, str) or not isinstance(data.get("is_final", False), bool):
                raise TypeError("transcription fields of the wrong type")
            if data.get("is_final"):
                self.timeline.mark(FINAL, at, text=text)
            elif text:
                self.timeline.mark(PARTIAL, at, text=text)
            if data.get("from_finalize") or data.get("is_last"):
                self._finalized.set()
            if data.get("is_last"):
                break
        if not self._closing:  # closed normally while the stream was open: cut short
            raise closed(VENDOR, self.ws.close_code)

    async def send_audio(self, pcm16: bytes) -> None:
        await self._send(pcm16)

    async def end_audio(self) -> None:
        """finalize (the final, forced), then close_stream (the input is over: is_last ends the results)."""
        await self._send(json.dumps({"type": "finalize"}))
        await self._close_stream()

    async def _close_stream(self) -> None:
        if not self._closing:
            self._closing = True
            await self._send(json.dumps({"type": "close_stream"}))

    async def wait_final(self) -> None:
        await self._wait_for(self._finalized)

    async def aclose(self) -> None:
        """close_stream (unless sent), let the server send is_last and close (briefly), then close."""
        await self._end_and_close(self._close_stream, CLOSE_WAIT_S)
