"""Groq text-to-speech (`POST /openai/v1/audio/speech`, OpenAI-compatible; Canopy Labs' Orpheus), as the
vendor's SDK documents it (its speech-to-text is stt/groq.py).

Sources, read 2026-12-07: the official SDK groq/groq-python @9620fde0 (2026-08-18)
`src/groq/resources/audio/speech.py`, `src/groq/types/audio/speech_create_params.py` and its test
`tests/api_resources/audio/test_speech.py` [SDK] (Groq's own text-to-speech page was not in the stores
read). Protocol references only (facts, no code): Coval runner/src/coval_bench/providers/tts/groq.py
@bf95d1b1 (Apache-2.0) [CV]; Pipecat src/pipecat/services/groq/tts.py @acead050 (BSD-2) [PC].

- `POST https://api.groq.com/openai/v1/audio/speech` with a JSON body: `input`, `model`, `voice`
  (required), `response_format` (`flac` | `mp3` | `mulaw` | `ogg` | `wav`: no raw `pcm`), `sample_rate`
  (8000, 16000, 22050, 24000, 32000, 44100 or 48000), `speed` [SDK]. Auth: `Authorization: Bearer <key>`;
  the SDK asks `Accept: audio/wav` [SDK speech.py].
- The answer is the audio as the response body, streamed as it is made. Orpheus "only emits a ``wav``
  container" [CV]: here `wav` at 24 kHz (as Coval asks); the two references disagree on Orpheus' rate
  (Coval 24 kHz, Pipecat "a fixed 48kHz"), so the rate is read from the WAV header, which is
  authoritative (session/wav_stream.py; a streamed WAV's sizes may be placeholders, so the samples run
  to the end of the body). AUDIO is marked for the samples only: the header is not audio.
- "``input`` is capped at 200 characters server-side" [CV]. A longer prompt is sent as consecutive
  requests of at most `MAX_INPUT_CHARS`, cut at sentence ends (else at spaces), one after the other
  on the warm connection: what a caller has to do, and what the synthesis time measured includes
  (each piece adds its request's round trip). TTFA is the first piece's.
- Refusals are HTTP statuses with an OpenAI-style `error` object (400, 401, 404, 429 with
  `retry-after`, 5xx) [SDK _exceptions.py]; read by endpoints.http_failure. One attempt each: the
  SDK's hidden retries (two by default) are not made (see stt/groq.py).

Model names: the API's carry the publisher (`canopylabs/orpheus-v1-english`); a registry id holds one
slash, so the id names the model and `API_MODELS` gives the publisher.
"""

from __future__ import annotations

import re

from voxwatch.foundation.events import AUDIO, CLOSED, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session import stamped_http
from voxwatch.providers.session.endpoints import WarmClient, WarmClients, base_url, http_errors, http_failure, is_loopback, require_key
from voxwatch.providers.session.wav_stream import WavStream

VENDOR = "Groq"
DEFAULT_URL = "https://api.groq.com"
PATH = "/openai/v1/audio/speech"
SAMPLE_RATE = 24000  # asked for; the WAV header says what came
MAX_INPUT_CHARS = 200
DEFAULT_VOICE = "autumn"
API_MODELS = {"orpheus-v1-english": "canopylabs/orpheus-v1-english"}
"""The registry's model name -> the name Groq's API takes (publisher/model)."""


def pieces(text: str, limit: int = MAX_INPUT_CHARS) -> list[str]:
    """`text` in consecutive pieces of at most `limit` characters, cut after a sentence's end where one
    fits, else at a space (a word longer than `limit` is cut where it must)."""
    out: list[str] = []
    rest = " ".join(text.split())
    while len(rest) > limit:
        head = rest[:limit + 1]
        ends = [m.end() for m in re.finditer(r"[.!?;:](?=\s)", head)]
        cut = ends[-1] if ends else (head.rfind(" ") if head.rfind(" ") > 0 else limit)
        out.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    return out + ([rest] if rest else [])


class GroqTTS:
    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)
        self._clients = WarmClients(self.url, VENDOR, lambda: {"Authorization": f"Bearer {require_key(model.vendor).reveal()}",
                                                               "Accept": "audio/wav"})

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "GroqTTSSession":
        client = await self._clients.get()
        return GroqTTSSession(client, timeline, API_MODELS.get(self.model.vendor_model, self.model.vendor_model),
                              voice or self.model.voice or DEFAULT_VOICE)


class GroqTTSSession:
    def __init__(self, client: WarmClient, timeline: Timeline, model: str, voice: str) -> None:
        self.client, self.timeline, self.model, self.voice = client, timeline, model, voice

    async def synthesize(self, text: str) -> None:
        offset = 0
        for i, piece in enumerate(pieces(text)):
            offset = await self._speak(piece, offset, first=i == 0)
        self.timeline.mark(CLOSED)

    async def _speak(self, text: str, offset: int, first: bool) -> int:
        """One request; its samples marked from `offset` on (the reply's running sample count), returned."""
        request = {"model": self.model, "input": text, "voice": self.voice, "response_format": "wav",
                   "sample_rate": SAMPLE_RATE}
        cold = [False]
        wav = WavStream()
        with http_errors(VENDOR, "audio"):
            async with self.client.stream("POST", PATH, cold, json=request) as response:
                if first:  # the reply's request and answer: a later piece's are part of its synthesis
                    stamped_http.mark_exchange(self.timeline, response, cold[0])
                if response.status_code >= 400:
                    raise http_failure(response.status_code, response.headers, VENDOR)
                async for data, at in stamped_http.received(response):
                    offset = self._mark(wav, data, at, offset)
        try:
            wav.finish()
        except ValueError as exc:
            raise ProviderError(f"malformed audio from {VENDOR}: {exc}", "malformed") from None
        return offset

    def _mark(self, wav: WavStream, data: bytes, at: int, offset: int) -> int:
        try:
            pcm = wav.feed(data)
        except ValueError as exc:
            raise ProviderError(f"malformed audio from {VENDOR}: {exc}", "malformed") from None
        if pcm:
            self.timeline.mark(AUDIO, at_ns=at, sample_offset=offset, n_samples=len(pcm) // 2,
                               sample_rate=wav.sample_rate, audio=pcm)
        return offset + len(pcm) // 2

    async def aclose(self) -> None:
        """Nothing to close: the warmed client is the adapter's, reused by the next item."""
