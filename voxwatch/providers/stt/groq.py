"""Groq speech-to-text (`POST /openai/v1/audio/transcriptions`, OpenAI-compatible batch), as the vendor
documents it (its speech endpoint is tts/groq.py).

Sources, read 2026-12-07: https://console.groq.com/docs/speech-text [D1] and
https://console.groq.com/docs/rate-limits [D2] (stored copies); the official SDK groq/groq-python
@9620fde0 (2026-08-18) `src/groq/types/audio/transcription_create_params.py`, `transcription.py`,
`_base_client.py`, `_exceptions.py` [S1]. Protocol reference only: Pipecat
src/pipecat/services/groq/stt.py @acead050 (BSD-2).

- `POST https://api.groq.com/openai/v1/audio/transcriptions`, `multipart/form-data`, one JSON answer
  (no streamed results) [D1]. Auth: `Authorization: Bearer <key>`.
- Form fields [S1 TranscriptionCreateParams]: `model` (required), `file` ("flac, mp3, mp4, mpeg, mpga,
  m4a, ogg, wav, or webm"), `language` (ISO-639-1), `response_format` (`json` | `text` |
  `verbose_json`), ... Here: the clip as 16 kHz mono WAV ("Whisper will downsample audio to 16,000 Hz
  mono before transcribing" [D1], so nothing is gained by sending more), `response_format: json`,
  `language` (the dataset's: English), and no word timestamps ("generating word timestamps incurs
  additional latency" [S1]).
- Answer: `{"text": "...", "x_groq": {"id": "req_..."}}` [D1; S1 `Transcription.text`].
- Refusals are HTTP statuses with an OpenAI-style `{"error": {"message", "type", "code"}}` (400, 401,
  403, 404, 409, 422, 429, >= 500: S1 _exceptions.py); a 429 carries `retry-after` (seconds) [S1
  `_parse_retry_after_header`, D2]. endpoints.http_failure reads them.
- Retries: the official SDK retries 408/409/429/>=500 twice by default, after up to 60 s of
  `retry-after` [S1 _base_client.py, _constants.py]; a latency measured through it would include
  hidden retries. This adapter does not use the SDK: its httpx transport makes one attempt (httpx
  retries nothing by default, `retries=0`), so a refusal is the row's failure, never a slower success.
"""

from __future__ import annotations

import json

from voxwatch.foundation.audio import wav_bytes
from voxwatch.foundation.events import FINAL, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.endpoints import WarmClient, WarmClients, base_url, is_loopback, require_key

VENDOR = "Groq"
DEFAULT_URL = "https://api.groq.com"
PATH = "/openai/v1/audio/transcriptions"


def auth_headers(vendor: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {require_key(vendor).reveal()}"}


def transcript_of(body: bytes) -> str:
    """The `text` of a json transcription; anything else breaks the protocol."""
    try:
        text = json.loads(body)["text"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ProviderError(f"malformed response from {VENDOR} ({type(exc).__name__})", "malformed") from None
    if not isinstance(text, str):
        raise ProviderError(f"malformed response from {VENDOR} (text is not a string)", "malformed")
    return text


class GroqBatchSTT:
    sample_rate = 16000
    language = "en"

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)
        self._clients = WarmClients(self.url, VENDOR, lambda: auth_headers(model.vendor))
        self._warm: WarmClient | None = None

    async def connect(self, timeline: Timeline) -> "GroqBatchSTT":
        self._warm = await self._clients.get()
        return self

    async def transcribe(self, pcm16: bytes, timeline: Timeline) -> None:
        files = {"file": ("audio.wav", wav_bytes(pcm16, self.sample_rate), "audio/wav")}
        form = {"model": self.model.vendor_model, "response_format": "json", "language": self.language}
        body = await self._warm.post_form(PATH, files, form, timeline)
        timeline.mark(FINAL, text=transcript_of(body))
