"""Mistral Voxtral realtime transcription (`/v1/audio/transcriptions/realtime` WebSocket), as the vendor
documents it.

Sources, read 2026-12-07: docs.mistral.ai/studio/audio/speech-to-text/transcribe-in-realtime ("Session
lifecycle") [D1], .../speech_to_text/realtime_transcription.md [D2], .../specs-and-limits/limits [D3],
.../turn-detection [D4]; the official SDK mistralai/client-python @05629d237bbd (2026-06-30)
`src/mistralai/extra/realtime/transcription.py`, `connection.py` and `docs/models/realtime*.md`,
`transcriptionstream*.md` [SDK]; mistralai/client-python issue #357 [I357]. Protocol references only:
Pipecat src/pipecat/services/mistral/stt.py @acead050 (BSD-2), Coval
runner/src/coval_bench/providers/stt/mistral.py @bf95d1b1 (Apache-2.0).

- `wss://api.mistral.ai/v1/audio/transcriptions/realtime?model=<model>`: "The `model` query parameter
  is required" [D2][SDK]. Auth: `Authorization: Bearer <key>` [SDK].
- The server sends `session.created` first, with the defaults: "Wait for it before you send anything
  else". The client then sends `session.update` and receives `session.updated`; the settings are
  "fixed from the first audio chunk" [D1] (a later change is refused: "Session fields cannot be changed
  after audio has started" [D4]). The update is `{"type": "session.update", "session": {"audio_format":
  {"encoding", "sample_rate"}, "target_streaming_delay_ms"}}` [SDK RealtimeTranscriptionSessionUpdatePayload].
  All of it happens in `connect`, before t0.
- `target_streaming_delay_ms`: "Any integer from 80 to 1200, or 2400", else an `error` event [D3]. It
  sets how far the text lags the audio by design, and the server's default when it is unset is not
  documented, so the adapter always sets it: `STREAMING_DELAY_MS` (480 ms, the delay at which the
  open-weights model card says the realtime model matches offline transcription).
- Audio: `{"type": "input_audio.append", "audio": "<base64>"}`, "Base64-encoded raw PCM bytes matching
  the current audio_format. Max decoded size: 262144 bytes" [SDK]; encoding `pcm_s16le` (one of the
  SDK's `AudioEncoding`), 16 kHz. Each 20 ms harness chunk goes as one append.
- `transcription.text.delta` (`text`) is append-only new text: "Add each piece of text to the end of
  the transcript" [D1]; never revised, no final flag, no word timings. A PARTIAL is marked with the
  text so far. `transcription.language` (`audio_language`) and `transcription.segment` (`text`,
  `start`, `end` in seconds) carry no new text.
- End of audio: `{"type": "input_audio.flush"}` then `{"type": "input_audio.end"}`, as the SDK's
  `transcribe_stream` sends them; the server answers with `transcription.done` (`text`: "the full
  transcript" [D1]), the only final. The model "holds the last 1-2 tokens until it receives
  `input_audio.end`" [I357], so the final can only come after the end of the audio: a cost every
  caller pays, which the TTFS measured here includes. The SDK then closes the socket itself (1000);
  so does the adapter.
- Errors: `{"type": "error", "error": {"message", "code": <int>}}` [SDK], e.g. 3804 "Timeout waiting
  for response from streaming transcription." when `input_audio.end` never comes [I357]. Mistral
  documents no table of these codes and no close codes; a refused upgrade is read as HTTP.
"""

from __future__ import annotations

import base64
from urllib.parse import urlencode


from voxwatch.foundation.events import FINAL, PARTIAL, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import ReaderSession, decode_event, settle, update_session

VENDOR = "Mistral"
DEFAULT_URL = "wss://api.mistral.ai"
PATH = "/v1/audio/transcriptions/realtime"
STREAMING_DELAY_MS = 480


def error_of(data: dict) -> ProviderError:
    """An `error` event: Mistral's code and message (its codes have no documented kinds: an error)."""
    err = data.get("error")
    code, message = (err.get("code"), err.get("message")) if isinstance(err, dict) else (None, err)
    return ProviderError(f"{VENDOR} error{f' {code}' if code is not None else ''}: {str(message)[:300]}", "error")


class MistralRealtimeSTT:
    sample_rate = 16000
    encoding = "pcm_s16le"

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    async def connect(self, timeline: Timeline) -> "VoxtralSession":
        """Open the session, wait for `session.created`, set the audio format and delay, wait for
        `session.updated`: all before t0."""
        key = require_key(self.model.vendor)
        ws = await open_websocket(f"{self.url}{PATH}?{urlencode({'model': self.model.vendor_model})}",
                                  {"Authorization": f"Bearer {key.reveal()}"}, VENDOR, clock=timeline.clock)
        session = {"audio_format": {"encoding": self.encoding, "sample_rate": self.sample_rate},
                   "target_streaming_delay_ms": STREAMING_DELAY_MS}
        await settle(ws, update_session(ws, session, VENDOR, error_of))
        return VoxtralSession(ws, timeline)


class VoxtralSession(ReaderSession):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline) -> None:
        self.timeline = timeline
        self._text = ""
        self._closing = False
        self._final = False
        super().__init__(ws)

    async def _read(self) -> None:
        async for message, at in received(self.ws):
            data = decode_event(message)
            kind = data["type"]
            if kind == "transcription.text.delta":
                text = data["text"]
                if not isinstance(text, str):
                    raise TypeError("text is not a string")
                self._text += text  # append-only: each delta is new text
                self.timeline.mark(PARTIAL, at, text=self._text.strip())
            elif kind == "transcription.done":
                text = data["text"]
                if not isinstance(text, str):
                    raise TypeError("text is not a string")
                self._final = True
                self.timeline.mark(FINAL, at, text=text.strip())
                return
            elif kind == "error":
                raise error_of(data)
            # session.updated, transcription.language, transcription.segment: no new text
        if not self._closing:  # a clean close before transcription.done
            self._error = closed(VENDOR, self.ws.close_code or 1005, "before the final transcript")

    async def send_audio(self, pcm16: bytes) -> None:
        await self._send_event({"type": "input_audio.append", "audio": base64.b64encode(pcm16).decode()})

    async def end_audio(self) -> None:
        """Flush, then end the audio: the server releases the last tokens and sends transcription.done."""
        await self._send_event({"type": "input_audio.flush"})
        await self._send_event({"type": "input_audio.end"})

    async def wait_final(self) -> None:
        await self._wait()

    async def aclose(self) -> None:
        self._closing = True
        await super().aclose()
