"""ElevenLabs text to speech over the stream-input WebSocket and the HTTP streaming endpoint, as the
vendor documents them (its Scribe speech to text is stt/elevenlabs.py). Auth: `xi-api-key`.

TTS WebSocket, `GET /v1/text-to-speech/{voice_id}/stream-input?model_id=..&output_format=pcm_24000`:
the first message is `{"text": " "}` (it may also carry voice_settings / generation_config); text
goes up as `{"text": "... ", "flush": true}` (text ends with a space; flush generates at once,
whatever the chunk_length_schedule), and `{"text": ""}` ends the input. The server answers with
`{"audio": <base64 of the output format>, "normalizedAlignment", "alignment"}` messages, then
`{"isFinal": true}`, and closes the connection; an error is `{"message", "error", "code"}`
followed by a close (1008 policy violation). While the input is open the server closes the socket
after `inactivity_timeout` seconds without a text message (query parameter, default 20, at most
180: the AsyncAPI spec of the endpoint; help.elevenlabs.io "How can I keep the WebSocket open?";
elevenlabs.io/blog/websocket-improvements-reliability-and-custom-timeout), with the error
`input_timeout_exceeded` ("Have not received a new text input within the timeout of 20 seconds.
Streaming input terminated. ...") and close 1008 (livekit/agents#218, elevenlabs/elevenlabs-docs#426).
The opener is the session's set-up, so it stays where it is sent now, at connect time, outside
every clock (METHOD: connection set-up is excluded, and timed as `connect_ms`); sent with the text,
the session's initialisation would land inside TTFB. The connection asks for the longest
documented timeout, so a synthesis the harness starts up to 180 s after connecting finds it open;
later than that, the row fails with the vendor's close and its reason.

TTS HTTP, `POST /v1/text-to-speech/{voice_id}/stream?output_format=pcm_24000` with JSON
`{"text", "model_id"}`: the body is the audio in the output format (pcm_24000: little-endian int16
at 24 kHz, no header), sent chunked as it is generated, gzip-encoded when the request allows it
(elevenlabs/elevenlabs-python#369): read content-decoded (`stamped_http.received`).
"""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, urlencode

import httpx
import websockets

from voxwatch.providers.session import stamped_http
from voxwatch.providers.base import ProviderError, language_copy
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import WarmClient, WarmClients, base_url, http_failure, is_loopback, open_websocket, require_key
from voxwatch.foundation.events import AUDIO, CLOSED, REQUEST_SENT, Timeline
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import Reader

VENDOR = "ElevenLabs"
DEFAULT_URL = "https://api.elevenlabs.io"  # wss:// for the WebSocket endpoints (endpoints.ws_url)
DEFAULT_VOICE = "JBFqnCBsd6RMkjVDRZzb"  # "George", the voice of the vendor's quickstarts
TTS_SAMPLE_RATE = 24000
OUTPUT_FORMAT = f"pcm_{TTS_SAMPLE_RATE}"
INACTIVITY_TIMEOUT_S = 180  # stream-input: the documented maximum (the default is 20)


def _tts_error(data: dict) -> ProviderError:
    """A stream-input error message `{"message", "error", "code"}`, by kind."""
    kind = str(data.get("error") or "")
    status = ("auth_error" if "api_key" in kind or "auth" in kind or "unauthorized" in kind else
              "rate_limited" if "quota" in kind or "rate" in kind or "concurrent" in kind else "error")
    return ProviderError(f"{VENDOR} error {kind or 'unknown'}: {str(data.get('message') or '')[:300]}", status)


class _Samples:
    """Whole int16 samples out of a byte stream whose chunks may split a sample."""

    def __init__(self) -> None:
        self.left = b""

    def feed(self, data: bytes) -> bytes:
        data = self.left + data
        cut = len(data) - len(data) % 2
        self.left = data[cut:]
        return data[:cut]


def _mark_audio(timeline: Timeline, pcm: bytes, offset: int, at: int | None = None) -> int:
    """One AUDIO event for a chunk of whole samples; returns the next sample offset."""
    n = len(pcm) // 2
    if n:
        timeline.mark(AUDIO, at, sample_offset=offset, n_samples=n, sample_rate=TTS_SAMPLE_RATE, audio=pcm)
    return offset + n


TTS_LANGUAGES = {"eleven_flash_v2_5": frozenset(
    "en ja zh de hi fr ko pt it es id nl tr fil pl sv bg ro ar cs el fi hr ms sk da ta uk ru hu no vi".split())}
"""The `language_code` values each TTS model takes (ElevenLabs' models page: Flash v2.5's 32
languages, ISO 639-1 but Filipino's `fil`); a model not listed speaks English only."""


class _TTSLanguage:
    """ElevenLabs TTS takes the language as `language_code` (the WebSocket's query, the HTTP body),
    which makes Flash v2.5 speak that language (its voices are multilingual)."""
    language = "en"

    def in_language(self, language: str):
        """A copy that sends `language_code`, or None when the model does not speak the language."""
        return language_copy(self, language, TTS_LANGUAGES.get(self.model.vendor_model, frozenset({"en"})))


