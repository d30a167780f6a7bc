"""OpenAI text-to-speech (`POST /v1/audio/speech`), as the vendor documents it.

The request is JSON: `model`, `input` (the text), `voice` (a built-in voice name such as `marin`)
and `response_format: "pcm"` - raw samples at 24 kHz, 16-bit signed little-endian, without a
header (the documented fastest format, with `wav`). The audio comes back as the response body,
streamed (chunked) as it is generated. Auth: `Authorization: Bearer <key>`; refusals are HTTP
statuses with an `error` object (401 bad key, 429 with Retry-After, 5xx).

The body is read content-decoded (`stamped_http.received`): httpx, the official SDK's client too,
sends `Accept-Encoding: gzip, deflate`, and a server may compress what it is allowed to (OpenAI's
JSON responses have come brotli-encoded: ChatGPTNextWeb/NextChat#3215); whether it compresses
speech is not documented. Raw reads (`aiter_raw`) would store the compressed bytes as audio.
"""

from __future__ import annotations

from voxwatch.providers.session import stamped_http
from voxwatch.providers.base import ProviderError, takes_language
from voxwatch.providers.session.endpoints import WarmClient, WarmClients, http_errors, http_failure, is_loopback
from voxwatch.foundation.events import AUDIO, CLOSED, Timeline
from voxwatch.providers.stt.openai_batch import VENDOR, WHISPER_LANGUAGES, auth_headers, server_url
from voxwatch.providers.registry import ModelInfo

PATH = "/v1/audio/speech"
SAMPLE_RATE = 24000
DEFAULT_VOICE = "marin"


class OpenAITTS:
    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = server_url(model)
        self.emulator = is_loopback(self.url)
        self._clients = WarmClients(self.url, VENDOR, lambda: auth_headers(model.vendor, model.needs_key))

    def in_language(self, language: str) -> "OpenAITTS | None":
        """The speech API takes no language: it speaks the input's, in Whisper's languages (any voice).
        The adapter itself for one of those, None otherwise."""
        return takes_language(self, language, WHISPER_LANGUAGES)

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "OpenAITTSSession":
        client = await self._clients.get()
        return OpenAITTSSession(client, timeline, self.model.vendor_model, voice or self.model.voice or DEFAULT_VOICE)


class OpenAITTSSession:
    def __init__(self, client: WarmClient, timeline: Timeline, model: str, voice: str) -> None:
        self.client, self.timeline, self.model, self.voice = client, timeline, model, voice

    async def synthesize(self, text: str) -> None:
        request = {"model": self.model, "input": text, "voice": self.voice, "response_format": "pcm"}
        cold = [False]
        offset, pending = 0, b""
        with http_errors(VENDOR, "audio"):
            async with self.client.stream("POST", PATH, cold, json=request) as response:
                stamped_http.mark_exchange(self.timeline, response, cold[0])
                if response.status_code >= 400:
                    raise http_failure(response.status_code, response.headers, VENDOR)
                async for data, at in stamped_http.received(response):
                    data, pending = _whole_samples(pending + data)
                    if data:
                        self.timeline.mark(AUDIO, at_ns=at, sample_offset=offset, n_samples=len(data) // 2,
                                           sample_rate=SAMPLE_RATE, audio=data)
                        offset += len(data) // 2
        if pending:
            raise ProviderError(f"malformed audio from {VENDOR}: the pcm body ended mid-sample", "malformed")
        self.timeline.mark(CLOSED)

    async def aclose(self) -> None:
        """Nothing to close: the warmed client is the adapter's, reused by the next item."""


def _whole_samples(data: bytes) -> tuple[bytes, bytes]:
    """Split a body read into whole 16-bit samples and the odd byte that waits for the next read."""
    cut = len(data) - len(data) % 2
    return data[:cut], data[cut:]
