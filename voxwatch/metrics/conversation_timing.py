"""Turn-taking and latency of a conversation, from its two-channel call recording (METHOD
"Conversations").

The recording is the evidence, as for single-turn V2V (voxwatch/metrics/v2v.py): channel 0 the caller as
sent, channel 1 the model at its playout time, one clock, 16 kHz. Per caller turn (its span on
channel 0, as the runner placed it), the caller's speech is found with the shared VAD anchors
and the model's audio with the audible-onset detector, exactly as single-turn V2V does, so a
turn's V2V means the same on both boards. The model talking over the caller's words is an
interruption; no audible reply within the no-response timeout is no response; a reply after
more than LONG_SILENCE_S is a long silence. The conversation's silence-gap latency is Coval's:
the mean of the gaps of at least half a second between the caller's last word and the model's
first audible sample (shorter gaps are overlaps and back-channels, not waiting).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from voxwatch.metrics.onset import detect_onset
from voxwatch.metrics.v2v import RECORDING_RATE, read_recording
from voxwatch.metrics.vad import SpeechAnchors, speech_anchors

NO_RESPONSE_S = 10.0  # the runner's default no-response timeout; pass the one the conversation ran with
LONG_SILENCE_S = 3.0  # a reply later than this leaves the caller wondering whether the line dropped
SILENCE_GAP_MIN_S = 0.5  # Coval: gaps shorter than this are not counted as latency


@dataclass(frozen=True)
class TurnTiming:
    """One caller turn's timing, in seconds on the recording's clock (None: not measurable)."""

    caller_speech_start_s: float | None
    caller_speech_end_s: float | None
    model_onset_s: float | None  # the model's first audible onset after the caller's last word
    gap_s: float | None  # model_onset_s - caller_speech_end_s
    v2v_ms: float | None  # the gap, on a turn the model answered in turn (not interrupting, not timed out)
    interrupted: bool | None
    no_response: bool | None
    long_silence: bool | None


_UNMEASURED = TurnTiming(None, None, None, None, None, None, None, None)


def _audible_from(model: np.ndarray, start: int, stop: int) -> int | None:
    """Sample index (on the recording) of the model's first audible onset in [start, stop)."""
    if stop <= start:
        return None
    onset = detect_onset(model[start:stop], RECORDING_RATE)
    return None if onset is None else start + onset


def turn_timings(recording: np.ndarray, spans: Sequence[tuple[float, float]],
                 no_response_s: float = NO_RESPONSE_S, long_silence_s: float = LONG_SILENCE_S,
                 caller_anchors: Sequence[SpeechAnchors | None] | None = None) -> list[TurnTiming]:
    """Per caller turn, given each turn's span (start, end seconds of its audio on channel 0) in
    order: the caller's speech, the model's first audible onset after its last word (sought up to
    the next turn's start), and the turn-taking facts. `caller_anchors`, per span, are the caller's
    speech anchors (seconds from the span's start) when known from the clean speech under a
    persona's noise, which would make the VAD read the whole span as speech; None reads channel 0."""
    data = np.asarray(recording)
    if data.ndim != 2 or data.shape[1] != 2:
        raise ValueError("expected an (n, 2) call recording")
    caller = data[:, 0].astype("<i2")
    model = data[:, 1].astype(np.float64) / 32768.0
    out = []
    for k, (start_s, end_s) in enumerate(spans):
        lo = max(0, int(round(start_s * RECORDING_RATE)))
        hi = min(data.shape[0], int(round(end_s * RECORDING_RATE)))
        given = caller_anchors[k] if caller_anchors is not None else None
        anchors = given if given is not None else speech_anchors(caller[lo:hi]) if hi > lo else None
        if anchors is None:
            out.append(_UNMEASURED)
            continue
        speech_start = lo + int(round(anchors.speech_start * RECORDING_RATE))
        speech_end = lo + int(round(anchors.speech_end * RECORDING_RATE))
        following = int(round(spans[k + 1][0] * RECORDING_RATE)) if k + 1 < len(spans) else data.shape[0]
        interrupted = _audible_from(model, speech_start, speech_end) is not None
        onset = _audible_from(model, speech_end, max(speech_end, min(following, data.shape[0])))
        gap = None if onset is None else (onset - speech_end) / RECORDING_RATE
        no_response = gap is None or gap > no_response_s
        in_turn = not interrupted and not no_response
        out.append(TurnTiming(
            caller_speech_start_s=speech_start / RECORDING_RATE,
            caller_speech_end_s=speech_end / RECORDING_RATE,
            model_onset_s=None if onset is None else onset / RECORDING_RATE,
            gap_s=gap,
            v2v_ms=gap * 1000 if in_turn and gap is not None else None,
            interrupted=interrupted,
            no_response=no_response,
            long_silence=(not no_response) and gap is not None and gap > long_silence_s,
        ))
    return out


def turn_timings_from_file(path: Path, spans: Sequence[tuple[float, float]],
                           caller_anchors: Sequence[SpeechAnchors | None] | None = None,
                           **limits: float) -> list[TurnTiming]:
    """turn_timings of a written call recording: the file is the evidence."""
    return turn_timings(read_recording(path), spans, caller_anchors=caller_anchors, **limits)


def silence_gap_latency(gaps_s: Iterable[float | None]) -> float | None:
    """Coval's latency: the mean of the gaps of at least SILENCE_GAP_MIN_S seconds; None if none."""
    kept = [g for g in gaps_s if g is not None and g >= SILENCE_GAP_MIN_S]
    return float(np.mean(kept)) if kept else None
