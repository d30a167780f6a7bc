"""Shared VAD anchors (METHOD "Shared VAD anchors"): one webrtcvad configuration for every clip.

webrtcvad decides where speech is (30 ms frames, blips dropped, gaps bridged by the hangover);
its frame edges are coarse and run late at the end of speech (it holds "speech" for about
100 ms after the last word), so each boundary is refined to the audible edge of the speech by
the onset detector (voxwatch.metrics.onset), read forwards for the start and backwards for the
end.

`speech_start` and `speech_end` are computed once per clip when a dataset is built and stored in
its manifest; every provider is timed against the same anchors.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from importlib.metadata import version

import numpy as np
import webrtcvad

from voxwatch.metrics.onset import detect_onset

VAD_NAME = "webrtcvad"
VAD_VERSION = version("webrtcvad-wheels")


@dataclass(frozen=True)
class VadParams:
    sample_rate: int = 16000
    frame_ms: int = 30
    aggressiveness: int = 3
    prime_frames: int = 10  # the clip's quietest frames, fed first so the noise model starts adapted
    hangover_ms: int = 300  # unvoiced gaps up to this long inside speech are bridged
    min_speech_ms: int = 90  # voiced runs shorter than this are blips, dropped before bridging
    refine_margin_ms: int = 60  # how far outside the speech frames the audible edges are sought

    def as_record(self) -> dict:
        return asdict(self)


VAD_PARAMS = VadParams()


@dataclass(frozen=True)
class SpeechAnchors:
    speech_start: float
    speech_end: float


def voiced_frames(pcm16: np.ndarray, params: VadParams = VAD_PARAMS) -> np.ndarray:
    """One boolean per full frame: did webrtcvad call it speech.

    A fresh webrtcvad calls the first frames of a noisy clip speech until its noise model has
    adapted, so it is first primed with the clip's own quietest frames (their answers dropped).
    """
    vad = webrtcvad.Vad(params.aggressiveness)
    n = params.sample_rate * params.frame_ms // 1000
    pcm = np.asarray(pcm16, dtype="<i2")
    frames = pcm[: pcm.size - pcm.size % n].reshape(-1, n)
    energy = np.einsum("ij,ij->i", frames.astype(np.float64), frames.astype(np.float64))
    for i in np.argsort(energy, kind="stable")[: params.prime_frames]:
        vad.is_speech(frames[i].tobytes(), params.sample_rate)
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
    """Move the frame edges to the audible edges of the speech with the onset detector.

    speech_start is the onset of the audio from one margin before the first speech frame;
    speech_end is the onset of the time-reversed audio from one margin after the last one: the
    same definition of "audible", read from either side.
    """
    margin = params.sample_rate * params.refine_margin_ms // 1000
    lo = max(0, start - margin)
    onset = detect_onset(x[lo:end], params.sample_rate)
    new_start = lo + onset if onset is not None else start
    hi = min(x.size, end + margin)
    offset = detect_onset(x[new_start:hi][::-1], params.sample_rate)
    new_end = hi - offset if offset is not None else end
    return new_start, max(new_end, new_start + 1)
