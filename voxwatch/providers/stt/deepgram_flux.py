"""Deepgram Flux, turn-based speech to text on `/v2/listen` (WebSocket), as the vendor documents it.
Deepgram's `/v1/listen` (Nova) is stt/deepgram.py: the two share the host and the key, not the protocol.

Protocol facts followed (read 2026-12-07; docs/vendor-notes/stt-deepgram-flux.md has the excerpts):
- `wss://api.deepgram.com/v2/listen?model=flux-general-en&encoding=linear16&sample_rate=16000`, auth
  `Authorization: Token <key>` (developers.deepgram.com/reference/speech-to-text/listen-flux; the
  official SDK deepgram/deepgram-python-sdk src/deepgram/listen/v2 @ 7da415d, 2026-07-22: the path
  `/v2/listen`). `model` is `flux-general-en` or `flux-general-multi` (deepgram/deepgram-api-specs
  asyncapi.yml @ 4ba987c, ListenV2Model). v1-only parameters (`channels`, `interim_results`, ...) make
  the handshake fail with 400, so the query carries only v2's. A handshake over the concurrency limit
  is refused with HTTP 429 (Deepgram staff, github.com/orgs/deepgram/discussions/1621).
- Audio: mono, binary frames, raw linear16 (or mulaw) with `encoding` and `sample_rate` both given;
  rates 8000, 16000, 24000, 44100, 48000. "Chunk size: 80ms strongly recommended"
  (docs/flux/nova-3-migration): the harness's chunks are sent as they come, and the chunk size is the
  run's (`chunk_ms`).
- Server messages (asyncapi): `Connected` first; `TurnInfo` with `event` one of `StartOfTurn`,
  `Update` (about every 0.25 s of audio), `EagerEndOfTurn`, `TurnResumed`, `EndOfTurn`, and the
  turn's `transcript`, cumulative within the turn (replaced, never appended), reset per turn, with
  `turn_index`, `audio_window_start`/`_end` and `words` in seconds; `Error` (fatal, with `code` and
  `description`); `ConfigureSuccess`/`ConfigureFailure` (no Configure is sent here).
- "The `EndOfTurn` transcript will always match the immediately preceding `EagerEndOfTurn`
  transcript" (docs/flux/state): an EagerEndOfTurn may be withdrawn by `TurnResumed`, so it is a
  partial here; only `EndOfTurn` is final. The hypothesis is the joined EndOfTurn transcripts.
- End of audio: `{"type": "CloseStream"}` makes Flux decode what it holds, emit trailing `Update`s
  "and then close the connection"; it "does not finalize the active turn. No `EndOfTurn` event is
  emitted", no summary, and the close carries no status code (docs/flux/close-stream): a client sees
  1005. There is no Finalize on v2. `{"type": "ForceEndTurn"}` ("has no additional fields",
  docs/flux/force-end-turn, changelog 2026-08-28) ends the active turn with an `EndOfTurn` whose
  `trigger` is `"manual"` (`"model"` for a native one).

- End of turn (METHOD "STT end of turn"): an `EndOfTurn` with `"trigger": "model"` is Flux's own
  end-of-turn detection ("Automatic ... EndOfTurn carries "trigger": "model""; a ForceEndTurn's
  carries `"manual"`: docs/flux/force-end-turn, changelog 2026-08-28), stamped END_OF_TURN beside its
  FINAL; an EndOfTurn without `trigger` (before the field existed) counts as the model's unless
  ForceEndTurn had been sent. EagerEndOfTurn is a guess Flux may withdraw: not an end of turn.

So `end_audio` sends ForceEndTurn, then CloseStream: the last turn is final at the forced (or the
model's own, if it came first) EndOfTurn, and the turn ends when Flux closes after CloseStream. TTFS
is the arrival of the last EndOfTurn with words: the forced one, a choice recorded here because a
client that waited for the model's own end of turn (eot_timeout_ms, default 5000) would measure
something else.
"""

from __future__ import annotations

import copy
from urllib.parse import urlencode

from voxwatch.foundation.events import END_OF_TURN, FINAL, PARTIAL, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.providers.session.ws_session import ReaderSession

VENDOR = "Deepgram"
DEFAULT_URL = "wss://api.deepgram.com"
PATH = "/v2/listen"
CLOSE_WAIT_S = 2.0
INTERIM = ("StartOfTurn", "Update", "EagerEndOfTurn", "TurnResumed")
ENCODINGS = {"mulaw": "mulaw"}
"""Each wire encoding voxwatch sends (datasets.wire) and Flux's `encoding` for it."""


class DeepgramFluxSTT:
    sample_rate = 16000
    encoding = "linear16"
    wire_encodings = tuple(ENCODINGS)

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    def on_wire(self, wire) -> "DeepgramFluxSTT":
        """A copy that declares the wire format (the phone line's 8 kHz mu-law) in its query."""
        wired = copy.copy(self)
        wired.encoding, wired.sample_rate = ENCODINGS[wire.encoding], wire.sample_rate
        return wired

    async def connect(self, timeline: Timeline) -> "FluxSession":
        key = require_key(self.model.vendor)
        query = urlencode({"model": self.model.vendor_model, "encoding": self.encoding,
                           "sample_rate": self.sample_rate})
        ws = await open_websocket(f"{self.url}{PATH}?{query}", {"Authorization": f"Token {key.reveal()}"}, VENDOR,
                                  clock=timeline.clock)
        return FluxSession(ws, timeline)


class FluxSession(ReaderSession):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline) -> None:
        self.timeline = timeline
        self._closing = False  # CloseStream sent: Flux's close is the end of the results
        self._forced = False  # ForceEndTurn sent: an EndOfTurn with no trigger may be the forced one
        super().__init__(ws)

    async def _read(self) -> None:
        async for data, at in self._messages():
            kind = data["type"]
            if kind == "Error":
                code = str(data.get("code"))
                raise ProviderError(f"{VENDOR} error {code}: {str(data.get('description'))[:300]}",
                                    "server_error" if code == "INTERNAL_SERVER_ERROR" else "error")
            if kind != "TurnInfo":
                continue  # Connected, ConfigureSuccess / ConfigureFailure
            event, text = data["event"], data["transcript"]
            if not isinstance(text, str):
                raise TypeError("a TurnInfo transcript is not a string")
            if event == "EndOfTurn":
                self.timeline.mark(FINAL, at, text=text)
                if data.get("trigger", "manual" if self._forced else "model") == "model":
                    self.timeline.mark(END_OF_TURN, at)
            elif event in INTERIM:
                if text:
                    self.timeline.mark(PARTIAL, at, text=text)
            else:
                raise ValueError(f"unknown TurnInfo event {event[:40]!r}")
        if not self._closing:  # closed while the stream was open: cut short
            raise closed(VENDOR, self.ws.close_code, "before the stream was closed")

    async def send_audio(self, pcm16: bytes) -> None:
        await self._send(pcm16)

    async def end_audio(self) -> None:
        """ForceEndTurn (the last turn's EndOfTurn, forced), then CloseStream (Flux closes when done)."""
        self._forced = True
        await self._send_event({"type": "ForceEndTurn"})
        await self._close_stream()

    async def _close_stream(self) -> None:
        if not self._closing:
            self._closing = True
            await self._send_event({"type": "CloseStream"})

    async def wait_final(self) -> None:
        """Return once Flux has closed after CloseStream (every EndOfTurn is in), raising its failure."""
        await self._wait()

    async def aclose(self) -> None:
        """CloseStream (unless sent), let Flux finish and close (briefly), then close."""
        await self._end_and_close(self._close_stream, CLOSE_WAIT_S)
