"""Back-pressure on the worker's own stalls (METHOD "Clock witness"): a stalled row halves how many
measurements run at once, calm rows earn it back one at a time, never above the configured most; a
tick with several at once measures every task and says how its concurrency went."""

from __future__ import annotations

import asyncio
from pathlib import Path

from voxwatch.config import load
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.foundation.observation import Observation
from voxwatch.harness.backpressure import AIM_MS, CALM_ROWS, Concurrency
from voxwatch.harness.tick import plan_tick, run_tick
from voxwatch.metrics.witness import Witness
from voxwatch.providers.registry import Registry
from voxwatch.store import open_store


def _row(status: str = "ok", reason: str | None = None, uncertainty_ms: float | None = None) -> Observation:
    return Observation(run_id="r", model_id="m/x", dataset="d", clip_id="c", attempt=1, board="stt", vendor="m",
                       protocol="stt-stream", region="here", started_at=0.0, status=status, reason=reason,
                       clock_uncertainty_ms=uncertainty_ms)


STALLED = _row("excluded", Witness(12.0, "kernel").reason)


def test_a_slow_start_doubles_until_a_stall_then_stalls_halve_and_calm_rows_earn_it_back():
    async def run() -> Concurrency:
        c = Concurrency(8)
        assert c.limit == 1
        for _ in range(1 + 2 + 4):  # a limit's worth of calm rows doubles it: 1 -> 2 -> 4 -> 8
            await c.admit()
            await c.done(_row())
        assert c.limit == 8 and c.note() is None  # a slow start alone is no news
        for row in (STALLED, STALLED, _row("excluded", "protocol x has no harness yet")):
            await c.admit()
            await c.done(row)
        assert c.limit == 2 and c.stalled == 2  # 8 -> 4 -> 2; an exclusion of another kind moves nothing
        for _ in range(CALM_ROWS - 1):  # the slow start is over: one more per CALM_ROWS calm rows
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
    assert c.changes[:6] == [(1, 2), (2, 4), (4, 8), (8, 4), (4, 2), (2, 3)]
    assert c.note().startswith("2 row(s) excluded as the measuring worker's stall") and "ending at 8" in c.note()
    assert Concurrency(4).note() is None


def test_a_row_published_over_the_aim_sheds_streams_before_any_is_excluded():
    async def run() -> Concurrency:
        c = Concurrency(16, AIM_MS)
        for _ in range(1 + 2 + 4 + 8):
            await c.admit()
            await c.done(_row(uncertainty_ms=0.2))
        assert c.limit == 16
        for uncertainty in (0.3, AIM_MS, AIM_MS + 0.5, None, AIM_MS + 2.0):
            await c.admit()
            await c.done(_row(uncertainty_ms=uncertainty))
        return c

    c = asyncio.run(run())
    # at the aim is within it; over it halves, as a stalled row does, and counts apart from the stalled
    assert c.changes[4:] == [(16, 8), (8, 4)] and (c.stalled, c.uneasy) == (0, 2)
    assert "0 row(s) excluded" in c.note() and f"2 published over the {AIM_MS:g} ms aim" in c.note()
    assert c.admitted == 20 and c.mean_held == 1.0


def test_admission_waits_for_a_place_under_the_limit():
    async def run() -> list[int]:
        c, seen = Concurrency(2), []
        await c.admit()
        await c.done(_row())  # the slow start's first calm row: 1 -> 2

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
