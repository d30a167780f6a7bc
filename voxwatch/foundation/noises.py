"""Background noises the project generates itself (no recordings in the repo), for personas.

Each generator returns `n` samples of unit-RMS noise at `rate`, drawn only from `rng`, so a
(kind, seed) pair always gives the same noise. They stand in for the usual backgrounds of a
call: `pink` (a steady broadband hiss, degrade.py's), `brown` (a low rumble: traffic, a car),
`hum` (mains hum at 50 Hz and its harmonics, a cheap microphone near power), and `babble`
(a cafe: several talkers' worth of speech-shaped noise, each with its own syllable-rate
envelope and pauses, so the level fluctuates as talk does).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

MAINS_HZ = 50.0
HUM_HARMONICS = 8  # 50 ... 400 Hz, each 6 dB below the one before, as a rectifier's buzz falls off
BABBLE_TALKERS = 8
SYLLABLE_HZ = 4.0  # talk's amplitude modulation peaks near 4 Hz
SPEECH_BAND_HZ = (150.0, 4000.0)


def pink_noise(n: int, rng: np.random.Generator) -> np.ndarray:
    """Unit-RMS 1/f noise, shaped in the frequency domain."""
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.arange(spectrum.size, dtype=np.float64)
    f[0] = 1.0
    y = np.fft.irfft(spectrum / np.sqrt(f), n)
    return y / np.sqrt(np.mean(y * y))


def pink(n: int, rate: int, rng: np.random.Generator) -> np.ndarray:
    return pink_noise(n, rng)


def _unit(y: np.ndarray) -> np.ndarray:
    rms = np.sqrt(np.mean(y * y))
    return y / rms if rms > 0 else y


def brown_noise(n: int, rate: int, rng: np.random.Generator) -> np.ndarray:
    """1/f^2 noise, shaped in the frequency domain; nothing below 20 Hz (no DC drift)."""
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n, 1.0 / rate)
    shaped = np.where(f >= 20.0, spectrum / np.maximum(f, 20.0), 0.0)
    return _unit(np.fft.irfft(shaped, n))


def hum(n: int, rate: int, rng: np.random.Generator, mains_hz: float = MAINS_HZ) -> np.ndarray:
    """Mains hum: the fundamental and its harmonics at random phases, with a slow 1 dB wobble."""
    t = np.arange(n) / rate
    y = np.zeros(n)
    for k in range(1, HUM_HARMONICS + 1):
        if k * mains_hz < rate / 2:
            y += 10 ** (-6 * (k - 1) / 20) * np.sin(2 * np.pi * k * mains_hz * t + rng.uniform(0, 2 * np.pi))
    wobble = 1 + 0.06 * np.sin(2 * np.pi * rng.uniform(0.2, 0.5) * t + rng.uniform(0, 2 * np.pi))
    return _unit(y * wobble)


def _envelope(n: int, rate: int, rng: np.random.Generator) -> np.ndarray:
    """One talker's loudness over time: syllable-rate bumps, silent in pauses between phrases."""
    step = max(1, int(rate / (4 * SYLLABLE_HZ)))
    coarse = np.abs(rng.standard_normal(n // step + 2))
    phrases = np.repeat(rng.random(n // (rate // 2) + 2) < 0.75, rate // 2)  # half-second phrases, 1 in 4 a pause
    env = np.interp(np.arange(n), np.arange(coarse.size) * step, coarse)
    return env * phrases[:n]


def babble(n: int, rate: int, rng: np.random.Generator, talkers: int = BABBLE_TALKERS) -> np.ndarray:
    """Cafe babble: the sum of several talkers' band-limited, envelope-modulated noise."""
    from scipy.signal import butter, sosfilt

    high = min(SPEECH_BAND_HZ[1], rate / 2 * 0.9)
    sos = butter(4, (SPEECH_BAND_HZ[0], high), btype="bandpass", fs=rate, output="sos")
    y = np.zeros(n)
    for _ in range(talkers):
        y += sosfilt(sos, pink(n, rate, rng)) * _envelope(n, rate, rng)
    return _unit(y)


NOISES: dict[str, Callable[[int, int, np.random.Generator], np.ndarray]] = {
    "pink": pink,
    "brown": brown_noise,
    "hum": hum,
    "babble": babble,
}
"""kind -> generator(n, rate, rng): unit-RMS noise. A new kind changes no existing kind's samples."""


def generate(kind: str, n: int, rate: int, seed: int) -> np.ndarray:
    if kind not in NOISES:
        raise ValueError(f"unknown noise {kind!r} (one of {', '.join(NOISES)})")
    return NOISES[kind](n, rate, np.random.default_rng(seed))
