"""Zhipu AI GLM-Realtime (speech-to-speech over the `/api/paas/v4/realtime` WebSocket), as Zhipu documents it.

Protocol facts followed: the guide docs.bigmodel.cn/cn/guide/models/sound-and-video/glm-realtime, the
AsyncAPI spec docs.bigmodel.cn/asyncapi/asyncapi.json, the platform error codes
docs.bigmodel.cn/cn/api/api-code and docs.bigmodel.cn/cn/faq, and Zhipu's official SDK repository
github.com/MetaGLM/glm-realtime-sdk (GLM-Realtime-doc-for-llm.md, the API reference for LLMs;
python/rtclient/models.py; python/samples/low_level_sample_audio.py; golang/samples/samples.go;
frontend/src/utils/chatSDK).

- Endpoint `wss://open.bigmodel.cn/api/paas/v4/realtime`; the API key goes in `Authorization: Bearer
  <key>` (server-side auth; a JWT is the browser-side alternative). The model codes are
  `glm-realtime-air` and `glm-realtime-flash` (AsyncAPI info; no dated snapshots exist); the model
  goes in `session.model` of `session.update` (the SDK's `SessionUpdateParams.model`).
- The server opens with `session.created`; `session.update` {input_audio_format, output_audio_format,
  turn_detection.type, beta_fields {chat_mode, tts_source, auto_search}} is answered by
  `session.updated`. `heartbeat` events (`{"type": "heartbeat"}`) come when the session is created or
  updated and every 30 s after; they carry nothing.
- Input: `input_audio_buffer.append` whose `audio` is a base64 WAV file - the only input format the
  reference documents ("仅支持wav格式"), 16 kHz by default (`wav48` would name 48 kHz). 16 kHz is the
  harness's own rate, so each paced chunk goes out as one small 16 kHz mono pcm16 WAV, unresampled.
- Turns: `turn_detection.type` `client_vad` (the default; `server_vad` is the other mode) leaves the
  turn to the client: `input_audio_buffer.commit` (an error when nothing was appended; answered by
  `input_audio_buffer.committed`), then `response.create` (`response.created`), as the SDK's audio
  sample does. The V2V clock therefore runs from the caller's speech end, as for OpenAI Realtime.
- The reply: `response.audio.delta` {response_id, delta}: base64 little-endian pcm16 mono with
  `output_audio_format` `pcm` (the default; `mp3` is the other), at 24 kHz - the rate Zhipu's own
  SDKs play and save it at (frontend pcmPlayer `sampleRate: 24000`; golang samples
  `Pcm2Wav(..., 24000, 1, 16)`). Then `response.audio.done`, `response.audio_transcript.done` and
  `response.done`, which "is always sent, whatever the final status": `response.status` `completed`
  or `cancelled` (the SDK also knows `incomplete` and `failed`). Anything but `completed` is a
  failed turn, not a reply.
- Errors: `error` {error: {type, code, message}}; "most errors are recoverable and the session stays
  open". So an error ends the turn only when it refuses the set-up or the `response.create` (it
  arrives before `response.created`), or names the key (codes 1000-1005) or a rate limit (1302
  concurrency, 1303 frequency, 1305 overload); any other is kept as the reason should the reply
  never finish. The upgrade itself is refused with HTTP 401 for a bad key and 429 for the
  concurrency limit or an account in arrears.
- `beta_fields.chat_mode` `audio`, `tts_source` `e2e` (both required); `auto_search` (default true)
  is turned off so a turn measures the speech model, not a web search it may decide to run.
- Zhipu documents no maximum session length (the guide names only a 2-minute conversation memory).

Every server event is marked at its arrival stamp (`stamped.received`), like the other adapters.
"""

from __future__ import annotations

import base64
import json

import websockets

from voxwatch.providers.base import ProviderError
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.foundation.events import AUDIO, CLOSED, REQUEST_SENT, Timeline
from voxwatch.providers.keys import Secret, scrub
from voxwatch.foundation.audio import wav_bytes
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import ReaderSession, decode_event, settle, update_session

VENDOR = "Zhipu"
DEFAULT_URL = "wss://open.bigmodel.cn"
PATH = "/api/paas/v4/realtime"
INPUT_RATE = 16000  # "wav" with no rate suffix
OUTPUT_RATE = 24000
AUTH_CODES = frozenset({"1000", "1001", "1002", "1003", "1004", "1005"})
RATE_CODES = frozenset({"1302", "1303", "1305"})


