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


def lowpass_fir(taps: int, cutoff_hz: float, rate: int) -> np.ndarray:
    """A linear-phase low-pass FIR: a Hamming-windowed sinc, unit gain at DC (what scipy's
    `firwin(taps, cutoff_hz, fs=rate)` designs, to rounding). numpy alone: scipy's import takes a
    second or more, and a line designs its filter before a call it must answer at once."""
    c = cutoff_hz / (rate / 2)
    m = np.arange(taps) - (taps - 1) / 2
    h = c * np.sinc(c * m) * np.hamming(taps)
    h = h / h.sum()
    h.setflags(write=False)
    return h


class Halver:
    """16 kHz -> 8 kHz int16, frame by frame and continuous across frames: a low-pass FIR (designed
    once, when this module loads, never on a call's path) over the previous frame's tail and this
    one, every second sample kept."""

    TAPS = 63
    FIR = lowpass_fir(TAPS, 3400, 16000)  # the phone band's top

    def __init__(self) -> None:
        self._tail = np.zeros(self.TAPS - 1)
        self._odd = 0  # where the next kept sample is in the next frame (0 or 1)

    def push(self, pcm16: bytes) -> bytes:
        x = np.frombuffer(pcm16, dtype="<i2").astype(np.float64)
        buf = np.concatenate([self._tail, x])
        y = np.convolve(buf, self.FIR, mode="valid")  # one output per input sample of this frame
        self._tail = buf[-(self.TAPS - 1):]
        kept = y[self._odd::2]
        self._odd = (self._odd + x.size) % 2
        return np.clip(np.round(kept), -32768, 32767).astype("<i2").tobytes()