# --- TTS over the stream-input WebSocket ---


class ElevenLabsWebSocketTTS(_TTSLanguage):
    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "ElevenLabsWebSocketSession":
        """Open the stream and send the opening `{"text": " "}`: both before t0."""
        key = require_key(self.model.vendor)
        voice_id = voice or self.model.voice or DEFAULT_VOICE
        query = urlencode({"model_id": self.model.vendor_model, "output_format": OUTPUT_FORMAT,
                           "inactivity_timeout": INACTIVITY_TIMEOUT_S, "language_code": self.language})
        ws = await open_websocket(f"{self.url}/v1/text-to-speech/{quote(voice_id, safe='')}/stream-input?{query}",
                                  {"xi-api-key": key.reveal()}, VENDOR, clock=timeline.clock)
        try:
            await ws.send(json.dumps({"text": " "}))
        except websockets.ConnectionClosed as exc:
            raise closed(VENDOR, exc) from None
        return ElevenLabsWebSocketSession(ws, timeline)


class ElevenLabsWebSocketSession(Reader):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline) -> None:
        self.ws, self.timeline = ws, timeline

    async def synthesize(self, text: str) -> None:
        try:
            await self.ws.send(json.dumps({"text": text.strip() + " ", "flush": True}))
            self.timeline.mark(REQUEST_SENT)
            await self.ws.send(json.dumps({"text": ""}))
        except websockets.ConnectionClosed as exc:
            raise closed(VENDOR, exc) from None
        await self._read_reply()
        self.timeline.mark(CLOSED)

    async def _read(self) -> None:
        samples, offset = _Samples(), 0
        async for message, at in received(self.ws):
            data = json.loads(message)
            if data.get("audio"):
                offset = _mark_audio(self.timeline, samples.feed(base64.b64decode(data["audio"], validate=True)),
                                     offset, at)
            elif data.get("error") or (data.get("message") and not data.get("isFinal")):
                raise _tts_error(data)
            if data.get("isFinal"):
                break
        else:  # the server closed normally before isFinal: the audio was cut short
            raise closed(VENDOR, self.ws.close_code, "before isFinal")
        if samples.left:
            raise ProviderError(f"malformed audio from {VENDOR} (a split sample)", "malformed")

    async def aclose(self) -> None:
        await self.ws.close()


# --- TTS over HTTP streaming ---


class ElevenLabsHTTPTTS(_TTSLanguage):
    """One warmed HTTP client per adapter, reused across items (a connection per item would time TLS)."""

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)
        self._clients = WarmClients(self.url, VENDOR, lambda: {"xi-api-key": require_key(model.vendor).reveal()})

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "ElevenLabsHTTPSession":
        """The client made once (per event loop), its connection warmed before t0."""
        require_key(self.model.vendor)  # a missing key fails every item, not only the first
        return ElevenLabsHTTPSession(await self._clients.get(), timeline, self.model.vendor_model,
                                     voice or self.model.voice or DEFAULT_VOICE, self.language)

    async def aclose(self) -> None:
        await self._clients.aclose()

    def close(self) -> None:
        """For the runner's synchronous clean-up."""
        self._clients.close()


class ElevenLabsHTTPSession:
    def __init__(self, client: WarmClient, timeline: Timeline, model_id: str, voice_id: str,
                 language: str = "en") -> None:
        self.client, self.timeline, self.model_id, self.voice_id = client, timeline, model_id, voice_id
        self.language = language

    async def synthesize(self, text: str) -> None:
        cold = [False]
        samples, offset = _Samples(), 0
        path = f"/v1/text-to-speech/{quote(self.voice_id, safe='')}/stream"
        try:
            async with self.client.stream("POST", path, cold, params={"output_format": OUTPUT_FORMAT},
                                          json={"text": text, "model_id": self.model_id,
                                                "language_code": self.language}) as response:
                stamped_http.mark_exchange(self.timeline, response, cold[0])
                if response.status_code != 200:
                    await response.aread()
                    raise http_failure(response.status_code, response.headers, VENDOR)
                kind = response.headers.get("content-type", "")
                if not kind.startswith(("audio/", "application/octet-stream")):
                    raise ProviderError(f"malformed response from {VENDOR} (content-type {kind[:60]!r})", "malformed")
                async for chunk, at in stamped_http.received(response):
                    offset = _mark_audio(self.timeline, samples.feed(chunk), offset, at)
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError, httpx.ConnectError) as exc:
            raise ProviderError(f"{VENDOR} dropped the connection mid-stream ({type(exc).__name__})",
                                "disconnected") from None
        except httpx.DecodingError as exc:
            raise ProviderError(f"malformed audio from {VENDOR}: {exc}", "malformed") from None
        if samples.left:
            raise ProviderError(f"malformed audio from {VENDOR} (a split sample)", "malformed")
        self.timeline.mark(CLOSED)

    async def aclose(self) -> None:
        """The client stays open for the next item."""
