"""Frame-by-frame sample-rate conversion of a live 16 kHz stream: each frame converted as it is
sent, continuous across frames (no edge at every frame, as converting each frame alone would make).
The OpenAI Realtime API takes 24 kHz (Upsampler); a phone line carries 8 kHz (Halver), and a raw
PCM agent takes either (providers/agents/line.py)."""

from __future__ import annotations

import numpy as np


class Upsampler:
    """16 kHz -> 24 kHz pcm16, chunk by chunk, continuous across chunks (linear interpolation).

    Output sample m sits at input position 2m/3; it is produced once both input samples around it
    have arrived, so a chunk yields 479-481 samples for 320 in, and nothing is lost between chunks.
    """

    def __init__(self) -> None:
        self._tail = np.zeros(0)  # input samples from index self._base on, still needed
        self._base = 0
        self._m = 0  # output samples produced so far

    def push(self, pcm16: bytes) -> bytes:
        buf = np.concatenate([self._tail, np.frombuffer(pcm16, dtype="<i2").astype(np.float64)])
        seen = self._base + buf.size
        if seen == 0:
            return b""
        end = (3 * (seen - 1)) // 2 + 1  # every output whose position is at most the last sample seen
        m = np.arange(self._m, end)
        left, frac = (2 * m) // 3 - self._base, ((2 * m) % 3) / 3.0
        right = np.minimum(left + 1, buf.size - 1)
        out = buf[left] * (1 - frac) + buf[right] * frac
        keep = (2 * end) // 3 - self._base
        self._tail, self._base, self._m = buf[keep:], self._base + keep, end
        return np.clip(np.round(out), -32768, 32767).astype("<i2").tobytes()


class Halver:
    """16 kHz -> 8 kHz int16, frame by frame and continuous across frames: a low-pass FIR (designed
    once) over the previous frame's tail and this one, every second sample kept."""

    TAPS = 63
    _fir: np.ndarray | None = None

    def __init__(self) -> None:
        self._tail = np.zeros(self.TAPS - 1)
        self._odd = 0  # where the next kept sample is in the next frame (0 or 1)

    @classmethod
    def design(cls) -> np.ndarray:
        """The filter, designed on first use (scipy's import takes a second: a line calls this before any clock)."""
        if cls._fir is None:
            from scipy.signal import firwin  # imported when first needed: scipy is slow to import

            cls._fir = firwin(cls.TAPS, 3400, fs=16000)  # the phone band's top
        return cls._fir

    def push(self, pcm16: bytes) -> bytes:
        x = np.frombuffer(pcm16, dtype="<i2").astype(np.float64)
        buf = np.concatenate([self._tail, x])
        y = np.convolve(buf, self.design(), mode="valid")  # one output per input sample of this frame
        self._tail = buf[-(self.TAPS - 1):]
        kept = y[self._odd::2]
        self._odd = (self._odd + x.size) % 2
        return np.clip(np.round(kept), -32768, 32767).astype("<i2").tobytes()
