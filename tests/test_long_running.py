"""A worker measures for days in one process: what a stream leaves behind must not pile up.

Waves of concurrent streams on one event loop with one adapter per model, as a Celery worker's
process runs them (voxwatch/workers/process_state.py), over a WebSocket and an HTTP protocol; after the
warm-up, many more waves may not leave even one more live object per stream measured, the busy
poll's per-loop count is gone, and the garbage collector is back on (benchmarks/soak.py measures
the same over minutes, with the worker's RSS).
"""

from __future__ import annotations

import pytest
import asyncio
import gc

from support.contract import KEY, REGISTRY, emulator_fixture
from voxwatch.foundation.clock import busy_poll
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.datasets.manifest import Prompt
from voxwatch.providers.emulators.scenario import TTSScenario
from voxwatch.providers.keys import Secret
from voxwatch.harness.measure import MeasureContext, measure_item

pytestmark = pytest.mark.realtime

STREAMS = 8
WAVES = 12
MODELS = ("cartesia/sonic-3.5", "openai/gpt-4o-mini-tts-2025-12-15")  # WebSocket; HTTP (httpx pool)

cartesia = emulator_fixture("cartesia")
openai = emulator_fixture("openai")


async def _gather(coros) -> list:
    return await asyncio.gather(*coros)


def _live() -> int:
    gc.collect()
    return len(gc.get_objects())


def test_waves_of_streams_leave_nothing_behind(cartesia, openai) -> None:
    scenario = TTSScenario(ttfb_ms=20.0, leading_silence_ms=20.0, speech_ms=100.0, api_key=KEY)
    cartesia(scenario)
    openai(scenario)
    prompts = Catalog([bundled_root()]).load("tts-prompts")
    ctx = MeasureContext(run_id="long", seed=0, region="test", timeout_s=10, secrets=(Secret(KEY),), emulator=True)
    models = [REGISTRY.resolve(m) for m in MODELS]
    adapters = [REGISTRY.create(m) for m in models]
    loop = asyncio.new_event_loop()

    def waves(first: int, n: int) -> None:
        for wave in range(first, first + n):
            model, adapter = models[wave % 2], adapters[wave % 2]
            items = [Prompt(id=f"w{wave}-{i}", text=f"{prompts.prompts[i].text} ({wave})", category="test")
                     for i in range(STREAMS)]
            rows = loop.run_until_complete(_gather(measure_item(model, adapter, prompts, item, ctx) for item in items))
            assert [r.status for r in rows] == ["ok"] * STREAMS, [r.reason for r in rows if r.status != "ok"]

    try:
        waves(0, 4)  # warm-up: imports, connection pools, caches
        before = _live()
        waves(4, WAVES)
        grown = _live() - before
    finally:
        loop.close()
    assert grown < WAVES * STREAMS, f"{grown} more live objects after {WAVES * STREAMS} streams"
    assert loop not in busy_poll._depth
    assert gc.isenabled()
