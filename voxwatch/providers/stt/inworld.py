"""Inworld speech to text over its bidirectional WebSocket, as the vendor documents it (its text to
speech is tts/inworld.py).

Protocol facts followed (Inworld's API reference "Transcribe audio (WebSocket)",
docs.inworld.ai/api-reference/sttAPI/speechtotext/transcribe-stream-websocket, and its snake_case
mirror on dev.docs.inworld.ai; the STT overview and turn detection pages, docs.inworld.ai/stt/overview,
dev.docs.inworld.ai/stt/turn-detection; the official examples inworld-ai/inworld-api-examples
stt/python/example_stt_websocket.py and example_stt_with_vad_config.py @ aef8eccd; read 2026-12-07):
- `wss://api.inworld.ai/stt/v1/transcribe:streamBidirectional`, JSON text frames both ways; auth
  `Authorization: Basic <key>` on the upgrade, the portal's key sent as it is (it is already Base64).
- The first message must be `{"transcribeConfig": {...}}`: `modelId` ("<provider>/<model>",
  `inworld/inworld-stt-1` for Inworld's own), `audioEncoding` LINEAR16, `sampleRateHertz`,
  `numberOfChannels`, `language` (BCP-47), and the turn detection settings
  `endOfTurnConfidenceThreshold` and `inworldSttV1Config.vadThreshold`, both 0.5 by default (D2):
  they decide when a turn's final comes, so both are pinned at the documented defaults and a change
  of default cannot move the series unseen.
- Audio goes as `{"audioChunk": {"content": <base64 LINEAR16>}}`; the official example sends 16 kHz
  mono. Coval's runner (coval-ai/benchmarks runner/src/coval_bench/providers/stt/inworld.py @ bf95d1b)
  saw chunks outside 20-1000 ms refused ("invalid audio chunk duration"; not in Inworld's pages): the
  harness's 20 ms chunks go as they are, shorter ones are held until 20 ms are buffered, and the
  remainder at the end is padded with silence to 20 ms.
- `{"endTurn": {}}` ends the turn now (a final for the audio so far); `{"closeStream": {}}` says no
  more audio will come ("required for HTTP/WebSocket clients since there is no equivalent to gRPC
  stream close"). The client closes the socket: the server was not seen to close after closeStream.
- Results come as `{"result": {"transcription": {"transcript", "isFinal", "wordTimestamps"}}}`. An
  interim holds the whole turn so far (the official client replaces its last partial, never joins
  them); a final closes one turn, and the turns' finals joined are the transcript. Voice activity
  comes as `result.speechStarted` / `result.speechStopped`, which carry no text.
- Failures: Inworld documents no error message or close code for this endpoint. Its TTS WebSocket
  reports them as a non-zero gRPC `status.code` in `result` (docs.inworld.ai
  .../synthesize-speech-websocket), and the reference clients read a top-level `error`; both are read
  here, through the one gRPC reading (session/grpc_status.py). A refused key is an HTTP status on
  the upgrade.

The turn ends at the first final after endTurn, or at once when every turn already has its final
(Inworld's turn detection closed the last one before the audio ended). TTFS is the arrival of the
last final with words.
"""

from __future__ import annotations

import asyncio
import base64
import json

import websockets

from voxwatch.foundation.events import FINAL, PARTIAL, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.providers.session.grpc_status import UNKNOWN, status_failure
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import ReaderSession

VENDOR = "Inworld"
DEFAULT_URL = "wss://api.inworld.ai"
PATH = "/stt/v1/transcribe:streamBidirectional"
PROVIDER = "inworld"  # modelId is "<provider>/<model>"; Inworld's own models are "inworld/..."
END_OF_TURN_CONFIDENCE = 0.5  # the documented defaults (D2), pinned
VAD_THRESHOLD = 0.5
MIN_CHUNK_MS = 20


def failure_of(data: dict) -> ProviderError | None:
    """The failure a message reports: a top-level `error`, or a non-zero `result.status` (gRPC codes)."""
    return (status_failure(VENDOR, data.get("error"), UNKNOWN)
            or status_failure(VENDOR, (data.get("result") or {}).get("status")))


