"""eSpeak NG as a streaming TTS provider: one AUDIO event per chunk as it is synthesized."""

from __future__ import annotations

import asyncio
import copy

import numpy as np

from voxwatch.foundation.languages import is_english, primary

from voxwatch.foundation.events import AUDIO, CLOSED, REQUEST_SENT, Timeline
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.local.espeak_engine import EspeakEngine


ESPEAK_VOICES = {"zh": "cmn"}
"""Where eSpeak NG names a language's voice other than by its ISO 639-1 code."""


class EspeakTTS:
    language_voice: str | None = None  # the voice for a dataset's language other than English

    def __init__(self, model: ModelInfo) -> None:
        self.model = model

    def in_language(self, language: str) -> "EspeakTTS | None":
        """English as registered (the id's voice); another language spoken by eSpeak NG's voice of that
        name (its voices are named by ISO 639 code: es, fr, de, cmn for Mandarin), None when it has none."""
        if is_english(language):
            return self
        voice = ESPEAK_VOICES.get(primary(language), primary(language))
        if not EspeakEngine.get().has_voice(voice):
            return None
        copied = copy.copy(self)
        copied.language_voice = voice
        return copied

    @staticmethod
    def installed_version() -> str:
        return EspeakEngine.get().version

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "EspeakSession":
        engine = await asyncio.to_thread(EspeakEngine.get)
        return EspeakSession(engine, timeline, self.language_voice or voice or self.model.voice or "en-us")


class EspeakSession:
    def __init__(self, engine: EspeakEngine, timeline: Timeline, voice: str) -> None:
        self.engine, self.timeline, self.voice = engine, timeline, voice
        self._offset = 0

    def _chunk(self, samples: np.ndarray) -> None:
        self.timeline.mark(AUDIO, sample_offset=self._offset, n_samples=int(samples.size),
                           sample_rate=self.engine.sample_rate, audio=samples.astype("<i2").tobytes())
        self._offset += int(samples.size)

    async def synthesize(self, text: str) -> None:
        self._offset = 0
        await asyncio.to_thread(self.engine.synthesize, text, self.voice, self._chunk,
                                before_request=lambda: self.timeline.mark(REQUEST_SENT))
        self.timeline.mark(CLOSED)

    async def aclose(self) -> None:
        return None
