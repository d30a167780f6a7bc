"""`voxwatch demo`: every page with the whole field of vendors, before a key is held.

With no key the embedded default measures one local engine per protocol, so a newcomer's boards
have nothing to compare. The demo starts the loopback emulators of every cloud vendor (`voxwatch
emulate`), measures every registered cloud model against them, beside the local engines, for a few ticks (and holds short
conversations with every S2S model that can hold one) into a scratch store, then copies those rows
into a separate demo store (var/demo.sqlite) marked as one (voxwatch.store.demo). Every reader of
that store watermarks what it shows as emulated data; the default store is never touched, and
nothing measured here can reach a real board.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterator

from voxwatch.config import Config
from voxwatch.datasets.catalog import Catalog
from voxwatch.foundation.observation import Observation
from voxwatch.foundation.store_url import StoreError
from voxwatch.providers.registry import ModelInfo, Registry
from voxwatch.store import demo as demo_store
from voxwatch.store import open_store

BOARDS = ("stt", "tts", "s2s")


@dataclass(frozen=True)
class DemoResult:
    rows: int
    conversations: int
    models: list[str]
    ticks: int


def demo_models(registry: Registry, vendors: tuple[str, ...]) -> list[ModelInfo]:
    """Every registered model of the single-turn boards that is not retired: each of an emulated vendor
    (against its emulator) and each that needs no key (a local engine, measured here), so the board
    holds what a team compares, local engines beside cloud models. Baselines are scripts, not models."""
    return sorted((m for m in registry.models.values()
                   if (m.vendor in vendors or not m.needs_key) and m.vendor != "agent" and m.board in BOARDS
                   and not registry.is_baseline(m.id) and not registry.standing(m).retired),
                  key=lambda m: (m.board, m.id))


@contextlib.contextmanager
def pointed_at(wanted: dict[str, str]) -> Iterator[None]:
    """The environment with `wanted` set (every emulated vendor's adapter pointed at its emulator:
    emulate.environment) for the length of the block, as it was afterwards."""
    before = {name: os.environ.get(name) for name in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def as_board_rows(rows: list[Observation]) -> list[Observation]:
    """The scratch store's rows as the demo store's board rows (the store's mark says what they are)."""
    return [replace(r, emulator=False) for r in rows]


def fill(cfg: Config, registry: Registry, catalog: Catalog, url: str, ticks: int, sample_size: int,
         conversation_turns: int, say: Callable[[str], None] = print) -> DemoResult:
    """Measure every cloud model against its emulator (and every local engine) `ticks` times into a scratch store, then copy
    the rows (and conversations) into the demo store at `url`, marked."""
    from voxwatch.cli import emulate
    from voxwatch.harness.tick import plan_tick, resolve_instrument

    models = demo_models(registry, emulate.VENDORS)
    if not models:
        raise StoreError("no registered model to measure")
    say(f"starting the loopback emulators of {len(emulate.VENDORS)} vendors; {len(models)} models "
        f"({', '.join(f'{sum(m.board == b for m in models)} {b.upper()}' for b in BOARDS)})")
    with tempfile.TemporaryDirectory(prefix="voxwatch-demo-") as scratch, \
            emulate.emulators(list(emulate.VENDORS), emulate.scenarios(catalog, cfg.chunk_ms)) as urls, \
            pointed_at(emulate.environment(urls)):
        scratch_url = f"sqlite:///{Path(scratch) / 'emulated.sqlite'}"
        config = replace(cfg, store_url=scratch_url, spool_dir=Path(scratch) / "spool")
        store = open_store(scratch_url)
        try:
            instrument = None
            for tick in range(ticks):
                plan = plan_tick(config, registry, catalog, models=[m.id for m in models], datasets=datasets(config),
                                 sample_size=sample_size, seed=20261207 + tick, panel_size=0)
                instrument = instrument or resolve_instrument(config, registry, plan)
                rows = asyncio.run(_tick(config, registry, plan, f"demo-{uuid.uuid4().hex[:12]}", *instrument))
                store.add(rows)
                say(f"tick {tick + 1} of {ticks}: {len(rows)} rows ({sum(r.status != 'ok' for r in rows)} not ok) "
                    "from the emulators")
            talks = _conversations(config, registry, models, conversation_turns, store, say)
            rows = list(store.observations())
            held = store.conversations() if talks else []
        finally:
            store.close()
    demo_store.mark(url, f"voxwatch demo: {ticks} ticks of {len(models)} models against loopback emulators")
    target = open_store(url)
    try:
        target.add(as_board_rows(rows))
        for row, turns in held:
            target.add_conversation(replace(row, emulator=False), turns)
    finally:
        target.close()
    return DemoResult(len(rows), len(held), [m.id for m in models], ticks)


def datasets(config: Config) -> list[str]:
    """Each board's first configured dataset (clean audio, the prompts): a newcomer's look at every model
    in minutes, not every condition of every one."""
    return [config.boards[b].datasets[0] for b in BOARDS if config.boards[b].datasets]


async def _tick(config: Config, registry: Registry, plan, run_id: str, instrument, instrument_id) -> list[Observation]:
    """One tick's rows, every model's items in turn but the models side by side (the emulators answer
    them all at once): minutes, where the harness's one-item-at-a-time tick would take most of an hour.
    Its clocks are an emulator's figures for a demo, never a measurement of anyone."""
    from voxwatch.harness.tick import measure_task, plan_adapters

    with plan_adapters(registry, plan, config.region) as (adapters, secrets):
        async def one_model(model_id: str) -> list[Observation]:
            return [await measure_task(config, task, adapters[model_id], run_id, plan.seed, secrets, instrument,
                                       instrument_id) for task in plan.tasks if task.model.id == model_id]

        done = await asyncio.gather(*(one_model(m) for m in adapters))
    return [row for rows in done for row in rows]


def _conversations(config: Config, registry: Registry, models: list[ModelInfo], turns: int, store,
                   say: Callable[[str], None]) -> bool:
    """Short conversations with every S2S model that can hold one (and the scripted baseline), for the
    conversation pages; False when none can."""
    if turns <= 0:
        return False
    from voxwatch.conversations.tick import hold_conversations, plan_conversations

    from voxwatch.providers.conversation import conversation_refusal

    talkers = [m.id for m in models if m.board == "s2s" and conversation_refusal(registry, m) is None]
    baseline = [m.id for m in registry.models.values() if registry.is_baseline(m.id) and m.board == "s2s"]
    talks = plan_conversations(config, registry, models=talkers + baseline, turns=turns)
    if not talks.models:
        return False
    result = hold_conversations(config, store, registry, talks)
    say(f"conversations: {len(result.conversations)} held ({turns} turns each) with {len(talks.models)} models")
    return True
