"""Google Gemini Live API (speech-to-speech over the `BidiGenerateContent` WebSocket), as Google documents it.

Protocol facts followed (ai.google.dev/api/live; googleapis/python-genai google/genai/live.py):
- Endpoint `wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent`;
  the key goes in the `x-goog-api-key` header (as the Python SDK sends it), never in the URL.
- The first client message is `setup` {model: "models/<id>", generationConfig.responseModalities
  ["AUDIO"], realtimeInputConfig.automaticActivityDetection.disabled: true}; the server answers
  `setupComplete` before anything else is sent.
- With automatic activity detection disabled the client marks the turn itself: `realtimeInput`
  {activityStart: {}}, then `realtimeInput.audio` blobs {mimeType: "audio/pcm;rate=16000", data:
  base64 little-endian int16 PCM}, then {activityEnd: {}} (`audioStreamEnd` is only for automatic
  detection).
- The server streams `serverContent.modelTurn.parts[].inlineData` {mimeType: "audio/pcm;rate=24000",
  data: base64 PCM}, then `generationComplete`, then `turnComplete`; `interrupted` means the
  generation was cut off; `goAway.timeLeft` warns of a coming disconnect. Server frames may be
  binary (the SDK reads them with `recv(decode=False)`); both are JSON.
- Failures after the upgrade come as close frames whose reason names them (1007 invalid argument or
  key, 1008 policy, 1011 internal error or RESOURCE_EXHAUSTED quota).
"""

from __future__ import annotations

import asyncio
import base64
import json
import re

import websockets

from voxwatch.providers.base import ProviderError, takes_language
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.foundation.events import AUDIO, REQUEST_SENT, Timeline
from voxwatch.providers.keys import Secret
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.ws_session import ReaderSession, settle
from voxwatch.providers.session.stamped import received

DEFAULT_URL = "wss://generativelanguage.googleapis.com"
PATH = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
INPUT_RATE = 16000
OUTPUT_RATE = 24000  # the documented output rate; each blob's mimeType is read in case it says otherwise
INPUT_MIME = f"audio/pcm;rate={INPUT_RATE}"


def _closed_error(exc: websockets.ConnectionClosed, key: Secret, note: str = "",
                  during: str = "before the model's turn was complete") -> ProviderError:
    """A session the server ended, by kind: the close reason names auth and quota failures (Google
    sends them under 1007, 1008 and 1011: see the module docstring); otherwise the code's kind
    (close_codes)."""
    error = closed("Gemini", exc, during, note=note, secrets=[key])
    text = (exc.rcvd.reason if exc.rcvd is not None else "").lower()
    if "api key" in text or "permission" in text or "unauthenticated" in text:
        return ProviderError(str(error), "auth_error")
    if "quota" in text or "resource_exhausted" in text or "rate limit" in text:
        return ProviderError(str(error), "rate_limited")
    return error


def _decode(message: str | bytes) -> dict:
    data = json.loads(message)
    if not isinstance(data, dict):
        raise TypeError("a server message is a JSON object")
    return data


async def _set_up(ws, setup: dict, key: Secret, open_turn: bool = True) -> None:
    """Send `setup`, wait for `setupComplete`, then open the caller's turn (unless `open_turn` is
    False: a conversation opens each turn itself)."""
    try:
        await ws.send(json.dumps(setup))
        while True:
            message = await ws.recv()
            ws.arrivals.popleft()  # keep the arrival stamps in step with the messages
            data = _decode(message)
            if "setupComplete" in data:
                break
            if "error" in data:
                raise ProviderError(f"Gemini error during setup: {str(data['error'])[:300]}")
        if open_turn:
            await ws.send(json.dumps({"realtimeInput": {"activityStart": {}}}))
    except websockets.ConnectionClosed as exc:
        raise _closed_error(exc, key, during="during set-up") from None
    except (json.JSONDecodeError, UnicodeDecodeError, TypeError) as exc:
        raise ProviderError(f"malformed setup reply from Gemini ({type(exc).__name__})", "malformed") from None


def live_setup(model: ModelInfo) -> dict:
    """The `setup` fields every Live session here starts with: the model, audio replies, manual turns."""
    return {"model": f"models/{model.vendor_model}",
            "generationConfig": {"responseModalities": ["AUDIO"]},
            "realtimeInputConfig": {"automaticActivityDetection": {"disabled": True}}}


def mark_audio(timeline: Timeline, content: dict, at: int, offset: int) -> int:
    """Mark the audio parts of one `serverContent.modelTurn` as AUDIO from sample `offset` of the
    reply (at each blob's own rate); the offset after them."""
    for part in (content.get("modelTurn") or {}).get("parts", []):
        blob = part.get("inlineData")
        if blob is None or not str(blob.get("mimeType", "")).startswith("audio/pcm"):
            continue
        pcm = base64.b64decode(blob["data"], validate=True)
        rate = re.search(r"rate=(\d+)", blob["mimeType"])
        n = len(pcm) // 2
        timeline.mark(AUDIO, at, sample_offset=offset, n_samples=n,
                      sample_rate=int(rate.group(1)) if rate else OUTPUT_RATE, audio=pcm)
        offset += n
    return offset


