"""Shared VAD anchors (METHOD "Shared VAD anchors"): one webrtcvad configuration for every clip.

webrtcvad decides where speech is (30 ms frames, blips dropped, gaps bridged by the hangover);
its frame edges run late at the end of speech (it holds "speech" for about 100 ms after the last
word), so each boundary is refined to the edge of the outermost 10 ms window inside the frame
search span whose RMS is audible (above -40 dBFS and above twice the clip's noise floor).

`speech_start` and `speech_end` are computed once per clip when a dataset is built and stored in
its manifest; every provider is timed against the same anchors.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from importlib.metadata import version

import numpy as np
import webrtcvad

from .onset import windowed_rms

VAD_NAME = "webrtcvad"
VAD_VERSION = version("webrtcvad-wheels")


@dataclass(frozen=True)
class VadParams:
    sample_rate: int = 16000
    frame_ms: int = 30
    aggressiveness: int = 3
    hangover_ms: int = 300  # unvoiced gaps up to this long inside speech are bridged
    min_speech_ms: int = 90  # voiced runs shorter than this are blips, dropped before bridging
    refine_window_ms: int = 10
    refine_span_ms: int = 300  # how far inside (end) or around (start) a frame edge to refine
    refine_threshold_rms: float = 0.01  # -40 dBFS, the audibility threshold of the onset detector

    def as_record(self) -> dict:
        return asdict(self)


VAD_PARAMS = VadParams()


@dataclass(frozen=True)
class SpeechAnchors:
    speech_start: float
    speech_end: float


def voiced_frames(pcm16: np.ndarray, params: VadParams = VAD_PARAMS) -> np.ndarray:
    """One boolean per full frame: did webrtcvad call it speech."""
    vad = webrtcvad.Vad(params.aggressiveness)
    n = params.sample_rate * params.frame_ms // 1000
    pcm = np.asarray(pcm16, dtype="<i2")
    frames = pcm[: pcm.size - pcm.size % n].reshape(-1, n)
    return np.array([vad.is_speech(f.tobytes(), params.sample_rate) for f in frames], dtype=bool)


def speech_anchors(pcm16: np.ndarray, params: VadParams = VAD_PARAMS) -> SpeechAnchors | None:
    """Start of the first and end of the last speech segment, in seconds; None if no speech."""
    voiced = voiced_frames(pcm16, params)
    if not voiced.any():
        return None
    max_gap = params.hangover_ms // params.frame_ms
    min_frames = max(1, -(-params.min_speech_ms // params.frame_ms))
    padded = np.concatenate(([False], voiced, [False]))
    edges = np.flatnonzero(np.diff(padded.astype(np.int8)))
    runs = [(s, e) for s, e in zip(edges[0::2], edges[1::2]) if e - s >= min_frames]
    if not runs:
        return None
    kept: list[list[int]] = [list(runs[0])]
    for s, e in runs[1:]:
        if s - kept[-1][1] <= max_gap:
            kept[-1][1] = e
        else:
            kept.append([s, e])
    frame = params.sample_rate * params.frame_ms // 1000
    start, end = _refine(np.asarray(pcm16, dtype=np.float64) / 32768.0, kept[0][0] * frame, kept[-1][1] * frame, params)
    return SpeechAnchors(speech_start=round(start / params.sample_rate, 3), speech_end=round(end / params.sample_rate, 3))


def _refine(x: np.ndarray, start: int, end: int, params: VadParams) -> tuple[int, int]:
    """Move the frame edges to the outermost audible 10 ms windows near them (1 ms steps)."""
    rate = params.sample_rate
    win, hop = rate * params.refine_window_ms // 1000, rate // 1000
    rms = windowed_rms(x, win, hop)
    if rms.size == 0:
        return start, end
    threshold = max(params.refine_threshold_rms, 2.0 * float(np.percentile(rms, 10)))
    span = rate * params.refine_span_ms // 1000
    frame = rate * params.frame_ms // 1000
    lo, hi = max(0, start - frame), min(start + span, end)
    hits = np.flatnonzero(rms[lo // hop: hi // hop] > threshold)
    new_start = lo + int(hits[0]) * hop if hits.size else start
    lo, hi = max(new_start, end - span), end
    hits = np.flatnonzero(rms[lo // hop: max(lo, hi - win) // hop + 1] > threshold)
    new_end = lo + int(hits[-1]) * hop + win if hits.size else end
    return new_start, min(new_end, end)
