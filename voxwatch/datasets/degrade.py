"""The degraded conditions: named, deterministic transforms of a clean clip.

Each transform takes float audio at 16 kHz, the clip's speech anchors and a seed derived from
the utterance id, and returns new audio and anchors. The anchors are the clean clip's, carried
through the transform (shifted where time is inserted): the caller's words are where they were,
even when noise or reverberation would fool a VAD.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

from voxwatch.datasets import mulaw
from voxwatch.foundation.audio import normalize_loudness, resample, to_pcm16
from voxwatch.foundation.noises import pink_noise

RATE = 16000


@dataclass(frozen=True)
class Degraded:
    audio: np.ndarray
    speech_start: float
    speech_end: float


def seed_for(transform: str, utterance_id: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{transform}:{utterance_id}".encode()).digest()[:8], "little")


def clipping(x: np.ndarray, start: float, end: float, rng: np.random.Generator, gain_db: float = 15.0) -> Degraded:
    """Overdriven input: amplified into hard clipping at full scale, then back to catalog loudness."""
    y = np.clip(x * 10 ** (gain_db / 20), -1.0, 1.0)
    return Degraded(normalize_loudness(y), start, end)


def farfield(x: np.ndarray, start: float, end: float, rng: np.random.Generator,
             rt60_s: float = 0.6, drr_db: float = 0.0) -> Degraded:
    """A distant talker: convolution with a synthetic exponentially decaying room impulse response."""
    n = int(rt60_s * 1.2 * RATE)
    tail = rng.standard_normal(n) * np.exp(-6.908 * np.arange(n) / (rt60_s * RATE))
    tail[0] = 0.0
    direct_energy = np.sum(tail ** 2) * 10 ** (drr_db / 10)
    h = tail.copy()
    h[0] = np.sqrt(direct_energy)
    from scipy.signal import fftconvolve  # here, so a one-shot CLI command starts without scipy (test_startup)

    y = fftconvolve(x, h)[: x.size]
    return Degraded(normalize_loudness(y), start, end)


def noisegap(x: np.ndarray, start: float, end: float, rng: np.random.Generator,
             gap_s: float = 0.5, burst_s: float = 0.12, burst_dbfs: float = -30.0) -> Degraded:
    """A dropout mid-utterance (silence inserted at the quietest point of the speech) and noise bursts
    in the leading silence and inside the gap."""
    s0, s1 = int(start * RATE), int(end * RATE)
    lo, hi = s0 + (s1 - s0) * 3 // 10, s0 + (s1 - s0) * 7 // 10
    win = RATE // 50
    energy = np.convolve(x[lo:hi] ** 2, np.ones(win), mode="valid") if hi - lo > win else np.zeros(1)
    cut = lo + int(np.argmin(energy)) + win // 2 if hi - lo > win else (s0 + s1) // 2
    gap = np.zeros(int(gap_s * RATE))
    burst_n = int(burst_s * RATE)
    level = 10 ** (burst_dbfs / 20)
    gap[(gap.size - burst_n) // 2:(gap.size + burst_n) // 2] += pink_noise(burst_n, rng) * level
    y = np.concatenate([x[:cut], gap, x[cut:]])
    if s0 > burst_n + RATE // 20:
        at = int(rng.integers(0, s0 - burst_n - RATE // 20))
        y[at:at + burst_n] += pink_noise(burst_n, rng) * level
    return Degraded(y, start, end + gap.size / RATE)


def phone_line(x: np.ndarray, rate: int = mulaw.RATE, band_hz: tuple[float, float] = (300.0, 3400.0)) -> np.ndarray:
    """What a phone line carries of 16 kHz audio: 8 kHz, the 300-3400 Hz band, G.711 mu-law codes."""
    narrow = resample(x, RATE, rate)
    from scipy.signal import butter, sosfiltfilt  # here, as fftconvolve above

    sos = butter(4, band_hz, btype="bandpass", fs=rate, output="sos")
    return mulaw.encode(to_pcm16(sosfiltfilt(sos, narrow)))


def phonecodec(x: np.ndarray, start: float, end: float, rng: np.random.Generator,
               rate: int = 8000, band_hz: tuple[float, float] = (300.0, 3400.0)) -> Degraded:
    """A phone call heard back at 16 kHz: the phone line's audio decoded and upsampled."""
    decoded = mulaw.decode(phone_line(x, rate, band_hz)).astype(np.float64) / 32768.0
    y = resample(decoded, rate, RATE)[: x.size]
    return Degraded(normalize_loudness(y), start, end)


def noise(x: np.ndarray, start: float, end: float, rng: np.random.Generator, snr_db: float = 10.0) -> Degraded:
    """Steady background noise (pink) at a stated SNR over the speech span."""
    speech = x[int(start * RATE):max(int(end * RATE), int(start * RATE) + 1)]
    speech_rms = np.sqrt(np.mean(speech ** 2))
    y = x + pink_noise(x.size, rng) * speech_rms * 10 ** (-snr_db / 20)
    return Degraded(normalize_loudness(y), start, end)


TRANSFORMS: dict[str, tuple[Callable[..., Degraded], dict]] = {
    "clipping": (clipping, {"gain_db": 15.0}),
    "farfield": (farfield, {"rt60_s": 0.6, "drr_db": 0.0}),
    "noisegap": (noisegap, {"gap_s": 0.5, "burst_s": 0.12, "burst_dbfs": -30.0}),
    "phonecodec": (phonecodec, {"rate": 8000, "band_hz": (300.0, 3400.0)}),
    "noise": (noise, {"snr_db": 10.0}),
}


def apply(name: str, x: np.ndarray, start: float, end: float, utterance_id: str) -> Degraded:
    func, params = TRANSFORMS[name]
    return func(x, start, end, np.random.default_rng(seed_for(name, utterance_id)), **params)
