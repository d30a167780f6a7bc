"""Audio in the catalog format: mono 16-bit PCM WAV at 16 kHz, -20 dBFS RMS with a peak guard."""

from __future__ import annotations

from math import gcd
from pathlib import Path

import numpy as np
import soundfile as sf
from scipy.signal import resample_poly

CATALOG_RATE = 16000
TARGET_RMS_DBFS = -20.0
PEAK_LIMIT_DBFS = -1.0


class AudioError(ValueError):
    """Audio that cannot be read or used; the message names the file."""


def read_mono(path: Path) -> tuple[np.ndarray, int]:
    """Any WAV or FLAC as float64 mono in [-1, 1] with its sample rate."""
    try:
        data, rate = sf.read(str(path), dtype="float64", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, OSError) as exc:
        raise AudioError(f"{path}: cannot read audio ({exc})") from None
    if data.size == 0:
        raise AudioError(f"{path}: no samples")
    return data.mean(axis=1), int(rate)


def resample(x: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    if rate_in == rate_out:
        return np.asarray(x, dtype=np.float64)
    g = gcd(rate_in, rate_out)
    return resample_poly(np.asarray(x, dtype=np.float64), rate_out // g, rate_in // g)


def rms_dbfs(x: np.ndarray) -> float:
    return float(20 * np.log10(max(np.sqrt(np.mean(np.square(x))), 1e-10)))


def normalize_loudness(x: np.ndarray, target_dbfs: float = TARGET_RMS_DBFS,
                       peak_limit_dbfs: float = PEAK_LIMIT_DBFS) -> np.ndarray:
    """Scale to the target RMS, less if that would push the peak above the limit."""
    x = np.asarray(x, dtype=np.float64)
    rms = np.sqrt(np.mean(x * x))
    if rms == 0:
        return x
    gain = 10 ** (target_dbfs / 20) / rms
    peak = np.max(np.abs(x)) * gain
    limit = 10 ** (peak_limit_dbfs / 20)
    if peak > limit:
        gain *= limit / peak
    return x * gain


def to_pcm16(x: np.ndarray) -> np.ndarray:
    return np.clip(np.round(np.asarray(x) * 32767.0), -32768, 32767).astype("<i2")


def write_wav(path: Path, x: np.ndarray, rate: int = CATALOG_RATE) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), to_pcm16(x), rate, subtype="PCM_16", format="WAV")


def read_pcm16(path: Path) -> tuple[np.ndarray, int]:
    try:
        data, rate = sf.read(str(path), dtype="int16", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, OSError) as exc:
        raise AudioError(f"{path}: cannot read audio ({exc})") from None
    if data.shape[1] != 1:
        raise AudioError(f"{path}: expected mono, found {data.shape[1]} channels")
    return data[:, 0].astype("<i2"), int(rate)
