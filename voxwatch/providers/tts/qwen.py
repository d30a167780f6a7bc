"""Alibaba Cloud Model Studio Qwen-TTS Realtime (text-to-speech over WebSocket), as Alibaba documents it.

Protocol facts followed (read 2026-12-07):
- Endpoint `wss://dashscope-intl.aliyuncs.com/api-ws/v1/realtime?model=<id>` (Singapore; Beijing is
  `wss://dashscope.aliyuncs.com`, whose keys differ); the key goes in the handshake as
  `Authorization: Bearer <key>`, and a refused key is refused there (alibabacloud.com/help/en/model-studio/
  interactive-process-of-qwen-tts-realtime-synthesis, "Interaction flow"; dashscope/dashscope-sdk-python
  dashscope/audio/qwen_tts_realtime/qwen_tts_realtime.py @277207a3, 2026-06-30: `url?model=`, Bearer header).
  The same host, path and key as Qwen-Omni-Realtime (`s2s/qwen.py`), so one registry vendor, `qwen`.
- The server opens with `session.created` (defaults: mode `server_commit`, voice `Cherry`,
  `response_format` `pcm`, `sample_rate` 24000); the client's `session.update` (`voice`, `mode`,
  `language_type`, `response_format`, `sample_rate`) is answered by `session.updated`, or by an `error`
  event {error: {code, message}} (alibabacloud.com/help/en/model-studio/qwen-tts-realtime-client-events
  and /qwen-tts-realtime-server-events).
- Modes: `server_commit` lets the server decide when to synthesize what has been appended; `commit`
  synthesizes only on `input_text_buffer.commit` (answered by `input_text_buffer.committed`) ("Interaction
  flow"). This adapter uses `commit` and commits right after its one `input_text_buffer.append` {text}, so
  the clock starts at the request the server acts on, not at a segmentation wait of the server's choice
  (Coval's runner, Apache-2.0, coval-ai/benchmarks runner/src/coval_bench/providers/tts/alibaba.py, does
  the same: a reference, not a source).
- The reply: `response.created`, `response.output_item.added`, `response.content_part.added`,
  `response.audio.delta` {delta: base64 PCM, 24 kHz 16-bit mono}, `response.audio.done`,
  `response.content_part.done`, `response.output_item.done`, `response.done` {response: {status, usage:
  {characters, ...}}}. `session.finish` makes the server flush, send `session.finished` and close.
- Failures: a refused handshake by HTTP status (401 InvalidApiKey, 403 AccessDenied, 429 Throttling.*,
  5xx); the same Model Studio codes in `error` events map to the same kinds (help.aliyun.com/en/
  model-studio/error-code-start). Any error event ends the synthesis (Alibaba documents none as
  recoverable). No close code of its own is documented: a close reads as every vendor's (close_codes).

The Model Studio error codes and a reply's end status are this vendor's facts for both its realtime
APIs; `s2s/qwen.py` (Qwen-Omni-Realtime) reads them from here. Every server event is marked at its
arrival stamp (`stamped.received`).
"""

from __future__ import annotations

import json
import uuid
from urllib.parse import urlencode

import websockets

from voxwatch.foundation.events import Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.pcm import mark_base64
from voxwatch.providers.session.ws_session import Reader, decode_event, settle, update_session

VENDOR = "Qwen-TTS-Realtime"
DEFAULT_URL = "wss://dashscope-intl.aliyuncs.com"
PATH = "/api-ws/v1/realtime"
SAMPLE_RATE = 24000
DEFAULT_VOICE = "Cherry"  # the voice of session.created's defaults


def client_event(kind: str, **fields) -> str:
    """A client event; the SDK gives each one an `event_id` that error events refer back to."""
    return json.dumps({"event_id": f"event_{uuid.uuid4().hex}", "type": kind, **fields})


def error_event(data: dict, vendor: str = VENDOR) -> ProviderError:
    """An `error` event, by kind: the Model Studio error codes name auth, quota and server failures."""
    err = data.get("error") or {}
    code = str(err.get("code") or err.get("type") or "error")
    text = code.lower().replace("_", "")
    message = f"{vendor} error ({code}): {str(err.get('message'))[:300]}"
    if "apikey" in text or "accessdenied" in text or "unauthorized" in text:
        return ProviderError(message, "auth_error")
    if text.startswith("throttling") or "quota" in text or "ratelimit" in text:
        return ProviderError(message, "rate_limited")
    if "internalerror" in text or "servererror" in text:
        return ProviderError(message, "server_error")
    return ProviderError(message)


def unfinished(response: dict, vendor: str = VENDOR) -> ProviderError | None:
    """None for a completed reply (`response.done`); a cancelled, failed or incomplete one is a failure."""
    status = response.get("status")
    if status == "completed":
        return None
    details = response.get("status_details") or {}
    why = details.get("error") or details.get("reason") or ""
    return ProviderError(f"{vendor} reply ended {status}{': ' + str(why)[:300] if why else ''}")


class QwenTTSRealtime:
    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "QwenTTSSession":
        """Open the socket and set a `commit`-mode session up (all before t0)."""
        key = require_key(self.model.vendor)
        url = f"{self.url}{PATH}?{urlencode({'model': self.model.vendor_model})}"
        ws = await open_websocket(url, {"Authorization": f"Bearer {key.reveal()}"}, VENDOR, clock=timeline.clock)
        session = {"voice": voice or self.model.voice or DEFAULT_VOICE, "mode": "commit",
                   "response_format": "pcm", "sample_rate": SAMPLE_RATE}
        await settle(ws, update_session(ws, session, VENDOR, error_event))
        return QwenTTSSession(ws, timeline)


class QwenTTSSession(Reader):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline) -> None:
        self.ws, self.timeline = ws, timeline

    async def synthesize(self, text: str) -> None:
        """Append the text and commit it: the commit is the request the server synthesizes."""
        await self._request_reply([client_event("input_text_buffer.append", text=text),
                                   client_event("input_text_buffer.commit")])

    async def _read(self) -> None:
        offset = 0
        async for message, at in received(self.ws):
            data = decode_event(message)
            kind = data["type"]
            if kind == "error":
                raise error_event(data)
            if kind == "response.audio.delta":
                offset = mark_base64(self.timeline, at, data["delta"], offset, SAMPLE_RATE)
            elif kind == "response.done":
                failure = unfinished(data["response"])
                if failure is not None:
                    raise failure
                return
        raise closed(VENDOR, self.ws.close_code, "before response.done")  # closed normally, the audio cut short

    async def aclose(self) -> None:
        """`session.finish` (the server flushes and closes), then close the socket."""
        try:
            await self.ws.send(client_event("session.finish"))
        except websockets.ConnectionClosed:
            pass
        await self.ws.close()
