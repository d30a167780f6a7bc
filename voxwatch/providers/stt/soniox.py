"""Soniox real-time speech-to-text (the `transcribe-websocket` WebSocket API), as the vendor documents it.

Protocol facts followed (read 2026-12-07 from stored copies of the vendor's pages and SDKs):
- `wss://stt-rt.soniox.com/transcribe-websocket`: one socket carries JSON text frames and binary
  audio frames (soniox.com/docs/api-reference/stt/websocket-api).
- Auth is the key on the upgrade request, `Authorization: Bearer <key>` (soniox.com/docs/guides/
  websocket-authentication; soniox.com/docs/guides/migrate-websocket-authentication: the older
  `api_key` field of the start message is deprecated, and from 15 January 2027 a connection that
  sends its key only there is refused). The key is therefore never put in the start message.
- The first message is the JSON config: `model`, `audio_format`, and for raw audio `sample_rate`
  and `num_channels` (the fields of soniox/soniox-js packages/core/src/realtime/stt.ts
  `buildConfigMessage` @ 8661b750, 2026-08). Raw encodings include `pcm_s16le` and `mulaw`
  (soniox.com/docs/speech-to-text-legacy/how-to/configure-requests/configure-audio-format). The
  server sends nothing back to the config; the next message is a result or an error.
- Audio goes as binary frames, at real-time pace ("prolonged bursts or lags may result in
  disconnection", soniox.com/docs/stt/rt/error-handling). No chunk size is documented; the
  harness's 20 ms chunks are sent as they come.
- Every result is `{"tokens": [...], "final_audio_proc_ms", "total_audio_proc_ms"}` (plus
  `"finished": true` on the last). Tokens are sub-word pieces that carry their own leading spaces
  (concatenated, never joined with spaces), each with `text`, `is_final`, `start_ms`, `end_ms`,
  `confidence`. Final tokens come first and once; non-final tokens are re-sent whole in each
  message until they settle, so the text a caller shows is all finals so far plus the latest
  message's non-finals (soniox.com/docs/stt/real-time-API/real-time-transcription).
- `{"type": "finalize"}` finalizes everything sent so far: the server returns the remaining tokens
  as final, then the marker token `<fin>` (soniox.com/docs/stt/real-time-API/manual-finalization).
  That is the forced final, sent at the end of the caller's audio. `<end>` is the endpoint-detection
  marker (soniox.com/docs/stt/rt/endpoint-detection: with `enable_endpoint_detection`, "a special
  <end> token is returned", always final, once at the end of the segment); endpoint detection is
  not requested, so none is expected, but one that comes is stamped END_OF_TURN (METHOD "STT end of
  turn"; the registry says these models emit none). Markers are not words: they never reach a transcript.
- End of audio is an empty *text* frame `""` (soniox-js `finish()`; soniox/soniox-python
  tests/realtime/cases.py @ 10edf2da: "The final `""` is the FINISH control message"); the server
  sends what remains, a last message with `"finished": true`, and closes.
- Errors are `{"error_code": <int>, "error_message": ...}`, after which the server closes at once
  (soniox.com/docs/stt/rt/error-handling). The codes are HTTP's (the JS SDK's `errors.ts`
  `mapErrorResponse`: 400, 401, 402, 408, 429, 500, 503), so they are read as an HTTP status is
  (endpoints.http_status); a 503 "Cannot continue request" is the documented early termination.
  Soniox documents no WebSocket close codes of its own.

Timeline: a word is final when its last token is. A final token that may not end its word (no token
after it yet) is held until a token that starts a new word, `<fin>`, `<end>` or `finished` shows
that it did, and is then marked FINAL at the arrival of its own last token (when the transcript had
it): so the FINAL events' texts, joined, are the transcript, and each is timed when it was final.
"""

from __future__ import annotations

import asyncio
import copy
import json

import websockets

from voxwatch.foundation.events import END_OF_TURN, FINAL, PARTIAL, Stamp, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, http_status, is_loopback, open_websocket, require_key
from voxwatch.providers.session.ws_session import ReaderSession

VENDOR = "Soniox"
DEFAULT_URL = "wss://stt-rt.soniox.com"
PATH = "/transcribe-websocket"
MARKERS = ("<fin>", "<end>")  # finalize's and endpoint detection's marker tokens
CLOSE_WAIT_S = 2.0
ENCODINGS = {"mulaw": "mulaw"}
"""Each wire encoding voxwatch sends (datasets.wire) and Soniox's `audio_format` for it."""


