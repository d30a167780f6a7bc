"""Azure AI Speech text to speech over its REST API, as the vendor documents it.

Protocol facts followed ([T1] "Text to speech REST API", MicrosoftDocs/azure-ai-docs
articles/ai-services/speech-service/rest-text-to-speech.md @050f1826, published as
https://learn.microsoft.com/azure/ai-services/speech-service/rest-text-to-speech, read 2026-12-07;
docs/vendor-notes/tts-azure.md quotes it):
- `POST https://{region}.tts.speech.microsoft.com/cognitiveservices/v1` with `Ocp-Apim-Subscription-Key:
  <key>`, `Content-Type: application/ssml+xml`, `X-Microsoft-OutputFormat: <format>` and
  `User-Agent: <application name>` (all required). The region comes from VOXWATCH_AZURE_REGION.
- The body is SSML; the voice is named in `<voice name='...'>`. Prebuilt neural voices are native
  24 kHz: `raw-24khz-16bit-mono-pcm` is a streaming format (headerless little-endian int16); the
  `riff-*` formats are not (a WAV header first), so raw it is.
- The audio is the response body, chunked as it is produced ("can be played as it's transferred").
- Refusals: 400 (a missing or bad parameter), 401 (a bad key, or a key of another region), 415 (a
  wrong Content-Type), 429 (over the quota or request rate; Retry-After is not documented, and is
  read when sent), 502 and 503.

The Speech SDK also synthesizes over a WebSocket, but Microsoft documents no wire protocol for it
(only its SDK source says what it sends): the documented REST API is the one measured here.
"""

from __future__ import annotations

import os
from xml.sax.saxutils import escape, quoteattr

from voxwatch.foundation.events import AUDIO, CLOSED, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.keys import vendor_variable
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session import stamped_http
from voxwatch.providers.session.endpoints import (WarmClient, WarmClients, base_url, http_errors, http_failure,
                                                  is_loopback, require_key)

VENDOR = "Azure"
PATH = "/cognitiveservices/v1"
SAMPLE_RATE = 24000
OUTPUT_FORMAT = "raw-24khz-16bit-mono-pcm"
DEFAULT_VOICE = "en-US-AvaNeural"
USER_AGENT = "voxwatch"


def host() -> str:
    """The TTS host of the Speech resource's region (VOXWATCH_AZURE_REGION, as stt/azure.py reads it)."""
    region = os.environ.get(vendor_variable("azure", "REGION"), "").strip() or "eastus"
    return f"https://{region}.tts.speech.microsoft.com"


def ssml(text: str, voice: str, language: str = "en-US") -> str:
    """The request body: the text in one `<voice>`, escaped as XML."""
    return (f"<speak version='1.0' xml:lang={quoteattr(language)}><voice xml:lang={quoteattr(language)} "
            f"name={quoteattr(voice)}>{escape(text)}</voice></speak>")


class AzureTTS:
    """One warmed HTTP client per adapter, reused across items (a connection per item would time TLS)."""

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, host())
        self.emulator = is_loopback(self.url)
        self._clients = WarmClients(self.url, VENDOR, lambda: {
            "Ocp-Apim-Subscription-Key": require_key(model.vendor).reveal(), "User-Agent": USER_AGENT})

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "AzureTTSSession":
        """The client made once (per event loop), its connection warmed before t0."""
        require_key(self.model.vendor)  # a missing key fails every item, not only the first
        return AzureTTSSession(await self._clients.get(), timeline, voice or self.model.voice or DEFAULT_VOICE)

    async def aclose(self) -> None:
        await self._clients.aclose()

    def close(self) -> None:
        """For the runner's synchronous clean-up."""
        self._clients.close()


class AzureTTSSession:
    def __init__(self, client: WarmClient, timeline: Timeline, voice: str) -> None:
        self.client, self.timeline, self.voice = client, timeline, voice

    async def synthesize(self, text: str) -> None:
        cold = [False]
        offset, pending = 0, b""
        headers = {"Content-Type": "application/ssml+xml", "X-Microsoft-OutputFormat": OUTPUT_FORMAT}
        with http_errors(VENDOR, "audio"):
            async with self.client.stream("POST", PATH, cold, headers=headers,
                                          content=ssml(text, self.voice).encode("utf-8")) as response:
                stamped_http.mark_exchange(self.timeline, response, cold[0])
                if response.status_code != 200:
                    await response.aread()
                    raise http_failure(response.status_code, response.headers, VENDOR)
                kind = response.headers.get("content-type", "")
                if not kind.startswith(("audio/", "application/octet-stream")):
                    raise ProviderError(f"malformed response from {VENDOR} (content-type {kind[:60]!r})", "malformed")
                async for data, at in stamped_http.received(response):
                    data = pending + data
                    cut = len(data) - len(data) % 2  # whole int16 samples; an odd byte waits for the next read
                    data, pending = data[:cut], data[cut:]
                    if data:
                        self.timeline.mark(AUDIO, at_ns=at, sample_offset=offset, n_samples=len(data) // 2,
                                           sample_rate=SAMPLE_RATE, audio=data)
                        offset += len(data) // 2
        if pending:
            raise ProviderError(f"malformed audio from {VENDOR}: the pcm body ended mid-sample", "malformed")
        self.timeline.mark(CLOSED)

    async def aclose(self) -> None:
        """The client stays open for the next item."""
