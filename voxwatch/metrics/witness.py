"""The witness on a row's clocks (METHOD "Clock witness"): how long its worker could not observe
around the stamps the row's latencies are read from, and which clock took its arrival stamps.

Every stamped event may carry `blind_ns` (voxwatch.foundation.clock.watch, kernel_time): for an
arrival, the time before its stamp in which the bytes could have come without the worker seeing
them (0 for the last bytes of a kernel-stamped read); for a send, how long the write took. A
latency read from a stamp whose blind time is long is not known to that precision: the row's
uncertainty is the longest blind time of the events it reads, and above STALL_BOUND_MS the row is
excluded as the worker's stall, never published as the vendor's latency.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from voxwatch.metrics.as_sent import carrying
from voxwatch.foundation.events import (AUDIO, CHUNK_SENT, FINAL, PARTIAL, REQUEST_SENT, RESPONSE, Event,
                                        Timeline)

METHOD_BOUND_MS = 2.0  # method 15 (14: 5 ms): the loaded clock error target, so no published row can be off by more
STALL_BOUND_MS = METHOD_BOUND_MS
"""A row whose clocks could be off by more than this, because its worker was not watching, is excluded
(the method's default; `[run] stall_bound_ms` sets a worker's own: each row keeps its uncertainty)."""

ARRIVALS = (PARTIAL, FINAL, AUDIO, RESPONSE)
HEARD_SLACK_NS = 100_000  # an onset read off a 16 kHz recording is placed to within a sample or two
STALLED = "measuring worker stalled"
"""How the reason of a row excluded by the witness begins (the stores count such rows by it)."""


def stalled_row(status: str, reason: str | None) -> bool:
    """Whether a row was excluded as its measuring worker's stall."""
    return status == "excluded" and (reason or "").startswith(STALLED)


@dataclass(frozen=True)
class Witness:
    uncertainty_ms: float | None  # the longest blind time of the events read; None: not watched
    arrival_stamp: str | None  # "kernel" when every arrival read was the kernel's receive time, "user" when not
    bound_ms: float | None = None  # the bound it is held to; None: the method's (STALL_BOUND_MS)

    @property
    def bound(self) -> float:
        return STALL_BOUND_MS if self.bound_ms is None else self.bound_ms

    @property
    def stalled(self) -> bool:
        return self.uncertainty_ms is not None and self.uncertainty_ms > self.bound

    @property
    def reason(self) -> str:
        shown = f"{self.uncertainty_ms:.0f}" if self.uncertainty_ms >= 10 else f"{self.uncertainty_ms:.1f}"  # 2.4, not 2, over a 2 ms bound
        return (f"{STALLED} {shown} ms around a timed event (bound "
                f"{self.bound:g} ms): the worker's own stall, not the provider's latency")


def witness_of(events: Iterable[Event | None]) -> Witness:
    """The witness of the events a row's latencies were read from."""
    read = [e for e in events if e is not None]
    blind = [e.blind_ns for e in read if e.blind_ns is not None]
    stamps = {e.stamp for e in read if e.kind in ARRIVALS and e.stamp is not None}
    return Witness(max(blind) / 1e6 if blind else None,
                   None if not stamps else "kernel" if stamps == {"kernel"} else "user")


def chunk_at(chunks: Sequence[Event], sample: int) -> Event | None:
    """The CHUNK_SENT event whose samples hold sample `sample` of the audio sent (metrics.as_sent)."""
    return carrying(chunks, sample)[0] if chunks else None


def chunk_written_by(chunks: Sequence[Event], t_ns: float) -> Event | None:
    """The CHUNK_SENT event that carried the caller's audio at `t_ns` (anchors are mapped to the writes
    of their chunks: metrics.as_sent): the last chunk written at or before it."""
    found = None
    for chunk in chunks:
        if chunk.t_ns > t_ns:
            break
        found = chunk
    return found


def caller_turn_witness(timeline: Timeline, caller_end_ns: float, heard_by_ns: float) -> Witness:
    """V2V (a single turn's or a conversation turn's) reads the chunk that carried the caller's last word
    and every reply chunk that had arrived by the time the model's onset was heard."""
    return audio_witness(timeline, chunk_written_by(timeline.of(CHUNK_SENT), caller_end_ns), heard_by_ns)


def stt_stream_witness(timeline: Timeline, rate: int, speech_start: float, speech_end: float) -> Witness:
    """TTFS and first partial read the first chunk, the chunks holding the speech's start and end, the
    first transcript and the last worded final."""
    chunks = timeline.of(CHUNK_SENT)
    transcripts = [e for e in timeline.events if e.kind in (PARTIAL, FINAL) and (e.text or "").strip()]
    finals = [e for e in timeline.of(FINAL) if (e.text or "").strip()] or timeline.of(FINAL)
    return witness_of([chunks[0] if chunks else None, chunk_at(chunks, int(speech_start * rate)),
                       chunk_at(chunks, int(speech_end * rate)), transcripts[0] if transcripts else None,
                       finals[-1] if finals else None])


def batch_witness(timeline: Timeline) -> Witness:
    """A batch latency reads the request's write and the response's arrival."""
    return witness_of([timeline.first(REQUEST_SENT), timeline.first(RESPONSE)])


def audio_witness(timeline: Timeline, start: Event | None, heard_by_ns: float) -> Witness:
    """TTFA and V2V read the start (the request, or the chunk holding the caller's last word) and the
    audio chunks up to the one playing when the onset was heard (the playout model, metrics.timeline:
    sample s of chunk k is heard at max over i <= k of (arrival_i - offset_i) + s). A chunk could have
    come as early as its stamp less its blind time, so the onset could have been heard earlier by at
    most the latest (stamp - offset) less the latest (stamp - blind - offset) over those chunks: a
    chunk whose stamp was blind but which did not hold the playout back moves nothing. The latency
    could be longer by the start's blind time; the uncertainty is the larger of the two."""
    chunks = sorted((e for e in timeline.of(AUDIO) if e.n_samples), key=lambda e: e.sample_offset or 0)
    if any(not e.sample_rate for e in chunks):  # no playout to place them on: every chunk arrived by the onset
        return witness_of([start, *(e for e in chunks if e.t_ns <= heard_by_ns)])
    held: list[tuple[float, float]] = []  # per chunk up to the onset's: (stamp - offset, stamp - blind - offset), ns
    playout = float("-inf")
    for chunk in chunks:
        offset_ns = (chunk.sample_offset or 0) * 1e9 / chunk.sample_rate
        playout = max(playout, chunk.t_ns - offset_ns)
        if held and playout + offset_ns > heard_by_ns + HEARD_SLACK_NS:
            break  # this chunk starts playing after the onset was heard: it held nothing back
        held.append((chunk.t_ns - offset_ns, chunk.t_ns - (chunk.blind_ns or 0) - offset_ns))
    read = witness_of([start, *chunks[:len(held)]])
    if not held:
        return read
    playout_ms = (max(late for late, _ in held) - max(early for _, early in held)) / 1e6
    start_ms = (start.blind_ns or 0) / 1e6 if start is not None and start.blind_ns is not None else 0.0
    known = read.uncertainty_ms is not None
    return Witness(max(playout_ms, start_ms) if known else None, read.arrival_stamp)
