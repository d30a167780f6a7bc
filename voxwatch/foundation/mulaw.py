"""G.711 mu-law, the phone network's 8-bit codec: what a caller's audio is on the wire of a call
(a dataset's phone condition, a Twilio Media Stream's `media` payloads).

The encoder is the reference one (Sun's g711.c, which CPython's `audioop.lin2ulaw` also follows):
16-bit PCM to 14 bits, magnitude clipped at 8159, bias 0x21, then a 3-bit segment and a 4-bit step,
every bit inverted. `audioop` is gone from Python 3.13, so this is numpy; a test holds it to
`audioop` over all 65,536 inputs where `audioop` still exists.
"""

from __future__ import annotations

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


def from_wire(codes: bytes) -> bytes:
    """The mu-law bytes of a phone line -> little-endian int16 PCM bytes."""
    return decode(codes).astype("<i2").tobytes()
