"""Real-time pacing (METHOD "Audio"): chunk k is written at the absolute deadline t0 + k * chunk.

Deadlines are absolute, so a late chunk never shifts the ones after it; each CHUNK_SENT event
carries its deadline, from which voxwatch.metrics computes the pacing error.
"""

from __future__ import annotations

from voxwatch.clock import sleep_until
from voxwatch.providers.events import CHUNK_SENT, Timeline


def chunk_pcm(pcm16: bytes, sample_rate: int, chunk_ms: int) -> list[bytes]:
    step = sample_rate * chunk_ms // 1000 * 2
    return [pcm16[i:i + step] for i in range(0, len(pcm16), step)]


async def paced_send(session, pcm16: bytes, sample_rate: int, chunk_ms: int, timeline: Timeline) -> int:
    """Write every chunk on its deadline, marking CHUNK_SENT (with the deadline) as each write returns."""
    chunks = chunk_pcm(pcm16, sample_rate, chunk_ms)
    t0 = timeline.clock()
    for k, chunk in enumerate(chunks):
        deadline = t0 + k * chunk_ms * 1_000_000
        await sleep_until(deadline, timeline.clock)
        await session.send_audio(chunk)
        timeline.mark(CHUNK_SENT, n_samples=len(chunk) // 2, deadline_ns=deadline)
    return len(chunks)