def _session(model: ModelInfo) -> dict:
    session = {
        "model": model.vendor_model,
        "input_audio_format": "wav",
        "output_audio_format": "pcm",
        "turn_detection": {"type": "client_vad"},
        "beta_fields": {"chat_mode": "audio", "tts_source": "e2e", "auto_search": False},
    }
    if model.voice:
        session["voice"] = model.voice
    return session


def _error_of(data: dict, key: Secret) -> ProviderError:
    """An `error` event, by kind: the platform's codes name refused keys and rate limits."""
    err = data.get("error") or {}
    code = str(err.get("code") or "")
    kind = str(err.get("type") or "error")
    message = scrub(str(err.get("message") or ""), [key])[:300]
    if code in AUTH_CODES:
        status = "auth_error"
    elif code in RATE_CODES:
        status = "rate_limited"
    elif code == "500" or kind == "server_error":
        status = "server_error"
    else:
        status = "error"
    return ProviderError(f"{VENDOR} error ({kind}{', ' + code if code else ''}): {message}", status)


class GlmRealtimeS2S:
    sample_rate = INPUT_RATE

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    async def connect(self, timeline: Timeline) -> "GlmRealtimeSession":
        """Open the socket and configure a client-VAD audio session (all before t0)."""
        key = require_key(self.model.vendor)
        ws = await open_websocket(self.url + PATH, {"Authorization": f"Bearer {key.reveal()}"}, VENDOR,
                                  clock=timeline.clock)
        await settle(ws, update_session(ws, _session(self.model), VENDOR, lambda data: _error_of(data, key)))
        return GlmRealtimeSession(ws, timeline, key)


class GlmRealtimeSession(ReaderSession):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline, key: Secret) -> None:
        self.timeline, self.key = timeline, key
        self._requested = False  # response.create sent
        self._created = False  # response.created arrived
        self._noted: ProviderError | None = None  # a recoverable error: the reason if the reply never ends
        self._complete = False  # response.done arrived
        super().__init__(ws)

    def _on_error(self, data: dict) -> bool:
        """Keep a recoverable error event; True when it ends the turn."""
        err = _error_of(data, self.key)
        if err.status in ("auth_error", "rate_limited") or (self._requested and not self._created):
            self._error = err
            return True
        self._noted = err
        return False

    async def _read(self) -> None:
        offset = 0
        async for message, at in received(self.ws):
            data = decode_event(message)
            kind = data["type"]
            if kind == "error" and self._on_error(data):
                break
            if kind == "response.created":
                self._created = True
            elif kind == "response.audio.delta":
                pcm = base64.b64decode(data["delta"], validate=True)
                if len(pcm) % 2:
                    raise ValueError("an audio delta ended mid-sample")
                self.timeline.mark(AUDIO, at, sample_offset=offset, n_samples=len(pcm) // 2,
                                   sample_rate=OUTPUT_RATE, audio=pcm)
                offset += len(pcm) // 2
            elif kind == "response.done":
                status = data["response"]["status"]
                if status != "completed":
                    note = f" after {self._noted}" if self._noted else ""
                    self._error = ProviderError(f"{VENDOR} ended the reply with status {str(status)[:40]!r}{note}")
                self._complete = True
                self.timeline.mark(CLOSED, at)
                break

    def _dropped(self, exc: websockets.ConnectionClosed) -> ProviderError:
        return self._unfinished(exc)

    def _reader_ended(self) -> None:
        """A reply that never reached response.done failed (the close says how, unless something
        did first), and its stream ends now; a complete one was CLOSED at response.done."""
        if not self._complete:
            self._error = self._error or self._unfinished(self.ws.close_code)
            self.timeline.mark(CLOSED)

    def _unfinished(self, close: websockets.ConnectionClosed | int | None) -> ProviderError:
        """The socket closed before response.done: the last recoverable error, if any, says why."""
        return closed(VENDOR, close, "before response.done", note=f" after {self._noted}" if self._noted else "")

    async def _send(self, event: dict) -> None:
        try:
            await self.ws.send(json.dumps(event))
        except websockets.ConnectionClosed as exc:
            raise self._error or closed(VENDOR, exc) from None

    async def send_audio(self, pcm16: bytes) -> None:
        await self._send({"type": "input_audio_buffer.append",
                          "audio": base64.b64encode(wav_bytes(pcm16, INPUT_RATE)).decode()})

    async def end_audio(self) -> None:
        """Client VAD: commit the caller's audio, then ask for the reply."""
        await self._send({"type": "input_audio_buffer.commit"})
        self._requested = True
        await self._send({"type": "response.create"})
        self.timeline.mark(REQUEST_SENT)

    async def wait_response(self) -> None:
        await self._wait()
