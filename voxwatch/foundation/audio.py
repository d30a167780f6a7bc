"""Audio in the catalog format: mono 16-bit PCM WAV at 16 kHz, -20 dBFS RMS with a peak guard."""

from __future__ import annotations

import io
import struct
import wave
from dataclasses import dataclass
from functools import lru_cache
from math import gcd
from pathlib import Path

import numpy as np
import soundfile as sf

CATALOG_RATE = 16000
TARGET_RMS_DBFS = -20.0
PEAK_LIMIT_DBFS = -1.0


class AudioError(ValueError):
    """Audio that cannot be read or used; the message names the file."""


MIN_RATE, MAX_RATE = 8_000, 192_000
MAX_CHANNELS = 32
MAX_SECONDS = 600
MAX_SAMPLES = 64 * 2**20
"""Frames times channels decoded at once (256 MiB as float32): 600 s of 48 kHz stereo fits."""
FORMATS = ("WAV", "WAVEX", "RF64", "FLAC")
_RIFF = {b"RIFF": "<", b"RF64": "<", b"BW64": "<", b"RIFX": ">"}
_MAX_CHUNKS = 1000


@dataclass(frozen=True)
class Header:
    """What a file's header claims, checked before a sample is decoded."""
    format: str
    rate: int
    channels: int
    frames: int
    missing_bytes: int  # WAV: audio its data chunk declares past the end of the file (a truncated file)


def probe(path: Path) -> Header:
    """The header, sanity-checked before anything is allocated: a WAV or FLAC file, a sample rate of
    8-192 kHz, 1-32 channels, at most 600 s and MAX_SAMPLES samples. A header that claims 1 Hz would
    otherwise make the resampler ask for tens of gigabytes."""
    try:
        info = sf.info(str(path))
    except (sf.LibsndfileError, RuntimeError, OSError) as exc:
        raise AudioError(f"{path}: cannot read audio ({_reason(exc)})") from None
    if info.format not in FORMATS:
        raise AudioError(f"{path}: {info.format_info} audio; expected WAV or FLAC")
    if not MIN_RATE <= info.samplerate <= MAX_RATE:
        raise AudioError(f"{path}: the header claims a sample rate of {info.samplerate} Hz; "
                         f"expected {MIN_RATE}-{MAX_RATE} Hz")
    if not 1 <= info.channels <= MAX_CHANNELS:
        raise AudioError(f"{path}: the header claims {info.channels} channels; expected 1-{MAX_CHANNELS}")
    if info.frames <= 0:
        raise AudioError(f"{path}: no samples")
    if info.frames > MAX_SECONDS * info.samplerate:
        raise AudioError(f"{path}: the header claims {info.frames / info.samplerate:.0f} s of audio; "
                         f"a clip may last at most {MAX_SECONDS} s")
    if info.frames * info.channels > MAX_SAMPLES:
        raise AudioError(f"{path}: {info.frames} frames of {info.channels} channels is more than "
                         f"{MAX_SAMPLES} samples to decode at once")
    missing = _wav_missing_bytes(path) if info.format != "FLAC" else 0
    return Header(info.format, int(info.samplerate), int(info.channels), int(info.frames), missing)


def _reason(exc: Exception) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _wav_missing_bytes(path: Path) -> int:
    """How many bytes the data chunk declares past the end of the file (0 when all there). libsndfile
    quietly reads what is there, so a half-copied file would import as a shorter clip."""
    size = path.stat().st_size
    with path.open("rb") as f:
        order = _RIFF.get(f.read(12)[:4])
        if order is None:
            return 0
        pos, ds64_data = 12, None
        for _ in range(_MAX_CHUNKS):
            if pos + 8 > size:
                return 0
            f.seek(pos)
            cid, csize = struct.unpack(order + "4sI", f.read(8))
            if cid == b"ds64" and csize >= 16:  # RF64: the real sizes, 64-bit
                ds64_data = struct.unpack(order + "QQ", f.read(16))[1]
            if cid == b"fmt " and csize >= 16:
                _check_fmt(path, *struct.unpack(order + "HHIIHH", f.read(16)))
            if cid == b"data":
                declared = ds64_data if csize == 0xFFFFFFFF and ds64_data is not None else csize
                return max(0, pos + 8 + declared - size)
            pos += 8 + csize + (csize & 1)
    raise AudioError(f"{path}: no data chunk among the first {_MAX_CHUNKS} chunks")


_PCM_TAGS = {1: (8, 16, 24, 32), 3: (32, 64), 0xFFFE: (8, 16, 24, 32, 64)}  # PCM, IEEE float, extensible


