"""MiniMax T2A v2 text to speech over HTTP, streamed as server-sent events, as the vendor documents it.

Protocol facts (copied as facts; sources: https://platform.minimax.io/docs/api-reference/speech-t2a-http
and its embedded openapi.json `POST /v1/t2a_v2`; https://platform.minimax.io/docs/api-reference/speech-t2a-websocket
(its AsyncAPI, for the error codes both share); Pipecat src/pipecat/services/minimax/tts.py @ acead05,
BSD-2, and Coval's runner providers/tts/minimax.py @ bf95d1b, Apache-2.0, read as references for the
same facts):

- `POST https://api.minimax.io/v1/t2a_v2`, `Authorization: Bearer <key>`, a JSON body: `model`,
  `text` (under 10,000 characters), `stream: true`, `stream_options: {"exclude_aggregated_audio"}`,
  `voice_setting` (`voice_id` required; speed, vol, pitch), `audio_setting` (`sample_rate`: 8000,
  16000, 22050, 24000, 32000 or 44100, default 32000; `format`: mp3 (default), pcm, flac, wav,
  ...; `channel`), `language_boost`. `pcm` is headerless 16-bit little-endian samples; the adapter
  names 24000 Hz and mono (a client that took the default rate for 24 kHz would read every
  duration a third short).
- The answer is `text/event-stream`, one `data: {...}` event per chunk: `{"data": {"audio": <hex>,
  "status": 1 | 2}, "trace_id", "base_resp": {"status_code", "status_msg"}, "extra_info"?}`, status
  1 "synthesizing", 2 "synthesis completed". With `exclude_aggregated_audio` false (the default)
  "the last chunk will include the complete audio": the status-2 event repeats the whole utterance
  (Pipecat skips any event with `extra_info`). The adapter sets it true, so the end of the stream
  does not wait for a second copy of the audio, and never counts a status-2 event's audio: the audio
  is the status-1 chunks, the status-2 event is the end.
- Audio is hex in JSON: two characters a byte, decoded with `bytes.fromhex`.
- Failures arrive in-band, HTTP 200 with `base_resp.status_code` not 0 (a JSON answer in place of
  the stream, or an event in it): 1000 unknown, 1001 timeout, 1002 rate limit, 1004 authentication
  failed, 1039 TPM rate limit, 1042 illegal characters over 10 %, 2013 invalid input parameters
  (the task_failed/task_continued schemas of the AsyncAPI). Retry-After is not documented.
- `https://api-uw.minimax.io` is a second host the vendor advertises for a shorter time to first
  audio; the adapter uses the main host (the host changes the numbers: a choice to name, not mix).

The WebSocket API (`wss://api.minimax.io/ws/v1/t2a_v2`) speaks the same model in two set-up round
trips (connected_success, then task_start / task_started) before text; this adapter measures the
HTTP stream, the one request a client sends per utterance.
"""

from __future__ import annotations

import contextlib
import json

from voxwatch.foundation.events import CLOSED, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session import sse
from voxwatch.providers.session.endpoints import WarmClient, WarmClients, base_url, is_loopback, posted, require_key
from voxwatch.providers.session.pcm import PCMMarks
from voxwatch.providers.session.ws_session import MALFORMED, malformed

VENDOR = "MiniMax"
DEFAULT_URL = "https://api.minimax.io"
PATH = "/v1/t2a_v2"
SAMPLE_RATE = 24000
DEFAULT_VOICE = "English_expressive_narrator"  # the voice of the vendor's own examples
ERROR_STATUS = {1001: "server_error", 1002: "rate_limited", 1004: "auth_error", 1039: "rate_limited"}


def error_of(base: dict) -> ProviderError:
    """A `base_resp` whose status_code is not 0, by kind (the rest are refusals of the request)."""
    code = base.get("status_code")
    return ProviderError(f"{VENDOR} error {code}: {str(base.get('status_msg') or '')[:300]}",
                         ERROR_STATUS.get(code, "error"))


class MiniMaxTTS:
    """One warmed HTTP client per adapter, reused across items (a connection per item would time TLS)."""

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)
        self._clients = WarmClients(self.url, VENDOR,
                                    lambda: {"Authorization": f"Bearer {require_key(model.vendor).reveal()}"})

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "MiniMaxSession":
        require_key(self.model.vendor)  # a missing key fails every item, not only the first
        return MiniMaxSession(await self._clients.get(), timeline, self.model.vendor_model,
                              voice or self.model.voice or DEFAULT_VOICE)

    async def aclose(self) -> None:
        await self._clients.aclose()

    def close(self) -> None:
        """For the runner's synchronous clean-up."""
        self._clients.close()


class MiniMaxSession:
    def __init__(self, client: WarmClient, timeline: Timeline, model: str, voice: str) -> None:
        self.client, self.timeline, self.model, self.voice = client, timeline, model, voice

    async def synthesize(self, text: str) -> None:
        request = {"model": self.model, "text": text, "stream": True,
                   "stream_options": {"exclude_aggregated_audio": True},
                   "voice_setting": {"voice_id": self.voice, "speed": 1, "vol": 1, "pitch": 0},
                   "audio_setting": {"sample_rate": SAMPLE_RATE, "format": "pcm", "channel": 1},
                   "language_boost": "English"}
        done = False
        audio = PCMMarks(self.timeline, SAMPLE_RATE, VENDOR)
        async with posted(self.client, PATH, self.timeline, VENDOR, "events", json=request) as response:
            try:
                if response.headers.get("content-type", "").startswith("application/json"):  # no stream: a refusal
                    self._event(json.loads(await response.aread()), audio, None)
                    raise ProviderError(f"malformed answer from {VENDOR}: JSON in place of the event stream",
                                        "malformed")
                async with contextlib.aclosing(sse.received_events(response)) as events:
                    async for event, at in events:
                        if self._event(json.loads(event), audio, at):
                            done = True
                            break
            except MALFORMED as exc:
                raise malformed(VENDOR, exc) from None
        if not done:  # the stream ended cleanly before its status-2 event: the audio was cut short
            raise ProviderError(f"{VENDOR} ended the stream before synthesis completed", "disconnected")
        audio.end()
        self.timeline.mark(CLOSED)

    @staticmethod
    def _event(event: dict, audio: PCMMarks, at: int | None) -> bool:
        """One event: its failure raised, its audio marked; True for the last (status 2)."""
        base = event.get("base_resp") or {}
        if base.get("status_code", 0) != 0:
            raise error_of(base)
        chunk = event["data"]
        if chunk is None:  # "data may return null"
            return False
        if chunk["status"] == 2:  # synthesis completed: its audio, if any, is the whole utterance again
            return True
        audio.add(bytes.fromhex(chunk["audio"]), at)
        return False

    async def aclose(self) -> None:
        """The client stays open for the next item."""
