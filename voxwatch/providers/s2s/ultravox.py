"""Ultravox Realtime (a call created over REST, then joined over a WebSocket), as Ultravox documents it.

Protocol facts followed (Ultravox's documentation, docs.ultravox.ai, whose source is the official
repository fixie-ai/ultradox, read @eafa4599f69c0ec0fb5c0d837e4bc55030e295c0 (2026-04-27):
apps/websockets.mdx "WebSocket Integration", apps/datamessages.mdx "Protocol & Data Messages",
api-reference/introduction.mdx, gettingstarted/concurrency.mdx, changelog/news.mdx; the call object's
schema in the API reference's OpenAPI (docs.ultravox.ai/api-reference, `ultravox.v1.CallTemplate`,
`CallMedium_WebSocketMedium`, `VadSettings`); and the official example client
fixie-ai/ultravox-websocket-example-client websocket_client.py @0fb3595683f9fac2bfc2fa3b80fab2c27874bf20):
- A call is created with `POST https://api.ultravox.ai/api/calls`, the key in the `X-API-Key` header,
  a JSON body naming `model`, `voice`, `systemPrompt` and `medium: {serverWebSocket: {inputSampleRate
  (required), outputSampleRate (defaults to the input rate), clientBufferSizeMs (defaults to 60)}}`;
  the answer is the call object, whose `joinUrl` the client then opens as a WebSocket (no header: the
  URL is the credential). The example client adds `apiVersion=1` to the join URL's query.
- `firstSpeakerSettings` defaults to the agent, which greets the caller as the call is joined;
  `{"user": {}}` makes the caller speak first, so no greeting is spoken over the measured turn.
- Rate limits and capacity refuse the call's creation: HTTP 429 ("Too Many Requests": the API's
  request limits, a plan's concurrency cap, or no capacity), and 503 when capacity below a Scale
  plan's priority allotment is missing; both send `Retry-After`, the seconds to wait.
- On the socket, binary messages are audio, s16le mono PCM: the caller's at `inputSampleRate`, the
  agent's at `outputSampleRate`. Text messages are JSON data messages with a `type`: `call_started`
  {callId}, `state` {state: idle | listening | thinking | speaking}, `transcript` {role: user | agent,
  medium, text or delta, final, ordinal}, `pong`, `client_tool_invocation`, `debug`, and
  `playback_clear_buffer` ("drop as much unplayed output audio as possible": the agent was interrupted).
- Turns are found by Ultravox's own voice activity detection, on 32 ms frames of the audio it receives:
  the agent answers once the caller seems done speaking plus `vadSettings.turnEndpointDelay`
  (default 0.384 s). There is no client message that ends the caller's turn, so the caller's line keeps
  sending audio as a live call does: after the clip, silence, paced in real time, until the reply ends.
- A transcript with `final: true` says no more transcript messages follow for that conversation round:
  the agent's final transcript ends its reply. With a large client buffer (the docs advise 30000 ms
  with `playback_clear_buffer` handled) the agent's audio comes ahead of playback.
- The server ends the call by closing the socket (its `maxDuration`, default 3600 s; a hang-up); the
  example client reads a clean close as the call having ended, any other as an error. Ultravox
  documents no close codes of its own.

This adapter asks for 16 kHz input (the harness's chunks go as they are: the first binary message is
the clip's first chunk, which an emulator keys its truth on) and 24 kHz output, the rates LiveKit's
Ultravox plugin uses (livekit/agents livekit-plugins-ultravox realtime_model.py, a reference, Apache-2.0).
Every server message is marked at its arrival stamp (`stamped.received`); audio is marked as it came,
and the timeline computes nothing here.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit, urlunsplit

import websockets

from voxwatch.foundation.events import AUDIO, CLOSED, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import (WarmClients, base_url, http_errors, http_failure, is_loopback,
                                                  open_websocket, require_key)
from voxwatch.providers.session.live_line import keep_line_open
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import ReaderSession, decode_event

VENDOR = "Ultravox"
DEFAULT_URL = "https://api.ultravox.ai"
CALLS = "/api/calls"
INPUT_RATE = 16000
OUTPUT_RATE = 24000
CLIENT_BUFFER_MS = 30000  # the docs' advice: a large buffer, with playback_clear_buffer handled
DEFAULT_VOICE = "Mark"  # the voice of the docs' WebSocket example
SYSTEM_PROMPT = "You are a helpful assistant. Answer briefly."
API_VERSION = "1"  # the official example client's `apiVersion` query parameter


def call_body(model: ModelInfo) -> dict:
    """The Create Call request: a WebSocket call at our rates, the caller speaking first."""
    return {"model": model.vendor_model, "voice": model.voice or DEFAULT_VOICE, "systemPrompt": SYSTEM_PROMPT,
            "firstSpeakerSettings": {"user": {}},
            "medium": {"serverWebSocket": {"inputSampleRate": INPUT_RATE, "outputSampleRate": OUTPUT_RATE,
                                           "clientBufferSizeMs": CLIENT_BUFFER_MS}}}


def with_api_version(join_url: str) -> str:
    """The join URL with `apiVersion=1` in its query, as the official example client joins."""
    parts = urlsplit(join_url)
    kept = [p for p in parts.query.split("&") if p and not p.startswith("apiVersion=")]  # the rest as given
    return urlunsplit(parts._replace(query="&".join([*kept, f"apiVersion={API_VERSION}"])))


class UltravoxS2S:
    sample_rate = INPUT_RATE  # what send_audio takes, and what the call is created with

    def __init__(self, model: ModelInfo) -> None:
        self.model, self.url = model, base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)
        self.clients = WarmClients(self.url, VENDOR, lambda: {"X-API-Key": require_key(model.vendor).reveal()})

    async def _join_url(self) -> str:
        """Create the call (POST /api/calls); its join URL. A refusal is a failure by its HTTP status."""
        client = await self.clients.get()
        with http_errors(VENDOR, "call object"):
            response = await client.client.post(CALLS, json=call_body(self.model))
        if response.status_code not in (200, 201):
            raise http_failure(response.status_code, response.headers, VENDOR)
        try:
            join_url = response.json()["joinUrl"]
            if not isinstance(join_url, str) or urlsplit(join_url).scheme not in ("ws", "wss"):
                raise TypeError("joinUrl is not a WebSocket URL")
        except (ValueError, KeyError, TypeError) as exc:
            raise ProviderError(f"malformed call object from {VENDOR} ({type(exc).__name__})", "malformed") from None
        return with_api_version(join_url)

    async def connect(self, timeline: Timeline) -> "UltravoxCall":
        """Create the call and join it (all before t0)."""
        join_url = await self._join_url()
        return UltravoxCall(await open_websocket(join_url, {}, VENDOR, clock=timeline.clock), timeline)

    def close(self) -> None:
        self.clients.close()


class UltravoxCall(ReaderSession):
    """One joined call: the caller's turn and the agent's reply. One reader task reads the socket until
    the agent's final transcript (or what ends the call) and holds the outcome; after the clip, a line
    task keeps the caller's audio flowing (silence) for Ultravox's turn detection."""

    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline) -> None:
        self.timeline = timeline
        self._offset = 0  # samples of the agent's audio marked so far
        self._closed_at: int | None = None  # the agent's final transcript's arrival: the stream's CLOSED
        self._line: asyncio.Task | None = None
        super().__init__(ws)

    async def _read(self) -> None:
        async for message, at in received(self.ws):
            if isinstance(message, bytes):
                self._mark_audio(message, at)
                continue
            data = decode_event(message)
            kind = data["type"]
            if kind == "transcript" and data["role"] == "agent" and data["final"] is True:
                self._closed_at = at
                return
            if kind == "playback_clear_buffer":
                raise ProviderError(f"{VENDOR} cleared the agent's playback buffer: the reply was interrupted")
        raise closed(VENDOR, self.ws.close_code, "before the agent's reply was complete")

    def _mark_audio(self, pcm: bytes, at: int) -> None:
        if len(pcm) % 2:
            raise ValueError("an audio message ended mid-sample")
        n = len(pcm) // 2
        self.timeline.mark(AUDIO, at, sample_offset=self._offset, n_samples=n, sample_rate=OUTPUT_RATE, audio=pcm)
        self._offset += n

    def _dropped(self, exc: websockets.ConnectionClosed) -> ProviderError:
        return closed(VENDOR, exc, "before the agent's reply was complete")

    def _reader_ended(self) -> None:
        """The stream is CLOSED at the final transcript's arrival, or now when the call ended otherwise."""
        self.timeline.mark(CLOSED, self._closed_at)

    async def _send(self, pcm16: bytes) -> None:
        try:
            await self.ws.send(pcm16)
        except websockets.ConnectionClosed as exc:
            await asyncio.wait([self._reader], timeout=self.close_wait_s)  # its reason names the close
            raise self._error or closed(VENDOR, exc, "mid-turn") from None

    async def send_audio(self, pcm16: bytes) -> None:
        await self._send(pcm16)

    async def end_audio(self) -> None:
        """No message ends a turn (Ultravox detects it): the line goes on, silent, as a live call's would."""
        self._line = asyncio.create_task(keep_line_open(self.ws.send, self._done, INPUT_RATE,
                                                        (websockets.ConnectionClosed,)))

    async def wait_response(self) -> None:
        """The reader's outcome: the reply is complete, or the call's failure is raised."""
        await self._wait()

    async def aclose(self) -> None:
        """Hang up: closing the socket ends the call (the official example client's stop)."""
        if self._line is not None:
            self._line.cancel()
        await super().aclose()
