"""Voice-to-voice latency from a two-channel call recording (METHOD "S2S: voice-to-voice latency").

The recording is the evidence: channel 0 is the caller as sent (each chunk at its write time),
channel 1 is the model's audio placed at its playout time (the TTFA playout model: playback
starts with the first chunk and stalls when data is late), both on one clock whose zero is the
first caller chunk. It is written to disk, and V2V is measured back from the file: the model's
first audible onset after the caller's last word (the shared VAD's speech_end on channel 0),
minus that last word.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import soundfile as sf

from voxwatch.foundation.audio import resample
from voxwatch.foundation.events import CHUNK_SENT, Timeline

from voxwatch.metrics.onset import detect_onset
from voxwatch.metrics.timeline import collect_audio, playout_starts_ns
from voxwatch.metrics.vad import VAD_PARAMS, speech_anchors

RECORDING_RATE = VAD_PARAMS.sample_rate


@dataclass(frozen=True)
class V2V:
    v2v_ms: float | None  # None when the model never spoke after the caller's last word
    caller_speech_end_s: float
    model_onset_s: float | None


def _place(track: np.ndarray, samples: np.ndarray, at: int) -> None:
    if at < 0:
        samples, at = samples[-at:], 0
    end = min(track.size, at + samples.size)
    if end > at:
        track[at:end] += samples[: end - at]


def call_recording(timeline: Timeline, caller_pcm16: bytes, caller_rate: int = RECORDING_RATE) -> np.ndarray:
    """(n, 2) float array at RECORDING_RATE: caller chunks at their write times, model audio at playout."""
    return conversation_recording([(timeline, caller_pcm16)], caller_rate)[0]


def conversation_recording(turns: Sequence[tuple[Timeline, bytes]],
                           caller_rate: int = RECORDING_RATE) -> tuple[np.ndarray, list[tuple[float, float] | None]]:
    """One recording of a whole conversation: each turn's caller chunks at their write times and the
    model's audio of that turn at its playout times, all on one clock (the turns' timelines share
    it) whose zero is the first caller chunk written. Also each turn's span on it (start, end of its
    caller audio, s; None for a turn that failed before its audio), for the per-turn timing
    (voxwatch/metrics/conversation_timing.py)."""
    if caller_rate != RECORDING_RATE:
        raise ValueError(f"caller audio must be {RECORDING_RATE} Hz")
    firsts = [timeline.of(CHUNK_SENT)[0].t_ns for timeline, _ in turns if timeline.of(CHUNK_SENT)]
    if not firsts:
        raise ValueError("the call has no caller audio")
    t0 = firsts[0]

    def at(t_ns: float) -> int:
        """The recording's sample at clock time t_ns."""
        return int(round((t_ns - t0) * RECORDING_RATE / 1e9))

    callers: list[tuple[int, np.ndarray]] = []
    models: list[tuple[int, np.ndarray]] = []
    spans: list[tuple[float, float] | None] = []
    for timeline, pcm16 in turns:
        sent = timeline.of(CHUNK_SENT)
        caller = np.frombuffer(pcm16, dtype="<i2").astype(np.float64) / 32768.0
        offset = 0
        for e in sent:
            n = e.n_samples or 0
            callers.append((at(e.t_ns), caller[offset:offset + n]))
            offset += n
        spans.append((at(sent[0].t_ns) / RECORDING_RATE, (at(sent[-1].t_ns) + (sent[-1].n_samples or 0))
                      / RECORDING_RATE) if sent else None)
        model = collect_audio(timeline.events)
        if model.samples.size:
            sr = model.sample_rate
            starts = playout_starts_ns(model)
            bounds = list(model.chunk_offsets) + [model.samples.size]
            for i in range(len(model.chunk_offsets)):
                models.append((at(starts[i] + bounds[i] * 1e9 / sr),
                               resample(model.samples[bounds[i]:bounds[i + 1]], sr, RECORDING_RATE)))
    end = max(p + x.size for p, x in callers + models)
    track = np.zeros((end, 2))
    for p, samples in callers:
        _place(track[:, 0], samples, p)
    for p, samples in models:
        _place(track[:, 1], samples, p)
    return track, spans


def write_recording(path: Path, recording: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), np.clip(recording, -1, 32767 / 32768), RECORDING_RATE, subtype="PCM_16")


def read_recording(path: Path) -> np.ndarray:
    """A written call recording as (n, 2) int16 samples at RECORDING_RATE."""
    data, rate = sf.read(str(path), dtype="int16", always_2d=True)
    if data.shape[1] != 2 or rate != RECORDING_RATE:
        raise ValueError(f"{path}: expected a two-channel {RECORDING_RATE} Hz call recording")
    return data


def v2v_from_recording(path: Path) -> V2V:
    """Measure V2V from a written two-channel recording."""
    data, rate = read_recording(path), RECORDING_RATE
    anchors = speech_anchors(data[:, 0])
    if anchors is None:
        raise ValueError(f"{path}: no caller speech on channel 0")
    end = int(round(anchors.speech_end * rate))
    onset = detect_onset(data[end:, 1].astype(np.float64) / 32768.0, rate)
    if onset is None:
        return V2V(None, anchors.speech_end, None)
    onset_s = (end + onset) / rate
    return V2V((onset_s - anchors.speech_end) * 1000, anchors.speech_end, onset_s)
