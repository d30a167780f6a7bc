"""eSpeak NG as a streaming TTS provider: one AUDIO event per chunk as it is synthesized."""

from __future__ import annotations

import asyncio

import numpy as np

from ..events import AUDIO, CLOSED, REQUEST_SENT, Timeline
from ..registry import ModelInfo
from .espeak_engine import EspeakEngine


class EspeakTTS:
    def __init__(self, model: ModelInfo) -> None:
        self.model = model

    @staticmethod
    def installed_version() -> str:
        return EspeakEngine.get().version

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "EspeakSession":
        engine = await asyncio.to_thread(EspeakEngine.get)
        return EspeakSession(engine, timeline, voice or self.model.voice or "en-us")


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