class InworldSTT:
    sample_rate = 16000
    language = "en-US"  # other languages are not confirmed for inworld-stt-1: English only (base.in_language)

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    async def connect(self, timeline: Timeline) -> "InworldSTTSession":
        """Open the socket and send transcribeConfig, before t0."""
        key = require_key(self.model.vendor)
        ws = await open_websocket(f"{self.url}{PATH}", {"Authorization": f"Basic {key.reveal()}"}, VENDOR,
                                  clock=timeline.clock)
        try:
            await ws.send(json.dumps({"transcribeConfig": {
                "modelId": f"{PROVIDER}/{self.model.vendor_model}", "audioEncoding": "LINEAR16",
                "sampleRateHertz": self.sample_rate, "numberOfChannels": 1, "language": self.language,
                "endOfTurnConfidenceThreshold": END_OF_TURN_CONFIDENCE,
                "inworldSttV1Config": {"vadThreshold": VAD_THRESHOLD}}}))
        except websockets.ConnectionClosed as exc:
            raise closed(VENDOR, exc, "before the session began") from None
        return InworldSTTSession(ws, timeline, self.sample_rate * MIN_CHUNK_MS // 1000 * 2)


class InworldSTTSession(ReaderSession):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline, min_bytes: int) -> None:
        self.timeline, self.min_bytes = timeline, min_bytes
        self._buffer = bytearray()
        self._open_turn = False  # an interim with words and no final since
        self._finals = 0
        self._ended = False  # endTurn sent
        self._final_after_end = asyncio.Event()
        super().__init__(ws)

    async def _read(self) -> None:
        async for message, at in received(self.ws):
            data = json.loads(message)
            failure = failure_of(data)
            if failure is not None:
                raise failure
            transcription = (data.get("result") or {}).get("transcription")
            if transcription is None:
                continue  # speechStarted, speechStopped, usage: no transcript
            text, is_final = transcription.get("transcript", ""), transcription.get("isFinal", False)
            if not isinstance(text, str) or not isinstance(is_final, bool):
                raise TypeError("transcription fields of the wrong type")
            if is_final:
                self._finals += 1
                self._open_turn = False
                self.timeline.mark(FINAL, at, text=text)
                if self._ended:
                    self._final_after_end.set()
            elif text:
                self._open_turn = True
                self.timeline.mark(PARTIAL, at, text=text)
        if not self._final_after_end.is_set():  # closed normally with a turn still owed: cut short
            raise closed(VENDOR, self.ws.close_code)

    async def _send_audio(self, pcm16: bytes) -> None:
        await self._send(json.dumps({"audioChunk": {"content": base64.b64encode(pcm16).decode()}}))

    async def send_audio(self, pcm16: bytes) -> None:
        """Send once 20 ms are held (the harness's chunks: at once)."""
        self._buffer += pcm16
        if len(self._buffer) >= self.min_bytes:
            chunk, self._buffer = bytes(self._buffer), bytearray()
            await self._send_audio(chunk)

    async def end_audio(self) -> None:
        """What is held, padded with silence to 20 ms; then endTurn: the open turn's final, now."""
        if self._buffer:
            chunk, self._buffer = bytes(self._buffer), bytearray()
            await self._send_audio(chunk + bytes(max(0, self.min_bytes - len(chunk))))
        self._ended = True
        await self._send(json.dumps({"endTurn": {}}))

    async def wait_final(self) -> None:
        """Return once the turn open at endTurn has its final; at once when every turn already had one."""
        if self._finals and not self._open_turn:
            return
        await self._wait_for(self._final_after_end)

    async def aclose(self) -> None:
        """closeStream (no more audio), then close: the session's end is the client's."""
        try:
            await self.ws.send(json.dumps({"closeStream": {}}))
        except websockets.ConnectionClosed:
            pass
        await self._close_socket()
        self._reader.cancel()
