"""xAI speech to text, streaming (the `/v1/stt` WebSocket), as xAI documents it.

Protocol facts followed (xAI REST API reference, "Speech to text - Streaming",
https://docs.x.ai/developers/rest-api-reference/inference/speech-to-text, two revisions read
2026-12-07; https://docs.x.ai/developers/models/speech-to-text for the rate limits):
- `wss://api.x.ai/v1/stt`, key in `Authorization: Bearer <key>` on the upgrade. Everything is set in
  the upgrade's query; there is no configuration message and no `model` parameter. Here:
  `sample_rate=16000&encoding=pcm` (signed 16-bit little-endian; the rates 8000 to 48000 and
  `mulaw`/`alaw` are also taken), `interim_results=true` (its default is false: without it the first
  text would be the first final, and there would be no first partial to time) and `endpointing=10`,
  the documented default, pinned so that a change of default does not change the measurement
  silently (the silence, in ms, after which a `speech_final=true` event fires).
- The server opens with `transcript.created` once the session is ready: `connect` waits for it
  (before t0). Audio goes as raw binary frames, no base64.
- `transcript.partial` {text, words[{text, start, end}], is_final, speech_final, start, duration}
  (times in seconds) has three states: `is_final=false` interim text that may change (a PARTIAL);
  `is_final=true, speech_final=false` a chunk of continuous speech locked at about 3 s; and
  `is_final=true, speech_final=true` the end of an utterance. Both final states are FINAL segments:
  the hypothesis is their text joined, TTFS the last worded one's arrival.
- The client ends the audio with `{"type": "audio.done"}`; the server answers `transcript.done`
  {text, words, duration} with "any remaining transcript not already covered by speech_final
  events" (empty when they covered it all). Its text is marked as a FINAL too, less any prefix that
  repeats text already finalized (chunk finals of the open utterance, or, as Coval's runner saw, the
  whole utterance again: `runner/src/coval_bench/providers/stt/xai.py` @ bf95d1b, a reference), so
  text is never counted twice. `transcript.done` ends the turn; the older revision has the server
  close the connection after it, the newer keeps it open for another turn: either way this session
  carries one turn.
- Errors come as `{"type": "error", "message": ...}`. xAI documents no close codes of its own (the
  RFC reading applies) and no 429 body or Retry-After for the upgrade (a refused upgrade is read by
  its HTTP status). Limits (models page): 100 concurrent streaming sessions per team, 600 RPM.

Every server event is marked at its arrival stamp (`stamped.received`).
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

from voxwatch.foundation.events import FINAL, PARTIAL, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import ReaderSession, decode_event, settle, until_ready

VENDOR = "xAI"
DEFAULT_URL = "wss://api.x.ai"
PATH = "/v1/stt"
SAMPLE_RATE = 16000
ENDPOINTING_MS = 10  # xAI's documented default, pinned


def _error_text(data: dict) -> str:
    return f"{VENDOR} error: {str(data.get('message') or data.get('error'))[:300]}"


def _tail(done: str, finals: list[str], open_chunks: list[str]) -> str:
    """What `transcript.done`'s text adds to the finals already marked: the text less a prefix that
    repeats the open utterance's chunk finals, or every final so far."""
    text = done.strip()
    for covered in (" ".join(finals).strip(), " ".join(open_chunks).strip()):
        if covered and text.startswith(covered):
            return text[len(covered):].strip()
    return text


def _created(data: dict) -> bool | None:
    """`transcript.created` (before t0); an `error` instead refuses the session."""
    if data["type"] == "error":
        raise ProviderError(f"{VENDOR} refused the session: {_error_text(data)}")
    return True if data["type"] == "transcript.created" else None


class XAISTT:
    sample_rate = SAMPLE_RATE

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    async def connect(self, timeline: Timeline) -> "XAISTTSession":
        key = require_key(self.model.vendor)
        query = urlencode({"sample_rate": SAMPLE_RATE, "encoding": "pcm", "interim_results": "true",
                           "endpointing": ENDPOINTING_MS})
        ws = await open_websocket(f"{self.url}{PATH}?{query}", {"Authorization": f"Bearer {key.reveal()}"},
                                  VENDOR, clock=timeline.clock)
        await settle(ws, until_ready(ws, VENDOR, _created, decode=decode_event))
        return XAISTTSession(ws, timeline)


class XAISTTSession(ReaderSession):
    """One turn: binary audio in, `transcript.partial` events out, `audio.done` answered by
    `transcript.done`, which ends the reader."""

    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline) -> None:
        self.timeline = timeline
        self._finals: list[str] = []  # every final's text, in order
        self._open: list[str] = []  # the chunk finals of the utterance still open (no speech_final yet)
        super().__init__(ws)

    async def _read(self) -> None:
        async for message, at in received(self.ws):
            data = decode_event(message)
            kind = data["type"]
            if kind == "transcript.partial":
                text = data["text"]
                if not isinstance(text, str):
                    raise TypeError("transcript text is not a string")
                if not data["is_final"]:
                    self.timeline.mark(PARTIAL, at, text=text)
                    continue
                self.timeline.mark(FINAL, at, text=text)
                self._finals.append(text)
                self._open = [] if data.get("speech_final") else [*self._open, text]
            elif kind == "transcript.done":
                self.timeline.mark(FINAL, at, text=_tail(str(data.get("text") or ""), self._finals, self._open))
                return
            elif kind == "error":
                raise ProviderError(_error_text(data))
        raise closed(VENDOR, self.ws.close_code, "before transcript.done")

    async def send_audio(self, pcm16: bytes) -> None:
        await self.ws.send(pcm16)

    async def end_audio(self) -> None:
        """The audio is over: `audio.done` asks for what is left, in `transcript.done`."""
        await self.ws.send(json.dumps({"type": "audio.done"}))

    async def wait_final(self) -> None:
        await self._wait()
