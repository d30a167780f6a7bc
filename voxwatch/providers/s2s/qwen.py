"""Alibaba Cloud Model Studio Qwen-Omni-Realtime (speech-to-speech over WebSocket), as Alibaba documents it.

Protocol facts followed:
- Endpoint `wss://dashscope-intl.aliyuncs.com/api-ws/v1/realtime?model=<id>` (Singapore; Beijing is
  `wss://dashscope.aliyuncs.com`); the key goes in the handshake as `Authorization: Bearer <key>`.
  The newest models (qwen3.8-omni-flash-realtime) must use a workspace host,
  `wss://{WorkspaceId}.ap-southeast-1.maas.aliyuncs.com` (Beijing: `.cn-beijing.`), while older
  models, the registered snapshot among them, keep the regional hosts: point
  VOXWATCH_QWEN_BASE_URL at the workspace host (or at Beijing) to use one
  (alibabacloud.com/help/en/model-studio/omni-realtime-websocket-access, Nov 2026;
  dashscope/dashscope-sdk-python dashscope/audio/qwen_omni/omni_realtime.py: `url?model=`, Bearer header).
- The server opens with `session.created`; the client sends `session.update` and sends input only
  after `session.updated`. Invalid parameters, like every failed client event, are answered by an
  `error` event {error: {type, code, message, param}} (Client events / Server events,
  alibabacloud.com/help/en/model-studio/client-events, /server-events).
- Session: `modalities` ["text", "audio"]; `input_audio_format` "pcm16": 16 kHz mono 16-bit PCM,
  the only input the API takes, so the harness's 16 kHz chunks go out as they are;
  `output_audio_format` "pcm24": 24 kHz 16-bit PCM, the only output of Qwen3-Omni-Flash-Realtime
  (Python SDK page, help.aliyun.com/zh/model-studio/omni-realtime-python-sdk, which Alibaba names
  as the reference for the 2025-09-15 snapshot; the server-events page: input 16 kHz, output 24 kHz).
- `turn_detection: null` is Manual mode (server VAD is the default): the client appends audio
  (`input_audio_buffer.append` {audio: base64}), commits it (`input_audio_buffer.commit`, answered by
  `input_audio_buffer.committed`) and asks for the reply with `response.create`
  (alibabacloud.com/help/en/model-studio/omni-realtime-interaction-process). So the turn ends where the
  caller stops, as docs/METHOD.md wants, not after a VAD silence window.
- The reply streams as `response.audio.delta` {response_id, item_id, output_index, content_index,
  delta: base64 PCM} (the SDK times its first audio on this event), then `response.audio.done` and
  `response.done` {response: {status, ...}}. Alibaba's example shows "completed"; any other status
  (the realtime response shape also knows cancelled, failed, incomplete) is a failed reply, never a
  success.
- Failures: a refused handshake by HTTP status (401 InvalidApiKey, 403 AccessDenied, 429
  Throttling.*, 5xx); the same codes in `error` events map to the same kinds (Model Studio error
  codes, help.aliyun.com/en/model-studio/error-code-start). Alibaba documents no error event as
  recoverable and the only client events sent here are the turn's own, so an error ends the turn.
- A single WebSocket session lasts at most 120 minutes, then the server closes it: the registry's
  session_limit_s (alibabacloud.com/help/en/model-studio/realtime, doc-detail/2880812 of Mar 2026,
  and help.aliyun.com/zh/model-studio/realtime; the 30 minutes of the Nov-Dec 2025 ja / zh-TW
  pages is the older figure).

Every server event is marked at its arrival stamp (`stamped.received`). The Model Studio error codes,
a reply's end status and the client event's shape are the vendor's facts for both its realtime APIs,
read from `tts/qwen.py` (Qwen-TTS Realtime).
"""

from __future__ import annotations

import base64
from urllib.parse import urlencode

import websockets

from voxwatch.providers.base import ProviderError
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.foundation.events import CLOSED, REQUEST_SENT, Timeline
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.pcm import mark_base64
from voxwatch.providers.session.ws_session import ReaderSession, decode_event, settle, update_session
from voxwatch.providers.session.stamped import received
from voxwatch.providers.tts.qwen import DEFAULT_URL, PATH, client_event as _event, error_event as model_studio_error
from voxwatch.providers.tts.qwen import unfinished as reply_unfinished

VENDOR = "Qwen-Omni-Realtime"
INPUT_RATE = 16000
OUTPUT_RATE = 24000
DEFAULT_VOICE = "Cherry"  # Qwen3-Omni-Flash-Realtime's default voice
AUDIO_DELTA = "response.audio.delta"


def error_event(data: dict) -> ProviderError:
    """An `error` event, by kind (the Model Studio error codes, as Qwen-TTS Realtime reads them)."""
    return model_studio_error(data, VENDOR)


def unfinished(response: dict) -> ProviderError | None:
    return reply_unfinished(response, VENDOR)


class QwenOmniRealtimeS2S:
    sample_rate = INPUT_RATE  # the API's own input rate: chunks go out as the harness paces them

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    async def connect(self, timeline: Timeline) -> "QwenConversation":
        """Open the socket and configure a Manual-mode session (all before t0)."""
        key = require_key(self.model.vendor)
        url = f"{self.url}{PATH}?{urlencode({'model': self.model.vendor_model})}"
        ws = await open_websocket(url, {"Authorization": f"Bearer {key.reveal()}"}, VENDOR, clock=timeline.clock)
        session = {"modalities": ["text", "audio"], "voice": self.model.voice or DEFAULT_VOICE,
                   "input_audio_format": "pcm16", "output_audio_format": "pcm24", "turn_detection": None}
        await settle(ws, update_session(ws, session, VENDOR, error_event))
        return QwenConversation(ws, timeline)


class QwenConversation(ReaderSession):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline) -> None:
        self.timeline = timeline
        self._complete = False  # response.done arrived
        super().__init__(ws)

    async def wait_response(self) -> None:
        await self._wait()

    async def _read(self) -> None:
        offset = 0
        async for message, at in received(self.ws):
            data = decode_event(message)
            kind = data["type"]
            if kind == "error":
                self._error = error_event(data)
                break
            if kind == AUDIO_DELTA:
                offset = mark_base64(self.timeline, at, data["delta"], offset, OUTPUT_RATE)
            elif kind == "response.done":
                self._error, self._complete = unfinished(data["response"]), True
                self.timeline.mark(CLOSED, at)
                break

    def _dropped(self, exc: websockets.ConnectionClosed) -> ProviderError:
        return closed(VENDOR, exc, "before response.done")

    def _reader_ended(self) -> None:
        """A reply that never reached response.done failed (the close says how, unless something
        did first), and its stream ends now; a complete one was CLOSED at response.done."""
        if not self._complete:
            if self._error is None:
                self._error = closed(VENDOR, self.ws.close_code, "before response.done")
            self.timeline.mark(CLOSED)

    async def _send(self, kind: str, **fields) -> None:
        try:
            await self.ws.send(_event(kind, **fields))
        except websockets.ConnectionClosed as exc:
            raise self._error or closed(VENDOR, exc) from None

    async def send_audio(self, pcm16: bytes) -> None:
        await self._send("input_audio_buffer.append", audio=base64.b64encode(pcm16).decode())

    async def end_audio(self) -> None:
        """Manual mode: commit the caller's audio, then ask for the reply."""
        await self._send("input_audio_buffer.commit")
        await self._send("response.create")
        self.timeline.mark(REQUEST_SENT)
