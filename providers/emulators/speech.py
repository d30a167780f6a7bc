"""The audio an emulator speaks: a sharp-onset tone (exact onset for clock tests) or the text
spoken by the local eSpeak NG engine (so the TTS intelligibility instrument has words to hear)."""

from __future__ import annotations

import numpy as np

from voxwatch.datasets.audio import resample


def speech_pcm(text: str, rate: int, voice: str = "tone", speech_ms: float = 600.0,
               leading_silence_ms: float = 0.0) -> tuple[np.ndarray, int]:
    """(int16 samples, index of the first speech sample) at `rate`: leading silence, then speech."""
    silence = np.zeros(int(round(leading_silence_ms * rate / 1000)))
    if voice == "espeak":
        from voxwatch.providers.local.espeak_engine import EspeakEngine

        engine = EspeakEngine.get()
        speech = resample(engine.render(text, "en-us").astype(np.float64) / 32768.0, engine.sample_rate, rate)
        nz = np.flatnonzero(np.abs(speech) > 1e-3)
        speech = speech[nz[0]:] if nz.size else speech  # the speech starts where the silence ends
    else:
        t = np.arange(int(round(speech_ms * rate / 1000))) / rate
        speech = 0.3 * np.sin(2 * np.pi * 220.0 * t)
    pcm = (np.clip(np.concatenate([silence, speech]), -1, 1) * 32767).astype("<i2")
    return pcm, silence.size
