"""AssemblyAI Universal-Streaming (streaming API v3, `/v3/ws` WebSocket), as the vendor documents it.

Protocol facts followed (AssemblyAI streaming AsyncAPI spec and the assemblyai-python-sdk v3 client):
- `wss://streaming.assemblyai.com/v3/ws?sample_rate=..&encoding=pcm_s16le&format_turns=..&speech_model=..`;
  auth is the raw key in `Authorization` (no scheme). The server opens with `Begin` (`id`, `expires_at`).
  Headers as the official SDK sends them: `AssemblyAI-Version: 2025-05-12`
  (AssemblyAI/assemblyai-python-sdk assemblyai/streaming/v3/_base.py `_build_headers`, and its
  tests/unit/test_streaming.py, @ 530eca5a, 2026-08-14).
- Audio goes as binary frames of pcm_s16le, or for the phone condition pcm_mulaw at 8000 Hz (the
  `encoding` values of AssemblyAI's streaming docs, "PCM16 or Mu-law", and of its SDKs' streaming
  types); each frame must hold 50 to 1000 ms of audio (close code
  3007 otherwise). The harness writes 20 ms chunks, so this adapter batches them and sends once
  50 ms are buffered: the first audio reaches AssemblyAI 40 ms after t0 and every later sample up
  to 40 ms late, a cost of the protocol that every AssemblyAI caller with 20 ms frames pays, and
  which the latencies measured here therefore include. The remainder at the end is padded with
  silence to 50 ms (mu-law's silence is 0xFF, not zero bytes).
- `Turn` messages carry `turn_order`, `end_of_turn`, `turn_is_formatted`, `transcript` (the turn's
  finalized words only) and `words` (each with `word_is_final`). A Turn with `end_of_turn: false`
  is a partial: its text is all its words, final or not, which is what a caller would display. The
  first `end_of_turn: true` Turn of a `turn_order` is that turn's final (its `transcript`).
- `format_turns=false`: the final a caller gets is the first end-of-turn Turn, unformatted (lower
  case, no punctuation; the WER normalizer ignores both). With formatting on, AssemblyAI sends a
  second, formatted end-of-turn Turn later; AssemblyAI advises voice agents not to wait for it, so
  it is not requested, and if one ever arrives it is ignored (the turn already has its final).
- A clip may hold several turns; each turn's final is a FINAL event, so the hypothesis is the
  joined turns and TTFS the last turn's final.
- End of turn (METHOD "STT end of turn"): AssemblyAI's own end of a turn is a Turn with
  `end_of_turn: true`, decided by its turn detector (`end_of_turn_confidence_threshold`,
  `min_end_of_turn_silence_when_confident` 400 ms and `max_turn_silence` 1280 ms by default:
  assemblyai.com/docs/api-reference/streaming-api/streaming-api). One that arrives before voxwatch
  sent ForceEndpoint is stamped END_OF_TURN beside its FINAL; after it, the protocol cannot tell the
  model's from the forced one, so none is.
- `{"type": "ForceEndpoint"}` ends the open turn now; `{"type": "Terminate"}` makes the server flush
  what it has, send `Termination` and close. `{"type": "Error", "error": ..}` (or a bare `error`)
  and close codes (4001 not authorized, 4102/3009 stream or concurrency limits, 3005/1011 server
  errors, 3007 chunk duration) end the session; what each becomes is close_codes.py's, with the
  pages that document them (1013, which the SDK once named ReconnectAttemptsExhausted, is read
  as every vendor's 1013: the server's temporary condition, `server_error`).
- 4029 is "Client sent audio too fast" (the SDK's `RealTimeErrorCodes`), and AssemblyAI asks for
  audio at the pace it was recorded (assemblyai.com/docs/streaming/guides/stream_prerecorded_file_realtime:
  faster than real time may close the session). The harness paces in real time, so a 4029 is the
  worker's own pacing fault (a stall, then a catch-up burst), not a vendor limit: a HarnessFault,
  whose row is `excluded` with the reason and counts in no rate (METHOD).
"""

from __future__ import annotations

import asyncio
import copy
import json
from urllib.parse import urlencode

import websockets

from voxwatch.providers.base import HarnessFault, ProviderError, takes_language
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.foundation.events import END_OF_TURN, FINAL, PARTIAL, Timeline
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import ReaderSession, malformed

DEFAULT_URL = "wss://streaming.assemblyai.com"
MIN_CHUNK_MS = 50  # AssemblyAI takes 50-1000 ms of audio per binary message
CLOSE_WAIT_S = 2.0
API_VERSION = "2025-05-12"  # the AssemblyAI-Version header, as the official SDK sends it


def closed_error(exc: websockets.ConnectionClosed, during: str) -> ProviderError | HarnessFault:
    """A close that ended the session early, by kind (close_codes: AssemblyAI's documented codes,
    4029 the harness's own pacing fault); the reason is AssemblyAI's, never the request."""
    return closed("AssemblyAI", exc, during)


ENCODINGS = {"mulaw": ("pcm_mulaw", b"\xff")}
"""Each wire encoding voxwatch sends (datasets.wire): AssemblyAI's name for it and one sample of silence."""


LANGUAGES = {"universal-streaming-english": frozenset({"en"}),
             "universal-streaming-multilingual": frozenset({"en", "es", "fr", "de", "it", "pt"})}
"""What each streaming model transcribes (assemblyai.com/docs/streaming/universal-streaming/
multilingual-transcription). The v3 query takes no language for these models: the model is the
choice (the multilingual one detects the language per utterance), so a language is only checked."""


