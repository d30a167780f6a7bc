"""Test signals with a known answer: a tone whose onset is exact to the sample."""

from __future__ import annotations

import numpy as np


def tone(sample_rate: int, onset_s: float, duration_s: float, total_s: float, freq: float = 220.0,
         amplitude: float = 0.3) -> np.ndarray:
    """Silence, then a sine that starts sharply at onset_s."""
    x = np.zeros(int(round(total_s * sample_rate)))
    start = int(round(onset_s * sample_rate))
    n = int(round(duration_s * sample_rate))
    t = np.arange(n) / sample_rate
    x[start:start + n] = amplitude * np.sin(2 * np.pi * freq * t)
    return x
