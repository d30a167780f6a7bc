"""OpenAI batch transcription (`POST /v1/audio/transcriptions`), as the vendor documents it.

The request is a multipart form: `file` (the audio file; WAV is one of the accepted formats),
`model` (`whisper-1`, `gpt-4o-transcribe`, ...) and `response_format` (`json`, the one format
every transcription model accepts); the answer is a JSON object whose `text` is the transcript.
Auth: `Authorization: Bearer <key>`. Errors come back as HTTP statuses with an `error` object
(401 bad key, 429 rate limit with Retry-After, 5xx server errors).

The same request, made synchronously, is `transcribe_text`: a fixed STT that can serve as the TTS
intelligibility instrument.
"""

from __future__ import annotations

import json

import httpx
import numpy as np

from voxwatch.foundation.audio import wav_bytes
from voxwatch.providers.base import ProviderError, language_copy
from voxwatch.providers.session.endpoints import HTTP_TIMEOUT_S, WarmClient, WarmClients, base_url, http_failure, http_url, is_loopback, require_key
from voxwatch.foundation.events import FINAL, Timeline
from voxwatch.providers.registry import ModelInfo

DEFAULT_URL = "https://api.openai.com"
PATH = "/v1/audio/transcriptions"
VENDOR = "OpenAI"


def transcript_of(body: bytes) -> str:
    """The `text` of a json transcription response; anything else breaks the protocol."""
    try:
        text = json.loads(body)["text"]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as exc:
        raise ProviderError(f"malformed response from {VENDOR} ({type(exc).__name__})", "malformed") from None
    if not isinstance(text, str):
        raise ProviderError(f"malformed response from {VENDOR} (text is not a string)", "malformed")
    return text


def auth_headers(vendor: str, needs_key: bool) -> dict[str, str]:
    """`Authorization: Bearer <key>`; none for a server registered as taking no key (key_env = "")."""
    return {"Authorization": f"Bearer {require_key(vendor).reveal()}"} if needs_key else {}


def server_url(model: ModelInfo) -> str:
    """VOXWATCH_<VENDOR>_BASE_URL, else the vendor's registered server (a self-hosted OpenAI-compatible
    one: registry `base_url`), else OpenAI's."""
    return base_url(model.vendor, model.base_url or DEFAULT_URL)


WHISPER_LANGUAGES = frozenset(
    "af am ar as az ba be bg bn bo br bs ca cs cy da de el en es et eu fa fi fo fr gl gu ha haw he hi hr ht hu hy id is "
    "it ja jw ka kk km kn ko la lb ln lo lt lv mg mi mk ml mn mr ms mt my ne nl nn no oc pa pl ps pt ro ru sa sd si sk sl "
    "sn so sq sr su sv sw ta te tg th tk tl tr tt uk ur uz vi yi yo zh yue".split())
"""Whisper's languages (its tokenizer's codes): OpenAI's transcription `language` parameter takes
these ISO 639 codes, and its speech models speak them (the Speech-to-text and Text-to-speech guides
point to Whisper's list)."""


class OpenAIBatchSTT:
    sample_rate = 16000
    language = "en"  # the form's `language` (ISO 639-1): the dataset's

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = server_url(model)
        self.emulator = is_loopback(self.url)
        self._clients = WarmClients(self.url, VENDOR, lambda: auth_headers(model.vendor, model.needs_key))
        self._warm: WarmClient | None = None
        self._sync: httpx.Client | None = None

    def in_language(self, language: str) -> "OpenAIBatchSTT | None":
        """A copy whose requests name `language` (the form's `language` field), or None outside Whisper's list."""
        return language_copy(self, language, WHISPER_LANGUAGES)

    async def connect(self, timeline: Timeline) -> "OpenAIBatchSTT":
        self._warm = await self._clients.get()
        return self

    def _form(self) -> dict[str, str]:
        return {"model": self.model.vendor_model, "response_format": "json", "language": self.language}

    async def transcribe(self, pcm16: bytes, timeline: Timeline) -> None:
        files = {"file": ("audio.wav", wav_bytes(pcm16, self.sample_rate), "audio/wav")}
        body = await self._warm.post_form(PATH, files, self._form(), timeline)
        timeline.mark(FINAL, text=transcript_of(body))

    def transcribe_text(self, audio16k: np.ndarray) -> str:
        """Float 16 kHz mono audio -> transcript, synchronously (the TTS intelligibility instrument)."""
        if self._sync is None:
            self._sync = httpx.Client(base_url=http_url(self.url), headers=auth_headers(self.model.vendor,
                                                                                     self.model.needs_key),
                                      http2=True, timeout=HTTP_TIMEOUT_S)
        pcm = (np.clip(np.asarray(audio16k, dtype=np.float64), -1.0, 32767 / 32768) * 32768).astype("<i2")
        files = {"file": ("audio.wav", wav_bytes(pcm.tobytes(), 16000), "audio/wav")}
        try:
            response = self._sync.post(PATH, files=files, data=self._form())
        except httpx.HTTPError as exc:
            raise ProviderError(f"{VENDOR} transcription failed: {type(exc).__name__}", "disconnected") from None
        if response.status_code >= 400:
            raise http_failure(response.status_code, response.headers, VENDOR)
        return transcript_of(response.content)

    def close(self) -> None:
        """Called once a run ends: the synchronous client is ours to close (async ones go with their loop)."""
        if self._sync is not None:
            self._sync.close()
            self._sync = None
