"""Voice-to-voice latency from a two-channel call recording (METHOD "S2S: voice-to-voice latency").

The recording is the evidence: channel 0 is the caller as sent (each chunk at its write time),
channel 1 is the model's audio placed at its playout time (the TTFA playout model: playback
starts with the first chunk and stalls when data is late), both on one clock whose zero is the
first caller chunk. It is written to disk, and V2V is measured back from the file: the model's
first audible onset after the caller's last word, minus that last word. The caller's last word
is not read off channel 0: it is the shared VAD's speech_end on the caller's audio as generated,
at the write of the chunk that carried it (metrics.as_sent), placed on the recording's clock; a
chunk written late leaves a gap or an overlap on channel 0 that the model never heard, and the
VAD could end the speech there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import soundfile as sf

from voxwatch.foundation.audio import resample
from voxwatch.foundation.events import CHUNK_SENT, Timeline

from voxwatch.metrics.as_sent import sent_at_ns
from voxwatch.metrics.onset import detect_onset
from voxwatch.metrics.timeline import collect_audio, playout_starts_ns
from voxwatch.metrics.vad import VAD_PARAMS, SpeechAnchors, speech_anchors

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
    it) whose zero is the first caller chunk written. The model's audio is one queue for the call:
    a turn's plays no earlier than the turns' before it has played out (metrics.timeline
    playout_starts_ns), as a reply talked over goes on playing on the barge-in turn. Also each turn's span on it (start, end of its
    caller audio, s; None for a turn that failed before its audio), for the per-turn timing
    (voxwatch/metrics/conversation_timing.py)."""
    if caller_rate != RECORDING_RATE:
        raise ValueError(f"caller audio must be {RECORDING_RATE} Hz")
    t0 = recording_zero_ns(timeline for timeline, _ in turns)

    def at(t_ns: float) -> int:
        """The recording's sample at clock time t_ns."""
        return int(round((t_ns - t0) * RECORDING_RATE / 1e9))

    callers: list[tuple[int, np.ndarray]] = []
    models: list[tuple[int, np.ndarray]] = []
    spans: list[tuple[float, float] | None] = []
    queued: float | None = None  # when the model's audio of the turns so far has played out
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
            starts = playout_starts_ns(model, queued)
            queued = float(starts[-1] + model.samples.size * 1e9 / sr)  # one line: the next turn's audio queues behind
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


def recording_zero_ns(timelines: Iterable[Timeline]) -> int:
    """The call recording's zero on the monotonic clock: the call's first caller chunk written."""
    for timeline in timelines:
        first = timeline.first(CHUNK_SENT)
        if first is not None:
            return first.t_ns
    raise ValueError("the call has no caller audio")


def caller_words_s(timeline: Timeline, caller_pcm16: bytes, zero_ns: int,
                   anchors: SpeechAnchors | None = None) -> tuple[float, float] | None:
    """A caller turn's first and last word on the recording's clock (s from `zero_ns`): the shared
    VAD's anchors on its audio as generated (16 kHz int16), or `anchors` (seconds into that audio)
    where they are known otherwise (a persona's clean words under its noise), each at the write of
    the chunk that carried it. None when the audio has no speech."""
    found = anchors if anchors is not None else speech_anchors(np.frombuffer(caller_pcm16, dtype="<i2"))
    if found is None:
        return None
    return (on_recording_s(timeline, zero_ns, found.speech_start), on_recording_s(timeline, zero_ns, found.speech_end))


def on_recording_s(timeline: Timeline, zero_ns: int, seconds: float) -> float:
    """Where second `seconds` of a turn's caller audio as generated lies on the recording's clock:
    when its sample was written (metrics.as_sent.sent_at_ns), from the recording's zero."""
    return (sent_at_ns(timeline, seconds * RECORDING_RATE, RECORDING_RATE) - zero_ns) / 1e9


def caller_speech_end_s(timeline: Timeline, caller_pcm16: bytes, anchors: SpeechAnchors | None = None) -> float:
    """A single turn's caller's last word on its recording's clock (caller_words_s), for V2V: the clip's
    own anchors where it has them (the shared VAD over the whole clip, as STT's TTFS reads them; the VAD
    over the trimmed audio sent can end a few ms apart)."""
    words = caller_words_s(timeline, caller_pcm16, recording_zero_ns([timeline]), anchors)
    if words is None:
        raise ValueError("no caller speech in the audio sent")
    return words[1]


def write_recording(path: Path, recording: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), np.clip(recording, -1, 32767 / 32768), RECORDING_RATE, subtype="PCM_16")


def read_recording(path: Path) -> np.ndarray:
    """A written call recording as (n, 2) int16 samples at RECORDING_RATE."""
    data, rate = sf.read(str(path), dtype="int16", always_2d=True)
    if data.shape[1] != 2 or rate != RECORDING_RATE:
        raise ValueError(f"{path}: expected a two-channel {RECORDING_RATE} Hz call recording")
    return data


def v2v_from_recording(path: Path, caller_speech_end_s: float) -> V2V:
    """Measure V2V from a written two-channel recording, given the caller's last word on its clock
    (caller_speech_end_s: found on the audio as generated, at its write): the model's first audible
    onset on channel 1 after it, minus it."""
    data, rate = read_recording(path), RECORDING_RATE
    end = int(round(caller_speech_end_s * rate))
    onset = detect_onset(data[end:, 1].astype(np.float64) / 32768.0, rate)
    if onset is None:
        return V2V(None, caller_speech_end_s, None)
    onset_s = (end + onset) / rate
    return V2V((onset_s - caller_speech_end_s) * 1000, caller_speech_end_s, onset_s)
