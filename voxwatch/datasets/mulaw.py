"""G.711 mu-law, the phone network's 8-bit codec: what a caller's audio is on the wire of a call.

The encoder is the reference one (Sun's g711.c, which CPython's `audioop.lin2ulaw` also follows):
16-bit PCM to 14 bits, magnitude clipped at 8159, bias 0x21, then a 3-bit segment and a 4-bit step,
every bit inverted. `audioop` is gone from Python 3.13, so this is numpy; a test holds it to
`audioop` over all 65,536 inputs where `audioop` still exists.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

RATE = 8000
"""G.711's sample rate."""

_SEGMENT_ENDS = np.array([0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF], dtype=np.int32)


def encode(pcm16: np.ndarray) -> np.ndarray:
    """int16 samples -> mu-law codes (uint8), one per sample."""
    x = np.asarray(pcm16, dtype=np.int32) >> 2
    negative = x < 0
    mask = np.where(negative, 0x7F, 0xFF)
    mag = np.minimum(np.where(negative, -x, x), 8159) + 0x21
    segment = np.searchsorted(_SEGMENT_ENDS, mag, side="left")
    code = (np.minimum(segment, 7) << 4) | ((mag >> (np.minimum(segment, 7) + 1)) & 0x0F)
    code = np.where(segment >= 8, 0x7F, code)
    return (code ^ mask).astype(np.uint8)


def decode(codes: np.ndarray | bytes) -> np.ndarray:
    """mu-law codes -> int16 samples (G.711's decoding table)."""
    c = ~np.frombuffer(codes, dtype=np.uint8).astype(np.int32) if isinstance(codes, bytes) else \
        ~np.asarray(codes).astype(np.int32)
    c &= 0xFF
    exponent, mantissa = (c >> 4) & 0x07, c & 0x0F
    mag = (((mantissa << 3) + 0x84) << exponent) - 0x84
    return np.where(c & 0x80, -mag, mag).astype(np.int16)


def to_wire(pcm16: bytes) -> bytes:
    """Little-endian int16 PCM bytes -> the mu-law bytes a phone line carries."""
    return encode(np.frombuffer(pcm16, dtype="<i2")).tobytes()


def write_wav(path: Path, codes: np.ndarray, rate: int = RATE) -> None:
    """A mono G.711 mu-law WAV (format tag 7) holding exactly these codes, written by hand: a
    library's own encoder could round differently, and the file is what goes on the wire."""
    data = np.asarray(codes, dtype=np.uint8).tobytes()
    fmt = struct.pack("<HHIIHHH", 7, 1, rate, rate, 1, 8, 0)
    fact = struct.pack("<I", len(data))
    body = (b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"fact" + struct.pack("<I", 4) + fact
            + b"data" + struct.pack("<I", len(data)) + data + (b"\0" if len(data) & 1 else b""))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"RIFF" + struct.pack("<I", len(body)) + body)


def wav_codes(path: Path) -> bytes:
    """The data chunk of a mu-law WAV: the codes as stored."""
    raw = path.read_bytes()
    pos = 12
    while pos + 8 <= len(raw):
        cid, size = struct.unpack("<4sI", raw[pos:pos + 8])
        if cid == b"data":
            return raw[pos + 8:pos + 8 + size]
        pos += 8 + size + (size & 1)
    raise ValueError(f"{path}: no data chunk")
