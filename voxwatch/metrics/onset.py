"""Audible-onset detector (METHOD "Audible-onset detector").

The detector scans 10 ms windows at a 1 ms hop; a window is audible when its mean-removed RMS
is above -40 dBFS, and a run of audible windows counts once it spans at least 50 ms. The start of
that first window is not the onset: the window turns audible only once enough loud signal has
entered it, and speech often begins with a quieter sound (a fricative, a plosive burst) that
leads without a break into the loud part. So the onset is walked back to the start of the
contiguous sound that carries into the audible run - the last point, within 500 ms before it,
where the 5 ms RMS falls to the noise floor (4 x the quietest 5 ms RMS before the run, at
least -60 dBFS) - and refined to the first sample there that rises above that floor. Vectorised: block sums over 1 ms hops, no Python loop over windows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ONSET_VERSION = "onset-2"


@dataclass(frozen=True)
class OnsetParams:
    hop_s: float = 0.001
    window_hops: int = 10  # a 10 ms window
    threshold_rms: float = 0.01  # -40 dBFS
    sustain_s: float = 0.050
    lookback_s: float = 0.500  # how far a quiet lead-in may extend before the audible run
    quiet_window_s: float = 0.005
    floor_lookback_s: float = 0.100  # the floor is the quietest 5 ms RMS of the lead-in and 100 ms before it
    floor_factor: float = 4.0
    min_sample_level: float = 0.001  # -60 dBFS: the quietest level that can start an onset


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
    """Mean-removed RMS of every window [k*hop, k*hop + win); win must be a multiple of hop."""
    if win % hop:
        raise ValueError("the window must be a whole number of hops")
    per = win // hop
    blocks = x[: x.size // hop * hop].reshape(-1, hop)
    if blocks.shape[0] < per:
        return np.zeros(0)
    c1 = np.concatenate(([0.0], np.cumsum(blocks.sum(axis=1))))
    c2 = np.concatenate(([0.0], np.cumsum(np.einsum("ij,ij->i", blocks, blocks))))
    s1, s2 = c1[per:] - c1[:-per], c2[per:] - c2[:-per]
    return np.sqrt(np.maximum(s2 / win - (s1 / win) ** 2, 0.0))


def detect_onset(audio: np.ndarray, sample_rate: int, params: OnsetParams = OnsetParams()) -> int | None:
    """Sample index of the first audible onset, or None when the audio has none."""
    x = np.asarray(audio, dtype=np.float64)
    hop = max(1, round(params.hop_s * sample_rate))
    win = hop * params.window_hops
    audible = windowed_rms(x, win, hop) > params.threshold_rms
    if not audible.any():
        return None
    min_windows = max(1, int(np.ceil((params.sustain_s * sample_rate - win) / hop)) + 1)
    padded = np.concatenate(([False], audible, [False]))
    edges = np.flatnonzero(np.diff(padded.astype(np.int8)))
    run_starts, run_ends = edges[0::2], edges[1::2]
    long_runs = np.flatnonzero(run_ends - run_starts >= min_windows)
    if long_runs.size == 0:
        return None
    return _refine(x, int(run_starts[long_runs[0]]) * hop, win, sample_rate, params)


def _refine(x: np.ndarray, window_start: int, win: int, sample_rate: int, params: OnsetParams) -> int:
    """Walk back through the quiet lead-in to the first sample above the noise floor."""
    floor_n = max(1, round(params.floor_lookback_s * sample_rate))
    lead_n = round(params.lookback_s * sample_rate)
    q = max(1, round(params.quiet_window_s * sample_rate))
    lo = max(0, window_start - lead_n)
    before = x[max(0, lo - floor_n):window_start]
    centre = float(before.mean()) if before.size else 0.0
    blocks = before[: before.size // q * q].reshape(-1, q) - centre
    floor = float(np.sqrt(np.mean(blocks * blocks, axis=1)).min()) if blocks.size else 0.0
    level = max(params.min_sample_level, params.floor_factor * floor)
    span = np.abs(x[lo:window_start + win] - centre)
    if span.size > q:
        c = np.concatenate(([0.0], np.cumsum(span * span)))
        quiet = np.sqrt((c[q:] - c[:-q]) / q) <= level  # the q-sample window starting at each index
        quiet_before = np.flatnonzero(quiet[: window_start - lo + 1])
        search_from = lo + int(quiet_before[-1]) if quiet_before.size else lo
    else:
        search_from = lo
    above = np.flatnonzero(np.abs(x[search_from:window_start + win] - centre) > level)
    return search_from + int(above[0]) if above.size else window_start
