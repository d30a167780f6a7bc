"""The caller's audio as sent (METHOD "Audio"): where a sample of it went on the wire.

Anchors on audio voxwatch sends (the caller's first and last word, a pause's start) are found on
the audio as generated and mapped to the time the chunk that carried them was written. Why: the
pacer writes chunk k at its deadline, but a busy worker writes one late now and then, and the
chunks after it in a burst; the vendor hears each sample when its chunk is written. Reading the
anchors off a reconstruction of the wire instead (the call recording's caller channel, each chunk
at its write) would let that lateness reshape the words: a gap or an overlap the vendor never
heard, where the VAD may end the speech. Reading them as t0 + offset would assume every chunk
was on time.
"""

from __future__ import annotations

from typing import Sequence

from voxwatch.foundation.events import CHUNK_SENT, Event, Timeline


def carrying(chunks: Sequence[Event], sample: int) -> tuple[Event, int]:
    """The CHUNK_SENT event whose samples hold sample `sample` of the audio sent, and its first sample
    (the last chunk for a sample past the audio sent). `chunks` is not empty."""
    first = 0
    for chunk in chunks:
        n = chunk.n_samples or 0
        if sample < first + n:
            return chunk, first
        first += n
    return chunk, first - n


def sent_at_ns(sent: Timeline | Sequence[Event], position: float, rate: int) -> float:
    """When sample `position` (in samples at `rate`, fractional allowed) of the caller's audio as
    generated went out: the write stamp of the CHUNK_SENT event whose samples hold it, plus its
    place in that chunk. A position past the last chunk is reckoned from the last chunk at the real
    -time rate (an anchor just beyond the audio sent, as the peers' may be)."""
    chunks = sent.of(CHUNK_SENT) if isinstance(sent, Timeline) else [e for e in sent if e.kind == CHUNK_SENT]
    if not chunks:
        raise ValueError("no audio chunk was sent")
    if position < 0:
        raise ValueError(f"sample {position} is before the audio sent")
    chunk, first = carrying(chunks, int(round(position)))
    return chunk.t_ns + (position - first) * 1e9 / rate
