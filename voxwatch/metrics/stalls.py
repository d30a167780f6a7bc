"""Playback stalls of a TTS stream (METHOD "TTS: playback stalls"): where the audio received fell
behind real-time playout once the listener had started hearing speech.

The playout model is TTFA's (metrics.timeline.playout_starts_ns): playback starts with the first
chunk and, when a chunk arrives after the previous chunks have played out, waits for it. Each such
wait after the audible onset is a stall a listener hears as a break in the speech; a wait before the
onset only delays the first audible sample, which TTFA already counts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from voxwatch.metrics.timeline import AudioStream, playout_starts_ns

STALL_MIN_MS = 1.0
"""The shortest wait counted as a stall. A sender exactly at real time makes waits of microseconds
(its own scheduling and the receive path's stamps), which no listener hears and which would turn every
real-time stream into a stream of 'stalls'; a millisecond is above that noise on a busy host (the
clock witness's resolution, METHOD "Clock witness") and is already an audible click in speech."""


@dataclass(frozen=True)
class Stalls:
    count: int  # waits of at least STALL_MIN_MS after the onset's chunk
    total_ms: float  # their sum (ms)


def chunk_waits_ms(stream: AudioStream) -> np.ndarray:
    """How long playout waited for each chunk after the previous one had played out (ms; the first
    chunk's entry is 0): the growth of the playout start (playout_starts_ns) at each chunk."""
    starts = playout_starts_ns(stream)
    return np.diff(starts, prepend=starts[:1]) / 1e6 if starts.size else np.zeros(0)


def playout_stalls(stream: AudioStream, onset: int) -> Stalls:
    """The stalls of a stream whose first audible sample is `onset`: every wait of at least
    STALL_MIN_MS for a chunk that starts after the chunk holding the onset (chunks in stream order)."""
    if stream.chunk_offsets.size == 0:
        raise ValueError("a stream with no audio has no playout")
    onset_chunk = int(np.searchsorted(stream.chunk_offsets, onset, side="right")) - 1
    waits = chunk_waits_ms(stream)[onset_chunk + 1:]
    stalled = waits[waits >= STALL_MIN_MS]
    return Stalls(count=int(stalled.size), total_ms=float(stalled.sum()))