class AssemblyAISTT:
    sample_rate = 16000
    format_turns = False  # see the module docstring: the final is the first, unformatted, end of turn
    encoding, silence = "pcm_s16le", b"\x00\x00"
    wire_encodings = tuple(ENCODINGS)

    def on_wire(self, wire) -> "AssemblyAISTT":
        """A copy that declares the wire format (the phone line's 8 kHz mu-law) in its query."""
        wired = copy.copy(self)
        (wired.encoding, wired.silence), wired.sample_rate = ENCODINGS[wire.encoding], wire.sample_rate
        return wired

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    def in_language(self, language: str) -> "AssemblyAISTT | None":
        """The adapter itself when its speech_model transcribes `language`, else None (nothing is sent)."""
        return takes_language(self, language, LANGUAGES.get(self.model.vendor_model, frozenset({"en"})))

    async def connect(self, timeline: Timeline) -> "AssemblyAISession":
        """Open the session and wait for `Begin`, so session set-up stays outside the clocks."""
        key = require_key(self.model.vendor)
        query = urlencode({"sample_rate": self.sample_rate, "encoding": self.encoding,
                           "format_turns": str(self.format_turns).lower(), "speech_model": self.model.vendor_model})
        ws = await open_websocket(f"{self.url}/v3/ws?{query}",
                                  {"Authorization": key.reveal(), "AssemblyAI-Version": API_VERSION}, "AssemblyAI",
                                  clock=timeline.clock)
        try:
            while True:
                message = await ws.recv()
                ws.arrivals.popleft()  # keep the arrival stamps in step with the messages
                data = json.loads(message)
                if data.get("type") == "Begin":
                    break
                _raise_for_error(data)
        except websockets.ConnectionClosed as exc:
            raise closed_error(exc, "before the session began") from None
        except (json.JSONDecodeError, TypeError, AttributeError) as exc:
            await ws.close()
            raise malformed("AssemblyAI", exc) from None
        except ProviderError:
            await ws.close()
            raise
        return AssemblyAISession(ws, timeline, self.sample_rate, self.silence)


def _raise_for_error(data: dict) -> None:
    if data.get("type") == "Error" or ("error" in data and "type" not in data):
        raise ProviderError(f"AssemblyAI error: {str(data.get('error'))[:300]}")


class AssemblyAISession(ReaderSession):
    vendor = "AssemblyAI"

    def __init__(self, ws, timeline: Timeline, sample_rate: int, silence: bytes = b"\x00\x00") -> None:
        self.timeline, self.silence = timeline, silence
        self.min_bytes = sample_rate * MIN_CHUNK_MS // 1000 * len(silence)
        self._buffer = bytearray()
        self._finalized: set[int] = set()  # turn_order values whose final has arrived
        self._open_turn = False  # a turn has words and no final yet
        self._forced = False  # ForceEndpoint sent: the next end of turn is the stream's final
        self._terminated = False  # Terminate sent
        self._final_after_force = asyncio.Event()
        super().__init__(ws)

    async def _read(self) -> None:
        async for message, at in received(self.ws):
            if isinstance(message, bytes):
                continue
            data = json.loads(message)
            kind = data.get("type")
            if kind == "Turn":
                self._turn(data, at)
            elif kind == "Termination":
                break
            else:
                _raise_for_error(data)  # Begin, SpeechStarted, Warning and newer kinds carry no transcript

    def _turn(self, data: dict, at: int) -> None:
        order, end = data["turn_order"], data["end_of_turn"]
        transcript, words = data["transcript"], data["words"]
        if not isinstance(order, int) or not isinstance(end, bool) or not isinstance(transcript, str):
            raise TypeError("Turn fields of the wrong type")
        if order in self._finalized:
            return  # the formatted copy of a turn that already has its final
        if end:
            self._finalized.add(order)
            self._open_turn = False
            self.timeline.mark(FINAL, at, text=transcript)
            if not self._forced:
                self.timeline.mark(END_OF_TURN, at)
            if self._forced:
                self._final_after_force.set()
        else:
            text = " ".join(str(w["text"]) for w in words) or transcript
            self._open_turn = self._open_turn or bool(text.strip())
            self.timeline.mark(PARTIAL, at, text=text)

    async def _send(self, message: bytes | str) -> None:
        """Send; a session AssemblyAI has closed fails with its close code and reason (its error channel)."""
        try:
            await self.ws.send(message)
        except websockets.ConnectionClosed as exc:
            raise self._error or closed_error(exc, "mid-stream") from None

    async def send_audio(self, pcm16: bytes) -> None:
        """Buffer until 50 ms are held (AssemblyAI's minimum message), then send them as one frame."""
        self._buffer += pcm16
        if len(self._buffer) >= self.min_bytes:
            chunk, self._buffer = bytes(self._buffer), bytearray()
            await self._send(chunk)

    async def end_audio(self) -> None:
        """Send what is buffered (padded with silence to 50 ms), then ForceEndpoint."""
        if self._buffer:
            chunk = bytes(self._buffer) + self.silence * (max(0, self.min_bytes - len(self._buffer)) // len(self.silence))
            self._buffer = bytearray()
            await self._send(chunk)
        self._forced = True
        await self._send(json.dumps({"type": "ForceEndpoint"}))

    async def wait_final(self) -> None:
        """Return once the open turn has ended after ForceEndpoint, or, when no turn was open,
        once the server has flushed and terminated (it sends any last turn's final first)."""
        if not self._open_turn and not self._done.is_set():
            await self._terminate()
        await self._wait_for(self._final_after_force)

    async def _terminate(self) -> None:
        if not self._terminated:
            self._terminated = True
            try:
                await self.ws.send(json.dumps({"type": "Terminate"}))
            except websockets.ConnectionClosed:
                pass

    async def aclose(self) -> None:
        """Terminate, let the server send Termination and close (briefly), then close."""
        await self._end_and_close(self._terminate, CLOSE_WAIT_S)
