"""Deepgram live transcription (`/v1/listen` WebSocket), as the vendor documents it.

Protocol facts followed (developers.deepgram.com/docs/finalize, /docs/close-stream,
/docs/understand-endpointing-interim-results; deepgram/deepgram-docs fern/docs/finalize.mdx and
close-stream.mdx):
- Binary frames carry linear16 PCM, or for the phone condition G.711 mu-law as the query declares
  it (`encoding=mulaw&sample_rate=8000`: developers.deepgram.com/docs/encoding, /docs/sample-rate;
  raw audio needs both parameters); auth `Authorization: Token <key>`. `Results` messages carry
  `channel.alternatives[0].transcript`; `is_final` marks a finalized segment (finals come per
  segment: the hypothesis is the joined segments, TTFS the last worded one's arrival), interim
  results otherwise; `speech_final` marks the segment Deepgram's endpointing closed.
- End of turn (METHOD "STT end of turn"): endpointing "is enabled by default and set to 10
  milliseconds": when its VAD hears that much silence after speech, the segment's final comes with
  `speech_final: true` (developers.deepgram.com/docs/endpointing). Such a final, unless it is
  Finalize's reply (`from_finalize: true`), is stamped END_OF_TURN beside its FINAL. `UtteranceEnd`
  needs `utterance_end_ms` (developers.deepgram.com/docs/utterance-end), not asked for here: none comes.
- `{"type": "Finalize"}` flushes: Deepgram processes what audio it still holds and the final
  comes back with `from_finalize: true`. That reply is not guaranteed when no significant audio
  is left to process, which is the usual case here: the clip ends 100 ms after the last word,
  and endpointing has often finalized the last segment before Finalize arrives.
- `{"type": "CloseStream"}` makes Deepgram finish processing any cached audio, send those
  results, then a `Metadata` summary, and close: Metadata is the end of the results.

The dataset's language goes as the `language` query parameter (developers.deepgram.com/docs/models:
every model defaults to `language=en`); Nova-3's monolingual languages are Deepgram's changelog's
(2025-08-15 to 2026-03-31), listed in LANGUAGES; any other language is refused before connecting.

So the turn ends at whichever comes first: the `from_finalize` final, or the Metadata after
CloseStream, which `end_audio` sends right after Finalize (this session carries one turn). Neither
moves TTFS: it is the arrival of the last final with words, the segment covering the end of
speech, whichever of the two brought it.
"""

from __future__ import annotations

import copy
import json
from urllib.parse import urlencode

from voxwatch.providers.base import ProviderError, language_copy
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.foundation.events import END_OF_TURN, FINAL, PARTIAL, Timeline
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import ReaderSession

DEFAULT_URL = "wss://api.deepgram.com"
CLOSE_WAIT_S = 2.0


ENCODINGS = {"mulaw": "mulaw"}
"""Each wire encoding voxwatch sends (datasets.wire) and Deepgram's name for it."""

LANGUAGES = {"nova-3": frozenset({
    "en", "es", "fr", "pt", "de", "nl", "sv", "da", "it", "tr", "no", "id", "bg", "cs", "fi", "hi", "hu", "ja",
    "ko", "pl", "ru", "uk", "vi", "ca", "et", "el", "lv", "lt", "ms", "ro", "sk", "be", "bn", "bs", "hr", "kn",
    "mk", "mr", "sr", "sl", "ta", "tl", "te", "zh"})}
"""The `language` codes each model takes (Deepgram's Nova-3 changelog entries); a model not listed takes English."""


class DeepgramSTT:
    sample_rate = 16000
    encoding = "linear16"
    wire_encodings = tuple(ENCODINGS)
    language = "en"  # Deepgram's own default

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    def in_language(self, language: str) -> "DeepgramSTT | None":
        """A copy whose query asks for `language`, or None when the model does not take it."""
        return language_copy(self, language, LANGUAGES.get(self.model.vendor_model, frozenset({"en"})))

    def on_wire(self, wire) -> "DeepgramSTT":
        """A copy that declares the wire format (the phone line's 8 kHz mu-law) in its query."""
        wired = copy.copy(self)
        wired.encoding, wired.sample_rate = ENCODINGS[wire.encoding], wire.sample_rate
        return wired

    async def connect(self, timeline: Timeline) -> "DeepgramSession":
        key = require_key(self.model.vendor)
        query = urlencode({"model": self.model.id.split("/", 1)[1], "encoding": self.encoding,
                           "sample_rate": self.sample_rate, "channels": 1, "interim_results": "true",
                           "language": self.language})
        ws = await open_websocket(f"{self.url}/v1/listen?{query}", {"Authorization": f"Token {key.reveal()}"},
                                  "Deepgram", clock=timeline.clock)
        return DeepgramSession(ws, timeline)


class DeepgramSession(ReaderSession):
    vendor = "Deepgram"

    def __init__(self, ws, timeline: Timeline) -> None:
        self.timeline = timeline
        self._stream_closed = False  # CloseStream sent
        super().__init__(ws)

    async def _read(self) -> None:
        async for message, at in received(self.ws):
            if isinstance(message, bytes):
                continue
            data = json.loads(message)
            kind = data.get("type")
            if kind == "Results":
                text = data["channel"]["alternatives"][0]["transcript"]
                self.timeline.mark(FINAL if data.get("is_final") else PARTIAL, at, text=text)
                if data.get("speech_final") is True and not data.get("from_finalize"):
                    self.timeline.mark(END_OF_TURN, at)
                if data.get("from_finalize"):
                    self._done.set()
            elif kind == "Metadata":
                break  # after CloseStream: every result is in
            elif kind == "Error" or "err_code" in data:
                self._error = ProviderError(f"Deepgram error: {str(data.get('description') or data.get('err_msg'))[:300]}")
                break

    async def send_audio(self, pcm16: bytes) -> None:
        await self.ws.send(pcm16)

    async def end_audio(self) -> None:
        """Finalize (the final, forced), then CloseStream (the input is over: Metadata will end the results)."""
        await self.ws.send(json.dumps({"type": "Finalize"}))
        await self._close_stream()

    async def _close_stream(self) -> None:
        if not self._stream_closed:
            self._stream_closed = True
            await self.ws.send(json.dumps({"type": "CloseStream"}))

    async def wait_final(self) -> None:
        await self._wait()

    async def aclose(self) -> None:
        """CloseStream (unless sent), then let the server send its Metadata and close (briefly), then close."""
        await self._end_and_close(self._close_stream, CLOSE_WAIT_S)
