"""Audible-onset detector (METHOD "Audible-onset detector").

The detector scans 10 ms windows at a 1 ms hop; a window is audible when its mean-removed RMS
is above -40 dBFS, and a run of audible windows counts once it spans at least 50 ms. The start of
that first window is up to one window early (the window turns audible as soon as enough of the
signal has entered it), so the onset is refined to the first sample inside the window that rises
above the noise floor measured just before it. Vectorised with cumulative sums: no Python loop
over windows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ONSET_VERSION = "onset-2"


@dataclass(frozen=True)
class OnsetParams:
    window_s: float = 0.010
    hop_s: float = 0.001
    threshold_rms: float = 0.01  # -40 dBFS
    sustain_s: float = 0.050
    floor_lookback_s: float = 0.100
    floor_factor: float = 4.0
    min_sample_level: float = 0.001  # -60 dBFS: the quietest sample that can start an onset


@dataclass(frozen=True)
class Levels:
    """Peak and RMS in dBFS, logged when audio is inaudible."""

    peak_dbfs: float
    rms_dbfs: float


def to_dbfs(value: float) -> float:
    return float(20.0 * np.log10(max(value, 1e-10)))


def levels(x: np.ndarray) -> Levels:
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return Levels(to_dbfs(0.0), to_dbfs(0.0))
    return Levels(to_dbfs(float(np.max(np.abs(x)))), to_dbfs(float(np.sqrt(np.mean(x * x)))))


def windowed_rms(x: np.ndarray, win: int, hop: int) -> np.ndarray:
    """Mean-removed RMS of every window [k*hop, k*hop + win)."""
    if x.size < win:
        return np.zeros(0)
    c1 = np.concatenate(([0.0], np.cumsum(x)))
    c2 = np.concatenate(([0.0], np.cumsum(x * x)))
    starts = np.arange(0, x.size - win + 1, hop)
    s1 = c1[starts + win] - c1[starts]
    s2 = c2[starts + win] - c2[starts]
    var = s2 / win - (s1 / win) ** 2
    return np.sqrt(np.maximum(var, 0.0))


def detect_onset(audio: np.ndarray, sample_rate: int, params: OnsetParams = OnsetParams()) -> int | None:
    """Sample index of the first audible onset, or None when the audio has none."""
    x = np.asarray(audio, dtype=np.float64)
    win = max(1, round(params.window_s * sample_rate))
    hop = max(1, round(params.hop_s * sample_rate))
    rms = windowed_rms(x, win, hop)
    audible = rms > params.threshold_rms
    if not audible.any():
        return None
    min_windows = max(1, int(np.ceil((params.sustain_s * sample_rate - win) / hop)) + 1)
    padded = np.concatenate(([False], audible, [False]))
    edges = np.flatnonzero(np.diff(padded.astype(np.int8)))
    run_starts, run_ends = edges[0::2], edges[1::2]
    long_runs = np.flatnonzero(run_ends - run_starts >= min_windows)
    if long_runs.size == 0:
        return None
    first = int(run_starts[long_runs[0]]) * hop
    return _refine(x, first, win, sample_rate, params)


def _refine(x: np.ndarray, window_start: int, win: int, sample_rate: int, params: OnsetParams) -> int:
    """First sample in the first audible window that rises above the local noise floor."""
    lookback = max(1, round(params.floor_lookback_s * sample_rate))
    before = x[max(0, window_start - lookback):window_start]
    floor = float(np.sqrt(np.mean((before - before.mean()) ** 2))) if before.size else 0.0
    level = max(params.min_sample_level, params.floor_factor * floor)
    segment = x[window_start:window_start + win]
    centre = before.mean() if before.size else 0.0
    above = np.flatnonzero(np.abs(segment - centre) > level)
    return window_start + int(above[0]) if above.size else window_start