def _check_fmt(path: Path, tag: int, channels: int, rate: int, byte_rate: int, align: int, bits: int) -> None:
    """A PCM or float fmt chunk must agree with itself (libsndfile reads some that do not, as noise)."""
    if tag in _PCM_TAGS and (bits not in _PCM_TAGS[tag] or align != channels * bits // 8):
        raise AudioError(f"{path}: an inconsistent WAV header ({bits} bits per sample, {channels} channels, "
                         f"{align} bytes per frame)")


def decode_mono(path: Path, header: Header, allow_truncated: bool = False) -> tuple[np.ndarray, bool]:
    """The probed file as float64 mono in [-1, 1], and whether it was complete. A truncated file
    (shorter than its header says) is refused unless allow_truncated, then what is there is kept."""
    if header.missing_bytes and not allow_truncated:
        raise AudioError(f"{path}: truncated: its header declares {header.missing_bytes} more bytes of audio than "
                         f"the file holds (copy it again, or import what is there with --allow-truncated)")
    try:
        data, _ = sf.read(str(path), frames=header.frames, dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, OSError) as exc:
        raise AudioError(f"{path}: cannot read audio ({_reason(exc)})") from None
    if data.shape[0] == 0:
        raise AudioError(f"{path}: no samples")
    short = data.shape[0] < header.frames
    if short and not allow_truncated:
        raise AudioError(f"{path}: truncated: {data.shape[0]} of the {header.frames} frames its header declares "
                         f"(copy it again, or import what is there with --allow-truncated)")
    return data.mean(axis=1, dtype=np.float64), not (short or header.missing_bytes)


def resample(x: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    """scipy's `resample_poly` with its default filter (a Kaiser-windowed sinc, beta 5), in numpy:
    the same output to rounding (tests/test_off_the_clock.py holds it to scipy's within 1e-12), without
    importing scipy.signal, which costs over a second of CPU in each process that resamples (every
    emulator that speaks). The filter's phases are designed once per rate pair: a call recording
    resamples each of a reply's chunks."""
    if rate_in == rate_out:
        return np.asarray(x, dtype=np.float64)
    g = gcd(rate_in, rate_out)
    up, down = rate_out // g, rate_in // g
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"resample takes mono audio (one dimension), not an array of shape {x.shape}")
    phases, pre_remove = _polyphase(up, down)
    n_out = -(-x.size * up // down)
    taps = phases.shape[1]
    out = np.empty(n_out)
    for first in range(0, n_out, _BLOCK):
        k = np.arange(first, min(n_out, first + _BLOCK)) + pre_remove  # the outputs' places in upfirdn's output
        base, phase = np.divmod(k * down, up)
        at = base[:, None] - np.arange(taps)[None, :]  # the input samples each output sums
        inside = (at >= 0) & (at < x.size)
        out[first:first + k.size] = np.einsum("ij,ij->i", np.where(inside, x[np.clip(at, 0, x.size - 1)], 0.0),
                                              phases[phase])
    return out


_BLOCK = 8192  # outputs computed at once: bounds the gather's memory (8,192 x taps floats)


@lru_cache(maxsize=16)
def _polyphase(up: int, down: int) -> tuple[np.ndarray, int]:
    """`resample_poly`'s filter for these factors (scipy 1.x: 20 x max + 1 taps, cutoff 1 / max of the
    Nyquist, Kaiser beta 5, unit DC gain, times up), zero-padded in front as it pads it, cut into its
    `up` phases (phase p, tap t: h[p + up * t]); and how many leading outputs it drops."""
    most = max(up, down)
    half = 10 * most
    c = 1.0 / most
    m = np.arange(2 * half + 1) - half
    h = c * np.sinc(c * m) * np.kaiser(2 * half + 1, 5.0)
    h = h / h.sum() * up
    pre_pad = down - half % down
    h = np.concatenate([np.zeros(pre_pad), h])
    taps = -(-h.size // up)
    phases = np.zeros(up * taps)
    phases[:h.size] = h
    phases = phases.reshape(taps, up).T.copy()
    phases.setflags(write=False)
    return phases, (half + pre_pad) // down


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


def write_pcm16_file(path: Path, x: np.ndarray, rate: int = CATALOG_RATE) -> None:
    """16-bit PCM in the container the path's suffix names (.wav or .flac): FLAC holds the same samples in
    about half the bytes, for the bundled recordings."""
    container = {".wav": "WAV", ".flac": "FLAC"}.get(path.suffix.lower())
    if container is None:
        raise AudioError(f"{path}: expected a .wav or .flac file name")
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), to_pcm16(x), rate, subtype="PCM_16", format=container)


def read_pcm16(path: Path) -> tuple[np.ndarray, int]:
    try:
        data, rate = sf.read(str(path), dtype="int16", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, OSError) as exc:
        raise AudioError(f"{path}: cannot read audio ({exc})") from None
    if data.shape[1] != 1:
        raise AudioError(f"{path}: expected mono, found {data.shape[1]} channels")
    return data[:, 0].astype("<i2"), int(rate)


def wav_bytes(pcm16: bytes, sample_rate: int) -> bytes:
    """Mono 16-bit PCM in a WAV container, in memory: an upload needs a file format, and WAV adds only a header
    (OpenAI's transcription upload, Zhipu's input audio)."""
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sample_rate)
        w.writeframes(pcm16)
    return out.getvalue()
