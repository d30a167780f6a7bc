"""Speechify text-to-speech over HTTP streaming (`POST /v1/audio/stream`), as the vendor documents it.

Protocol facts, each with its source (read 2026-12-07):
- Host `https://api.speechify.ai` (Speechify-AI/sdk-typescript src/environments.ts, 2026-08-19); auth
  `Authorization: Bearer <key>` (src/api/resources/audio/client/Client.ts).
- The request is one JSON body, the whole text at once (no incremental input): `input` (text or SSML),
  `voice_id` (required), `model` (`simba-3.2`: "streaming-native model with the lowest TTFB", English
  only), `output_format` (SDK src/api/types/GetStreamRequest.ts;
  https://docs.speechify.ai/build/api-reference/v1/audio/stream). `output_format` "takes precedence over
  the `Accept` header"; `pcm_24000` is headerless 16-bit little-endian PCM at 24 kHz mono, as `Accept:
  audio/pcm` is ("audio/pcm returns audio/L16 with rate and channels parameters"); the adapter asks for
  both, so that neither an ID3 tag nor MP3 framing sits before the first sample.
- The response body is the audio until the end of the body: the end of synthesis is the end of the
  body, with no message of its own (docs: the stream endpoint; SDK `stream` returns the bytes).
- "If an error occurs during synthesis, the connection will be closed without sending an error
  message due to the limitations of HTTP chunked responses" (https://docs.sws.speechify.com/docs/streaming):
  a body cut short is a dropped connection (`disconnected`), never a short utterance.
- Refusals are HTTP statuses with `{"error": {"code", "message"}}` (SDK src/api/types/error.py;
  tests/wire/audio.test.ts: 400, 401, 402, 403, 404, 409, 429, 500, 502, 503). "When you exceed rate or
  concurrency limits, the API returns 429 Too Many Requests with a Retry-After header"; concurrency is
  1 on the free plan, 15 paid, "enforced per user account, not per API key"
  (https://docs.sws.speechify.com/tts/text-to-speech/get-started/api-limits; changelog 2026-01-26).
References for the same facts (not code): Coval's runner runner/src/coval_bench/providers/tts/speechify.py
@bf95d1b (`/v1/audio/stream`; Apache-2.0).

The language is not sent: simba-3.2 speaks English only, so the adapter takes English datasets only.
No `Speechify-Version` header is sent: the API's default version answers (the SDK's default
version string was not confirmed on a vendor page).
"""

from __future__ import annotations

from voxwatch.foundation.events import CLOSED, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session import stamped_http
from voxwatch.providers.session.endpoints import WarmClient, WarmClients, base_url, http_errors, http_failure, is_loopback, require_key
from voxwatch.providers.session.pcm import PCMMarks

VENDOR = "Speechify"
DEFAULT_URL = "https://api.speechify.ai"
PATH = "/v1/audio/stream"
SAMPLE_RATE = 24000
OUTPUT_FORMAT = f"pcm_{SAMPLE_RATE}"
PCM_TYPES = ("audio/l16", "audio/pcm")  # the documented answers to audio/pcm (audio/L16;rate=...;channels=...)


class SpeechifyTTS:
    """One warmed HTTP client per adapter, reused across items (a connection per item would time TLS)."""

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)
        self._clients = WarmClients(self.url, VENDOR, lambda: {"Authorization": f"Bearer {require_key(model.vendor).reveal()}"})

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "SpeechifySession":
        require_key(self.model.vendor)  # a missing key fails every item, not only the first
        return SpeechifySession(await self._clients.get(), timeline, self.model.vendor_model, voice or self.model.voice or "")

    async def aclose(self) -> None:
        await self._clients.aclose()

    def close(self) -> None:
        """For the runner's synchronous clean-up."""
        self._clients.close()


class SpeechifySession:
    def __init__(self, client: WarmClient, timeline: Timeline, model: str, voice_id: str) -> None:
        self.client, self.timeline, self.model, self.voice_id = client, timeline, model, voice_id

    async def synthesize(self, text: str) -> None:
        request = {"input": text, "voice_id": self.voice_id, "model": self.model, "output_format": OUTPUT_FORMAT}
        cold = [False]
        audio = PCMMarks(self.timeline, SAMPLE_RATE, VENDOR)
        with http_errors(VENDOR, "audio"):
            async with self.client.stream("POST", PATH, cold, json=request, headers={"Accept": "audio/pcm"}) as response:
                stamped_http.mark_exchange(self.timeline, response, cold[0])
                if response.status_code != 200:
                    await response.aread()
                    raise http_failure(response.status_code, response.headers, VENDOR)
                kind = response.headers.get("content-type", "")
                if not _is_pcm(kind):
                    raise ProviderError(f"malformed response from {VENDOR} (content-type {kind[:60]!r}, not "
                                        f"{SAMPLE_RATE} Hz mono pcm)", "malformed")
                async for data, at in stamped_http.received(response):
                    audio.add(data, at)
        audio.end()
        self.timeline.mark(CLOSED)

    async def aclose(self) -> None:
        """Nothing to close: the warmed client is the adapter's, reused by the next item."""


def _is_pcm(content_type: str) -> bool:
    """Whether the answer is the pcm asked for: audio/L16 (or audio/pcm) whose rate and channels
    parameters, where given, are 24 kHz mono."""
    kind, *parameters = [part.strip().lower() for part in content_type.split(";")]
    given = dict(p.split("=", 1) for p in parameters if "=" in p)
    return kind in PCM_TYPES and given.get("rate", str(SAMPLE_RATE)) == str(SAMPLE_RATE) and given.get("channels", "1") == "1"
