"""A worker's concurrent calls must not delay one another's clocks: their chunk deadlines are spread
across the chunk period, and work that times nothing waits until no call is on the clock."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import numpy as np
from scipy.signal import resample_poly

from voxwatch.foundation.clock import on_the_clock
from voxwatch.foundation.audio import resample
from voxwatch.foundation.events import CHUNK_SENT, Timeline
from voxwatch.harness.pacer import PHASES, paced_send, phases

PERIOD_NS = 20_000_000


class _Sink:
    async def send_audio(self, chunk: bytes) -> None:
        pass


def test_streams_started_together_write_their_chunks_at_different_phases() -> None:
    async def main() -> list[Timeline]:
        timelines = [Timeline() for _ in range(PHASES)]
        await asyncio.gather(*(paced_send(_Sink(), bytes(640 * 3), 16000, 20, t) for t in timelines))
        return timelines

    timelines = asyncio.run(main())
    firsts = [t.of(CHUNK_SENT)[0].deadline_ns for t in timelines]
    phases = {(d % PERIOD_NS) // (PERIOD_NS // PHASES) for d in firsts}
    assert len(phases) == PHASES  # one stream per phase, none sharing a deadline
    for t in timelines:  # still absolute deadlines, one period apart, and no chunk before its deadline
        sent = t.of(CHUNK_SENT)
        assert [e.deadline_ns - sent[0].deadline_ns for e in sent] == [0, PERIOD_NS, 2 * PERIOD_NS]
        assert all(e.t_ns >= e.deadline_ns for e in sent)


def test_a_stream_starts_at_the_least_taken_phase_within_one_period_and_frees_it_when_it_ends() -> None:
    now = 1_000_000_123

    async def main() -> tuple[int, int, int]:
        with phases.start(now, PERIOD_NS) as a:
            pass
        with phases.start(now, PERIOD_NS) as b:
            with phases.start(now, PERIOD_NS) as c:
                return a, b, c

    a, b, c = asyncio.run(main())
    step = PERIOD_NS // PHASES
    assert a == b  # the first stream's phase was free again: the nearest one ahead of now
    assert now <= a < now + step and a % step == 0
    assert c == a + step  # taken: the next one


def test_work_that_times_nothing_waits_until_no_call_is_on_the_clock() -> None:
    order: list[str] = []

    async def call(name: str, seconds: float) -> None:
        with on_the_clock:
            await asyncio.sleep(seconds)
            order.append(f"{name} stops its clock")
        await on_the_clock.quiet(10)
        order.append(f"{name} records")

    async def main() -> None:
        await asyncio.gather(call("short", 0.01), call("long", 0.2))

    asyncio.run(main())
    assert order == ["short stops its clock", "long stops its clock", "short records", "long records"]


def test_a_worker_that_never_stops_measuring_still_finishes_its_rows() -> None:
    async def main() -> tuple[bool, bool]:
        with on_the_clock:
            busy = await on_the_clock.quiet(0.05)
        return busy, await on_the_clock.quiet(0.05)

    assert asyncio.run(main()) == (False, True)


def test_resampling_is_scipys_resample_poly_in_numpy_with_its_filter_designed_once() -> None:
    """foundation.audio.resample: scipy's output (its default Kaiser filter) to rounding, at every length
    (none, one sample, a chunk, seconds), without scipy.signal in the process."""
    from voxwatch.foundation import audio

    rng = np.random.default_rng(3)
    pairs = [(24000, 16000, 2, 3), (22050, 16000, 320, 441), (16000, 24000, 3, 2), (44100, 16000, 160, 441),
             (22050, 24000, 160, 147), (16000, 8000, 1, 2), (8000, 16000, 2, 1), (48000, 16000, 1, 3)]
    for rate_in, rate_out, up, down in pairs:
        for n in (1, 2, 37, 480, 4801, 22050):
            x = rng.standard_normal(n)
            ours, scipys = resample(x, rate_in, rate_out), resample_poly(x, up, down)
            assert ours.shape == scipys.shape and np.abs(ours - scipys).max() < 1e-12, (rate_in, rate_out, n)
        assert resample(np.zeros(0), rate_in, rate_out).shape == (0,)
    designed = audio._polyphase.cache_info()
    resample(rng.standard_normal(480), 24000, 16000)
    assert audio._polyphase.cache_info().misses == designed.misses  # that pair's phases were designed once
    out = subprocess.run([sys.executable, "-c", "import sys, numpy as np; from voxwatch.foundation.audio import "
                          "resample; resample(np.ones(800), 22050, 24000); print('scipy.signal' in sys.modules)"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