LIVE_LANGUAGES = frozenset("ar bn nl en fr de hi id it ja ko mr pl pt ro ru es ta te th tr uk vi".split())
"""The Live API's 24 languages (docs.cloud.google.com/vertex-ai/generative-ai/docs/live-api/
configure-language-voice: BCP 47 codes, en in two locales). Native-audio models take no language
in the setup (`speechConfig.languageCode` is for the others): they speak the caller's."""


class GeminiLiveS2S:
    sample_rate = INPUT_RATE

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    def in_language(self, language: str) -> "GeminiLiveS2S | None":
        """The adapter itself (nothing to declare) for a Live API language, None for another."""
        return takes_language(self, language, LIVE_LANGUAGES)

    async def _open(self, timeline: Timeline, setup: dict, open_turn: bool) -> tuple[object, Secret]:
        """A socket with the session set up (before t0), and the key it was opened with."""
        key = require_key(self.model.vendor)
        ws = await open_websocket(self.url + PATH, {"x-goog-api-key": key.reveal()}, "Gemini", clock=timeline.clock)
        await settle(ws, _set_up(ws, {"setup": setup}, key, open_turn))
        return ws, key

    async def connect(self, timeline: Timeline) -> "GeminiLiveSession":
        """Open the socket, set the session up and open the caller's turn (all before t0)."""
        ws, key = await self._open(timeline, live_setup(self.model), open_turn=True)
        return GeminiLiveSession(ws, timeline, key)

    async def converse(self, timeline: Timeline, setup, history=()):
        """A multi-turn voice-agent session (voxwatch/providers/conversation.py), with `history` replayed:
        gemini_agent.py."""
        from voxwatch.providers.s2s.gemini_agent import GeminiAgentSession, agent_setup

        ws, key = await self._open(timeline, agent_setup(self.model, setup, bool(history)), open_turn=False)
        return await GeminiAgentSession(ws, timeline, key, self.model.session_limit_s).opened(history)


class LiveSession(ReaderSession):
    """What every Live session shares: one reader of the server's JSON messages (each handled by
    `_on`, True ending the reader), a goAway noted, an `error` message or the session's end named
    by kind (`_ended`), and sends that fail with the reader's reason once the server has closed."""

    vendor = "Gemini"

    def __init__(self, ws, timeline: Timeline, key: Secret) -> None:
        self.timeline, self.key = timeline, key
        self._go_away: str | None = None
        super().__init__(ws)

    def _on(self, data: dict, at: int) -> bool:
        """Handle one server message that arrived at `at` (ns, timeline clock); True ends the reader."""
        raise NotImplementedError

    def _ended(self, exc: websockets.ConnectionClosed | None) -> ProviderError:
        """The session the server ended (`exc` None: it closed cleanly before the turn was complete)."""
        note = f" after goAway (timeLeft {self._go_away})" if self._go_away is not None else ""
        if exc is None:
            reason = f": {self.ws.close_reason}" if self.ws.close_reason else ""
            return closed("Gemini", self.ws.close_code, "before the turn was complete", note=note + reason)
        return _closed_error(exc, self.key, note)

    def _dropped(self, exc: websockets.ConnectionClosed) -> ProviderError:
        """A close mid-session is read by its reason and any goAway before it (`_ended`)."""
        return self._ended(exc)

    async def _read(self) -> None:
        async for message, at in received(self.ws):
            data = _decode(message)
            if "goAway" in data:
                self._go_away = str((data["goAway"] or {}).get("timeLeft"))
            if "error" in data:
                self._error = ProviderError(f"Gemini error: {str(data['error'])[:300]}")
                break
            if self._on(data, at):
                break
        else:
            self._error = self._ended(None)

    async def _send(self, payload: dict) -> None:
        try:
            await self.ws.send(json.dumps(payload))
        except websockets.ConnectionClosed as exc:
            try:
                await asyncio.wait_for(self._done.wait(), self.close_wait_s)  # the reader sees the close too
            except asyncio.TimeoutError:
                pass
            raise self._error or _closed_error(exc, self.key) from None

    async def _realtime(self, field: str, value: object) -> None:
        """One `realtimeInput` message: `activityStart`, `audio` or `activityEnd`."""
        await self._send({"realtimeInput": {field: value}})

    async def send_audio(self, pcm16: bytes) -> None:
        await self._realtime("audio", {"mimeType": INPUT_MIME, "data": base64.b64encode(pcm16).decode()})

    async def end_audio(self) -> None:
        """Close the caller's turn (manual activity detection): the model answers from here."""
        await self._realtime("activityEnd", {})
        self.timeline.mark(REQUEST_SENT)


class GeminiLiveSession(LiveSession):
    """One caller turn (the single-turn S2S board): the reply's audio until `turnComplete`."""

    def __init__(self, ws, timeline: Timeline, key: Secret) -> None:
        self._offset = 0
        super().__init__(ws, timeline, key)

    def _on(self, data: dict, at: int) -> bool:
        content = data.get("serverContent")
        if content is None:
            return False  # setup, usage, transcription and resumption updates carry no audio
        self._offset = mark_audio(self.timeline, content, at, self._offset)
        if content.get("interrupted"):
            self._error = ProviderError("Gemini interrupted the model's turn")
            return True
        return bool(content.get("turnComplete"))

    async def wait_response(self) -> None:
        await self._wait()
