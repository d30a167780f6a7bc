"""Signal-to-noise ratio over the speech frames (METHOD "Conversations", personas).

A persona's background noise is mixed at a stated SNR, and the SNR is measured where the caller
speaks: over the whole clip, the lead-in and trailing silences would count as "speech" power of
nothing, and a clip with more silence would be mixed quieter for the same stated SNR. Speech
frames are an energy mask of the clean speech (20 ms frames within 40 dB of its loudest frame),
not the VAD: the clean signal is known, and webrtcvad's hangover would count the pauses after
words as speech.
"""

from __future__ import annotations

import numpy as np

FRAME_MS = 20
RANGE_DB = 40.0  # a frame this far below the loudest one is silence (or the synthesis noise floor)


def speech_mask(speech: np.ndarray, rate: int, frame_ms: int = FRAME_MS, range_db: float = RANGE_DB) -> np.ndarray:
    """One boolean per sample: inside a frame of the clean speech within range_db of its loudest frame."""
    x = np.asarray(speech, dtype=np.float64)
    n = max(1, rate * frame_ms // 1000)
    frames = -(-x.size // n)
    padded = np.zeros(frames * n)
    padded[: x.size] = x
    power = np.mean(padded.reshape(frames, n) ** 2, axis=1)
    if not power.size or power.max() <= 0:
        return np.zeros(x.size, dtype=bool)
    loud = power >= power.max() * 10 ** (-range_db / 10)
    return np.repeat(loud, n)[: x.size]


def snr_db(speech: np.ndarray, noise: np.ndarray, mask: np.ndarray) -> float:
    """10 log10 of the speech power over the noise power, both over the masked samples."""
    s = np.asarray(speech, dtype=np.float64)[mask]
    v = np.asarray(noise, dtype=np.float64)[mask]
    if s.size == 0:
        raise ValueError("no speech frames: the SNR is undefined")
    noise_power = float(np.mean(v * v))
    if noise_power == 0:
        return float("inf")
    return float(10 * np.log10(np.mean(s * s) / noise_power))


def noise_gain(speech: np.ndarray, noise: np.ndarray, mask: np.ndarray, target_db: float) -> float:
    """The factor that puts `noise` at target_db below `speech` over the masked samples (snr_db)."""
    current = snr_db(speech, noise, mask)
    if not np.isfinite(current):
        raise ValueError("the noise is silent over the speech frames: no gain reaches an SNR")
    return float(10 ** ((current - target_db) / 20))
