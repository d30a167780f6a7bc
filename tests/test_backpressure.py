"""Back-pressure on the worker's own stalls (METHOD "Clock witness"): a stalled row halves how many
measurements run at once, calm rows earn it back one at a time, never above the configured most; a
tick with several at once measures every task and says how its concurrency went."""

from __future__ import annotations

import asyncio
from pathlib import Path

from voxwatch.config import load
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.foundation.observation import Observation
from voxwatch.harness.backpressure import CALM_ROWS, Concurrency
from voxwatch.harness.tick import plan_tick, run_tick
from voxwatch.metrics.witness import Witness
from voxwatch.providers.registry import Registry
from voxwatch.store import open_store


def _row(status: str = "ok", reason: str | None = None) -> Observation:
    return Observation(run_id="r", model_id="m/x", dataset="d", clip_id="c", attempt=1, board="stt", vendor="m",
                       protocol="stt-stream", region="here", started_at=0.0, status=status, reason=reason)


STALLED = _row("excluded", Witness(12.0, "kernel").reason)


def test_stalls_halve_the_limit_and_calm_rows_earn_it_back():
    async def run() -> Concurrency:
        c = Concurrency(8)
        for row in (STALLED, STALLED, _row("excluded", "protocol x has no harness yet")):
            await c.admit()
            await c.done(row)
        assert c.limit == 2 and c.stalled == 2  # 8 -> 4 -> 2; an exclusion of another kind moves nothing
        for _ in range(CALM_ROWS - 1):
            await c.admit()
            await c.done(_row())
        assert c.limit == 2
        await c.admit()
        await c.done(_row())
        assert c.limit == 3
        for _ in range(10 * CALM_ROWS):
            await c.admit()
            await c.done(_row())
        assert c.limit == 8  # never above the most
        return c

    c = asyncio.run(run())
    assert c.changes[:3] == [(8, 4), (4, 2), (2, 3)]
    assert c.note().startswith("2 row(s) excluded as the measuring worker's stall") and "ending at 8" in c.note()
    assert Concurrency(4).note() is None


def test_admission_waits_for_a_place_under_the_limit():
    async def run() -> list[int]:
        c, seen = Concurrency(2), []

        async def one() -> None:
            await c.admit()
            seen.append(c.running)
            await asyncio.sleep(0.01)
            await c.done(STALLED)  # each one stalled: 2 -> 1

        await asyncio.gather(*(one() for _ in range(5)))
        return seen

    seen = asyncio.run(run())
    assert max(seen) == 2 and seen[-1] == 1 and len(seen) == 5


def test_a_tick_of_several_at_once_measures_every_task(tmp_path: Path):
    config = load(environ={"VOXWATCH_STORE_SPOOL_DIR": str(tmp_path / "spool"), "VOXWATCH_RUN_CONCURRENCY": "3"})
    assert config.concurrency == 3
    registry = Registry.default()
    plan = plan_tick(config, registry, Catalog([bundled_root()]), models=["espeak-ng/en-us@1.52.0"], sample_size=5,
                     seed=4)
    store = open_store(f"sqlite:///{tmp_path}/s.sqlite")
    try:
        result = run_tick(config, store, registry, plan, progress=False)
        stored = list(store.observations())
    finally:
        store.close()
    assert len(result.rows) == len(plan.tasks) == len(stored) and result.run.rows == len(plan.tasks)
    assert {r.clip_id for r in stored} == {t.item.id for t in plan.tasks}
    assert all(r.status == "ok" for r in stored), [(r.status, r.reason) for r in stored]
