"""A streaming STT's own end of turn (METHOD "STT end of turn"): how long after the caller stops it
says the turn is over, and how often it says so while the caller is still speaking.

Both are read off the END_OF_TURN events an adapter stamped (the vendor's end-of-turn or
end-of-utterance message, never one voxwatch forced) against the same anchors TTFS uses: the shared
VAD's start and end of speech, each at the write of the chunk that carried it (metrics.as_sent).

- `eot_ms`: the first end-of-turn event at or after the end of speech's write, in ms from it. Kept
  as a plain difference of stamps like TTFS (by this definition it is never below 0: an earlier
  event is a false cut-off or came before the speech).
- `eot_false_cutoffs`: the end-of-turn events from the start of speech's write up to (not including)
  the end of speech's write: the STT ended the turn while the caller was still in it, in a mid-turn
  pause (the noisegap datasets insert a 0.5 s one) or between words.

A series' figures (metrics.series.eot_figures, on every series row) put the two side by side, the
trade-off a turn detector makes: eot latency p50 / p95 with their clustered intervals, and the share
of clips with at least one false cut-off with a rate's clustered interval.
"""

from __future__ import annotations

from dataclasses import dataclass

from voxwatch.foundation.events import CHUNK_SENT, END_OF_TURN, Timeline
from voxwatch.metrics.as_sent import sent_at_ns

NS_PER_MS = 1_000_000


@dataclass(frozen=True)
class EndOfTurn:
    eot_ms: float | None  # None: no end-of-turn event at or after the end of speech
    false_cutoffs: int


def end_of_turn(timeline: Timeline, speech_start: float, speech_end: float, *, sample_rate: int) -> EndOfTurn:
    """One stream's end-of-turn latency and false cut-offs; the anchors are seconds into the audio as
    generated (at `sample_rate`), each taken at its chunk's write."""
    chunks = timeline.of(CHUNK_SENT)
    if not chunks:
        raise ValueError("no audio chunk was sent")
    start = sent_at_ns(chunks, speech_start * sample_rate, sample_rate)
    end = sent_at_ns(chunks, speech_end * sample_rate, sample_rate)
    stamps = sorted(e.t_ns for e in timeline.of(END_OF_TURN))
    after = [t for t in stamps if t >= end]
    return EndOfTurn(eot_ms=(after[0] - end) / NS_PER_MS if after else None,
                     false_cutoffs=sum(1 for t in stamps if start <= t < end))