def error_from(data: dict) -> ProviderError:
    """Soniox's error message, by kind: its error_code is an HTTP status."""
    code = data["error_code"]
    if not isinstance(code, int):
        raise TypeError("error_code is not an integer")
    return ProviderError(f"{VENDOR} error {code}: {str(data.get('error_message'))[:300]}", http_status(code))


class SonioxSTT:
    sample_rate = 16000
    partial_scope = "transcript"  # a PARTIAL holds every final token so far and the pending ones (metrics.deadline_wer)
    audio_format = "pcm_s16le"
    wire_encodings = tuple(ENCODINGS)

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    def on_wire(self, wire) -> "SonioxSTT":
        """A copy that declares the wire format (the phone line's 8 kHz mu-law) in its config."""
        wired = copy.copy(self)
        wired.audio_format, wired.sample_rate = ENCODINGS[wire.encoding], wire.sample_rate
        return wired

    async def connect(self, timeline: Timeline) -> "SonioxSession":
        """Open the socket and send the config; Soniox acknowledges neither, so set-up ends here."""
        key = require_key(self.model.vendor)
        ws = await open_websocket(f"{self.url}{PATH}", {"Authorization": f"Bearer {key.reveal()}"}, VENDOR,
                                  clock=timeline.clock)
        try:
            await ws.send(json.dumps({"model": self.model.vendor_model, "audio_format": self.audio_format,
                                      "sample_rate": self.sample_rate, "num_channels": 1}))
        except websockets.ConnectionClosed as exc:
            raise closed(VENDOR, exc, "before the config was sent") from None
        return SonioxSession(ws, timeline)


class SonioxSession(ReaderSession):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline) -> None:
        self.timeline = timeline
        self._final = ""  # every final token so far, as one text
        self._held = ""  # final text whose word has not ended yet
        self._held_at: Stamp | int = 0  # the arrival of the held text's last token
        self._fin = asyncio.Event()  # <fin> (or the stream's last message) has come
        super().__init__(ws)

    async def _read(self) -> None:
        async for data, at in self._messages():
            if "error_code" in data:
                raise error_from(data)
            self._result(data, at)
            if data.get("finished") is True:
                self._fin.set()
                return
        if not self._fin.is_set():  # closed cleanly with the transcript unfinished: the session ended early
            raise closed(VENDOR, self.ws.close_code, "before the transcript was final")

    def _result(self, data: dict, at: int) -> None:
        final, pending, marker = "", "", False
        for token in data["tokens"]:
            text, is_final = token["text"], token["is_final"]
            if not isinstance(text, str) or not isinstance(is_final, bool):
                raise TypeError("a token's text or is_final is of the wrong type")
            if text in MARKERS:
                marker = True
                if text == "<end>":  # endpoint detection's end of an utterance (METHOD "STT end of turn")
                    self.timeline.mark(END_OF_TURN, at)
            elif is_final:
                final += text
            else:
                pending += text
        self._final += final
        ends = marker or data.get("finished") is True  # nothing more will be final: the last word has ended
        if self._held and (ends or (final + pending)[:1].isspace()):
            # the held word ended with the token that came before this message: it was final then
            self.timeline.mark(FINAL, self._held_at, text=self._held)
            self._held = ""
        words = self._held + final
        if ends or pending[:1].isspace():
            done, self._held = words, ""
        else:  # a word is final once the token after it starts a new one
            cut = max(words.rfind(" "), words.rfind("\n"))
            done, self._held = words[:cut + 1], words[cut + 1:]
            if final:
                self._held_at = at
        if done.strip():
            self.timeline.mark(FINAL, at, text=done.strip())
        if pending.strip() or (final.strip() and not done.strip()):  # new text, none of it a whole final word
            self.timeline.mark(PARTIAL, at, text=(self._final + pending).strip())
        if marker:
            self._fin.set()

    async def send_audio(self, pcm16: bytes) -> None:
        await self._send(pcm16)

    async def end_audio(self) -> None:
        """Finalize: everything sent so far comes back final, then `<fin>`."""
        await self._send(json.dumps({"type": "finalize"}))

    async def wait_final(self) -> None:
        """Return once `<fin>` (or the stream's last message) has come, or the stream closed."""
        await self._wait_for(self._fin)

    async def _end_of_audio(self) -> None:
        await self.ws.send("")  # the empty text frame

    async def aclose(self) -> None:
        """End the audio (the empty text frame), let the server finish and close (briefly), then close."""
        await self._end_and_close(self._end_of_audio, CLOSE_WAIT_S)
