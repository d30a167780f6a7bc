"""Fish Audio text to speech over its HTTP streaming endpoint (`POST /v1/tts`), as the vendor documents it.

Protocol facts (copied as facts; sources: the vendor's docs repository fishaudio/docs
.mintlify/skills/fish-audio-api/SKILL.md @ 2c47b351 ("condenses" its openapi.json: endpoint, headers,
TTSRequest fields, errors), https://docs.fish.audio/developer-guide/models-pricing/models-overview
and pricing-and-rate-limits; the official SDK fishaudio/fish-audio-python @ 999c59d5 (2026-03-10)
src/fishaudio/resources/tts.py, types/tts.py, tests/unit/test_tts.py; Coval's runner
providers/tts/fishaudio.py @ bf95d1b, Apache-2.0, read as a reference for the same facts):

- `POST https://api.fish.audio/v1/tts`, `Authorization: Bearer <key>`, `Content-Type:
  application/json` (or application/msgpack, which only inline reference audio needs; the SDK
  always sends msgpack). The model is a header, `model: <id>` (s1, s2-pro, s2.1-pro, s2.1-pro-free,
  drama-3-preview); "if omitted or unrecognized, the server falls back to s2.1-pro", so a wrong id
  is measured as another model without an error: the adapter sends the registry's id exactly.
- The body (TTSRequest): `text`, `reference_id` (the voice: a voice model's id), `format` (wav, pcm,
  mp3, opus; default mp3), `sample_rate` (default 44100, 48000 for opus: a client that assumes
  another rate reads every duration wrong, so the adapter names 24000), `latency` (low, normal,
  balanced; default normal, which Coval found buffers whole segments, folding generation into the
  first audio's time: the adapter asks for balanced, the SDK's default), chunk_length, prosody, ...
- The response: the audio bytes in the requested format, streamed (`Transfer-Encoding: chunked`),
  "no JSON wrapper on success". `pcm` is headerless 16-bit mono (the reference mirrors of the HTTP
  page; Coval reads it so); the adapter reads it content-decoded (`stamped_http.received`).
- Errors are HTTP statuses with a JSON body `{status, message}` (401 key, 402 out of credit, 404, 429;
  422 validation is an array); errors "from the network edge" (some 413 and 5xx) may not be JSON.
  Concurrency is limited by plan (5, 15 or 50 concurrent requests); Retry-After is not documented.
- The language is the text's (no language field): the adapter speaks English only, the voices'
  other languages not having been confirmed here.

The WebSocket (`/v1/tts/live`) frames everything in MessagePack, which voxwatch does not depend on;
the HTTP endpoint takes the same request and streams the same audio.
"""

from __future__ import annotations

from voxwatch.foundation.events import CLOSED, Timeline
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session import stamped_http
from voxwatch.providers.session.endpoints import WarmClient, WarmClients, base_url, is_loopback, posted, require_key
from voxwatch.providers.session.pcm import PCMMarks

VENDOR = "Fish Audio"
DEFAULT_URL = "https://api.fish.audio"
PATH = "/v1/tts"
SAMPLE_RATE = 24000
DEFAULT_VOICE = "802e3bc2b27e49c2995d23ef70e6ac89"  # the voice model of the vendor's WebSocket example


class FishAudioTTS:
    """One warmed HTTP client per adapter, reused across items (a connection per item would time TLS)."""

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)
        self._clients = WarmClients(self.url, VENDOR, lambda: {
            "Authorization": f"Bearer {require_key(model.vendor).reveal()}", "model": model.vendor_model})

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "FishAudioSession":
        require_key(self.model.vendor)  # a missing key fails every item, not only the first
        return FishAudioSession(await self._clients.get(), timeline, voice or self.model.voice or DEFAULT_VOICE)

    async def aclose(self) -> None:
        await self._clients.aclose()

    def close(self) -> None:
        """For the runner's synchronous clean-up."""
        self._clients.close()


class FishAudioSession:
    def __init__(self, client: WarmClient, timeline: Timeline, voice: str) -> None:
        self.client, self.timeline, self.voice = client, timeline, voice

    async def synthesize(self, text: str) -> None:
        request = {"text": text, "reference_id": self.voice, "format": "pcm", "sample_rate": SAMPLE_RATE,
                   "latency": "balanced"}
        audio = PCMMarks(self.timeline, SAMPLE_RATE, VENDOR)
        async with posted(self.client, PATH, self.timeline, VENDOR, "audio", json=request) as response:
            async for data, at in stamped_http.received(response):
                audio.add(data, at)
        audio.end()
        self.timeline.mark(CLOSED)

    async def aclose(self) -> None:
        """The client stays open for the next item."""
