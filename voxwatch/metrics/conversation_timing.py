"""Turn-taking and latency of a conversation, from its two-channel call recording (METHOD
"Conversations").

The recording is the evidence, as for single-turn V2V (voxwatch/metrics/v2v.py): channel 0 the caller as
sent, channel 1 the model at its playout time, one clock, 16 kHz. Per caller turn (its span on
channel 0, as the runner placed it), the caller's words are the shared VAD anchors of the turn's
audio as generated, each at the write of the chunk that carried it (v2v.caller_words_s: given
here, never read off channel 0, where a chunk written late leaves a gap the model never heard),
and the model's audio is found on channel 1 with the audible-onset detector, exactly as
single-turn V2V does, so a turn's V2V means the same on both boards. The model talking over the caller's words is an
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

from voxwatch.metrics.onset import OnsetParams, detect_onset
from voxwatch.metrics.turn_taking import agent_stop, premature_response, talk_end
from voxwatch.metrics.v2v import RECORDING_RATE, read_recording

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
    barge_in_stop_ms: float | None = None  # a barge-in turn: the caller's start to the agent's own stop
    barge_in_answered: bool | None = None  # a barge-in turn: did the agent then answer it
    pause_ms: float | None = None  # a turn with a mid-turn pause: its length
    premature: bool | None = None  # ... and whether the agent started speaking inside it
    barge_in_stop_heard_ms: float | None = None  # a barge-in turn: the agent's talk after the caller's start
    # on the recording (what the caller heard: every sample received)


@dataclass(frozen=True)
class TurnBehaviour:
    """What the caller did on a turn (its persona's behaviours, as the runner played them):
    barged in on the agent's reply, and/or paused mid-turn (its start on the recording's clock, at
    its write as the words' anchors are, and its length as generated, in seconds)."""

    barge_in: bool = False
    pause: tuple[float, float] | None = None
    clears: tuple[float, ...] = ()  # when the agent sent `clear` on the turn (s, the recording's clock)


_UNMEASURED = TurnTiming(None, None, None, None, None, None, None, None)


def _audible_from(model: np.ndarray, start: int, stop: int) -> int | None:
    """Sample index (on the recording) of the model's first audible onset in [start, stop)."""
    if stop <= start:
        return None
    onset = detect_onset(model[start:stop], RECORDING_RATE)
    return None if onset is None else start + onset


def turn_timings(recording: np.ndarray, spans: Sequence[tuple[float, float]],
                 caller_words: Sequence[tuple[float, float] | None],
                 no_response_s: float = NO_RESPONSE_S, long_silence_s: float = LONG_SILENCE_S,
                 behaviours: Sequence[TurnBehaviour | None] | None = None) -> list[TurnTiming]:
    """Per caller turn, given each turn's span (start, end seconds of its audio on channel 0) in
    order and its caller's first and last word (seconds on the recording's clock, found on the
    audio as generated at their writes: v2v.caller_words_s; None, no speech): the model's first
    audible onset after the last word (sought up to the next turn's start), and the turn-taking
    facts. `behaviours`, per span, say where the caller barged in or paused
    (voxwatch/metrics/turn_taking.py): on a barge-in turn the agent's talk under way at the caller's
    start is the barge-in's, not an interruption (interrupted counts an onset after it stopped on the
    recording), and it stopped where the agent stopped (its clear), or where its audio ran out."""
    data = np.asarray(recording)
    if data.ndim != 2 or data.shape[1] != 2:
        raise ValueError("expected an (n, 2) call recording")
    if len(caller_words) != len(spans):
        raise ValueError("one caller's words (or None) per span")
    model = data[:, 1].astype(np.float64) / 32768.0
    # per span: its caller's first and last word (samples on the recording), or None
    words = [None if w is None else (int(round(w[0] * RECORDING_RATE)), int(round(w[1] * RECORDING_RATE)))
             for w in caller_words]
    acts = [(b if b is not None else TurnBehaviour()) for b in (behaviours or [None] * len(spans))]
    sustain = int(round(OnsetParams().sustain_s * RECORDING_RATE))
    out = []
    for k in range(len(spans)):
        if words[k] is None:
            out.append(_UNMEASURED)
            continue
        speech_start, speech_end = words[k]
        following = int(round(spans[k + 1][0] * RECORDING_RATE)) if k + 1 < len(spans) else data.shape[0]
        if k + 1 < len(spans) and acts[k + 1].barge_in and words[k + 1] is not None:
            following = max(following, words[k + 1][0] + sustain)  # the reply the caller talked over
        behaviour = acts[k]
        stopped = talk_end(model, speech_start, RECORDING_RATE) if behaviour.barge_in else None
        heard_from = speech_start if stopped is None else max(speech_start, stopped)
        heard_ms = None if stopped is None else (stopped - speech_start) * 1000.0 / RECORDING_RATE
        interrupted = _audible_from(model, heard_from, speech_end) is not None
        onset = _audible_from(model, max(speech_end, heard_from),
                              max(speech_end, min(following, data.shape[0])))
        gap = None if onset is None else (onset - speech_end) / RECORDING_RATE
        no_response = gap is None or gap > no_response_s
        in_turn = not interrupted and not no_response
        premature = None
        if behaviour.pause is not None:
            p0 = int(round(behaviour.pause[0] * RECORDING_RATE))
            p1 = p0 + int(round(behaviour.pause[1] * RECORDING_RATE))
            premature = premature_response(model, max(p0, heard_from), max(p1, heard_from + 1), RECORDING_RATE)
        out.append(TurnTiming(
            caller_speech_start_s=speech_start / RECORDING_RATE,
            caller_speech_end_s=speech_end / RECORDING_RATE,
            model_onset_s=None if onset is None else onset / RECORDING_RATE,
            gap_s=gap,
            v2v_ms=gap * 1000 if in_turn and gap is not None else None,
            interrupted=interrupted,
            no_response=no_response,
            long_silence=(not no_response) and gap is not None and gap > long_silence_s,
            barge_in_stop_ms=None if heard_ms is None else agent_stop(  # in ms from the caller's start
                heard_ms, 0.0, [(c - speech_start / RECORDING_RATE) * 1000.0 for c in behaviour.clears]),
            barge_in_stop_heard_ms=heard_ms,
            barge_in_answered=None if stopped is None else not no_response,
            pause_ms=None if behaviour.pause is None else behaviour.pause[1] * 1000.0,
            premature=premature,
        ))
    return out


def turn_timings_from_file(path: Path, spans: Sequence[tuple[float, float]],
                           caller_words: Sequence[tuple[float, float] | None],
                           behaviours: Sequence[TurnBehaviour | None] | None = None,
                           **limits: float) -> list[TurnTiming]:
    """turn_timings of a written call recording: the file is the evidence."""
    return turn_timings(read_recording(path), spans, caller_words, behaviours=behaviours, **limits)


def silence_gap_latency(gaps_s: Iterable[float | None]) -> float | None:
    """Coval's latency: the mean of the gaps of at least SILENCE_GAP_MIN_S seconds; None if none."""
    kept = [g for g in gaps_s if g is not None and g >= SILENCE_GAP_MIN_S]
    return float(np.mean(kept)) if kept else None
