"""One monitoring tick in-process: plan the sample, measure every (item, model), store the rows.

The same plan and `measure_item` serve `voxwatch run` and the distributed workers. Work is
ordered item-major (every model measures item 1, then item 2, ...) so no provider is burst.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import random
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
from tqdm import tqdm

from voxwatch.foundation import preload, priority
from voxwatch.config import Config
from voxwatch.datasets.catalog import Catalog, Dataset
from voxwatch.datasets.manifest import Clip, Prompt
from voxwatch.datasets.sampling import draw, panel
from voxwatch.foundation.observation import Observation, RunRecord, run_status
from voxwatch.providers.keys import key_variable, model_secrets
from voxwatch.providers.local.dnsmos_quality import DnsmosQuality
from voxwatch.providers.registry import ModelInfo, Registry, RegistryError
from voxwatch.store import Store
from voxwatch.foundation.store_url import StoreError
from voxwatch.store.spool import SpoolingWriter, Unkept

from voxwatch.foundation.clock import on_the_clock
from voxwatch.harness.backpressure import Concurrency, aim_for
from voxwatch.harness.measure import MeasureContext, failed_observation, measure_item
from voxwatch.harness.retry_after import VendorHolds, hold_s

BOARD_KIND = {"stt": "audio", "s2s": "audio", "tts": "text"}


class PlanError(ValueError):
    """A run that cannot start: unknown model or dataset, or a dataset on the wrong board."""


@dataclass(frozen=True)
class Task:
    model: ModelInfo
    dataset: Dataset
    item: Clip | Prompt


@dataclass
class Plan:
    seed: int
    tasks: list[Task] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # one line per model that cannot run here
    warnings: list[str] = field(default_factory=list)  # one line per model measured that retires soon


def plan_tick(config: Config, registry: Registry, catalog: Catalog, *, models: list[str] | None = None,
              datasets: list[str] | None = None, sample_size: int | None = None, seed: int | None = None,
              panel_size: int | None = None, draw_size: int | None = None) -> Plan:
    """Resolve models and datasets (integrity-checked), then per family its sentinel panel
    and a random draw of sample_size of the others (draw_size 0: the panel alone, a confirmation
    burst). The panel is [run] panel_size unless panel_size is given; an explicit sample_size alone
    asks for exactly that sample (a one-off run, no panel)."""
    seed = seed if seed is not None else (config.seed if config.seed >= 0 else random.SystemRandom().randrange(2**31))
    n = draw_size if draw_size is not None else (sample_size or config.sample_size)
    k = panel_size if panel_size is not None else (0 if sample_size else config.panel_size)
    if models is not None:
        chosen_models = [registry.resolve(m) for m in models]
    else:
        chosen_models = [registry.resolve(m) for b in config.boards.values() for m in b.models]
    loaded: dict[str, Dataset] = {}
    plan = Plan(seed=seed)
    by_board: dict[str, tuple[list[ModelInfo], list[Dataset]]] = {}
    wanted = set(datasets or [])
    used: set[str] = set()
    for board in ("stt", "tts", "s2s"):
        board_models = [m for m in chosen_models if m.board == board]
        if not board_models:
            continue
        names = list(datasets or config.boards[board].datasets)
        board_sets = []
        for name in names:
            if name not in loaded:
                loaded[name] = catalog.load(name)
            ds = loaded[name]
            if ds.info.kind != BOARD_KIND[board]:
                if datasets is None:
                    raise PlanError(f"dataset {name} ({ds.info.kind}) cannot run on the {board} board")
                continue
            board_sets.append(ds)
            used.add(name)
        by_board[board] = (board_models, board_sets)
    unused = wanted - used
    if unused:
        raise PlanError(f"dataset(s) {', '.join(sorted(unused))} fit no board of the chosen models")
    for board, (board_models, board_sets) in by_board.items():
        plan.tasks.extend(_draw_tasks(runnable_models(board_models, plan, registry.day), board_sets, seed, n, k))
    return plan


def plan_burst(config: Config, registry: Registry, catalog: Catalog, model: str, dataset: str) -> Plan:
    """A confirmation burst (docs/ALERTS.md): the dataset's sentinel panel alone, for one model."""
    if config.panel_size <= 0:
        raise PlanError("no sentinel panel ([run] panel_size = 0): a burst would measure nothing")
    return plan_tick(config, registry, catalog, models=[model], datasets=[dataset], draw_size=0,
                     panel_size=config.panel_size)


def runnable_models(models: list[ModelInfo], plan: Plan, day: dt.date) -> list[ModelInfo]:
    """The models that can run here on `day`; one line in `plan.skipped` for each that cannot (a retired
    model is never measured), one in `plan.warnings` for each that retires soon."""
    runnable = []
    for m in models:
        standing = m.standing(day)
        if standing.retired:
            plan.skipped.append(f"skipped {m.id}: {standing.notice}")
        elif not m.key_is_set():
            plan.skipped.append(f"skipped {m.id}: set {key_variable(m.vendor)} to measure it")
        else:
            runnable.append(m)
            if standing.notice:
                plan.warnings.append(f"warning: {m.id} is {standing.notice}")
    return runnable


def _draw_tasks(models: list[ModelInfo], datasets: list[Dataset], seed: int, n: int, k: int = 0) -> list[Task]:
    """Per family its panel of k utterances first, then one draw of n of the other utterances, shared by
    every model and every condition; ordered item-major (the panel first, so an outage shows early)."""
    families: dict[str, list[Dataset]] = {}
    for ds in datasets:
        families.setdefault(ds.info.family, []).append(ds)
    tasks = []
    for family, members in families.items():
        by_uid = [{_uid(i): i for i in ds.items} for ds in members]
        common = set.intersection(*(set(m) for m in by_uid))
        pinned = panel(family, sorted(common), k)
        drawn = draw(seed, family, sorted(common - set(pinned)), n) if n > 0 else []
        for uid in pinned + drawn:
            for ds, items in zip(members, by_uid):
                tasks.extend(Task(m, ds, items[uid]) for m in models)
    return tasks


def _uid(item: Clip | Prompt) -> str:
    return item.utterance_id if isinstance(item, Clip) else item.id


@dataclass
class TickResult:
    run: RunRecord
    rows: list[Observation]
    skipped: list[str]
    spooled: Path | None = None
    unkept: Unkept | None = None  # rows neither the store nor a spool folder took: counted, said, not in run.rows


def run_tick(config: Config, store: Store, registry: Registry, plan: Plan, *, progress: bool = True,
             instrument: Callable | None = None, instrument_id: str | None = None,
             on_row: Callable[[Observation], None] | None = None) -> TickResult:
    """Measure every task of the plan and store each row as it completes.

    An interrupted tick ends `partial` (or `failed` with no ok row) and keeps what it completed;
    rows the store refuses are retried and finally spooled to a file (spool_dir, else its fallback),
    never dropped silently: rows no folder takes either end the run `partial` (or `failed`) without
    them, counted in its note and in `unkept`.
    """
    preload.numerics()  # before the first measurement, not inside it
    priority.CLOCK_NICE = config.clock_nice
    run = RunRecord(run_id=uuid.uuid4().hex, started_at=time.time(), region=config.region, seed=plan.seed,
                    planned=len(plan.tasks))
    store.start_run(run)
    writer = SpoolingWriter(store, config.spool_dirs, run.run_id)
    rows: list[Observation] = []
    pressure = Concurrency(config.concurrency, aim_for(config.stall_bound_ms))
    try:
        asyncio.run(_measure_all(config, writer, registry, plan, run, rows, progress, instrument, instrument_id, on_row,
                                 pressure))
        run.status = run_status(run.rows, run.failed_rows)
    except BaseException as exc:
        run.status = run_status(run.rows, run.failed_rows, complete=False)
        run.note = f"interrupted: {type(exc).__name__}"
        raise
    finally:
        if adapted := pressure.note():
            run.note = _noted(run.note, adapted)
        if refused := priority.note():
            run.note = _noted(run.note, refused)
        run.finished_at = time.time()
        spooled = writer.flush()
        if spooled is not None:
            run.note = _noted(run.note, f"store refused rows ({writer.last_error}); spooled to {spooled}")
        if writer.unkept_error is not None:
            _without_unkept(run, writer)
        try:
            store.finish_run(run)
        except StoreError:
            pass  # the rows are safe (stored or spooled): the reconciler finishes the record from them
    return TickResult(run, rows, plan.skipped, spooled, writer.unkept_error)


def _noted(note: str | None, more: str) -> str:
    return f"{note}; {more}" if note else more


def _without_unkept(run: RunRecord, writer: SpoolingWriter) -> None:
    """The run's record without the rows nothing kept: `partial` (or `failed`), saying how many and why."""
    measured = run.rows
    run.rows -= len(writer.unkept)
    run.failed_rows -= sum(row.status != "ok" for row in writer.unkept)
    run.status = run_status(run.rows, run.failed_rows, complete=False)
    run.note = _noted(run.note, f"{len(writer.unkept)} of {measured} rows lost: {writer.unkept_error}")


def create_adapter(registry: Registry, model: ModelInfo, region: str | None = None) -> object:
    """The model's adapter for a worker in `region`, or the exception that prevented it (every item
    then becomes an error row)."""
    try:
        return registry.create(model, region)
    except (RegistryError, ImportError, OSError, RuntimeError) as exc:
        return exc


@contextlib.contextmanager
def plan_adapters(registry: Registry, plan: Plan, region: str | None) -> Iterator[tuple[dict[str, object], tuple]]:
    """Each model's adapter for a plan (the exception where one cannot be made: its rows say so) and
    every secret its rows must never hold; the adapters closed afterwards."""
    models = {t.model.id: t.model for t in plan.tasks}
    adapters = {model_id: create_adapter(registry, model, region) for model_id, model in models.items()}
    try:
        yield adapters, tuple(s for t in plan.tasks for s in model_secrets(t.model))
    finally:
        for adapter in adapters.values():
            if hasattr(adapter, "close"):
                adapter.close()


async def _measure_all(config: Config, writer: SpoolingWriter, registry: Registry, plan: Plan, run: RunRecord,
                       rows: list[Observation], progress: bool, instrument, instrument_id, on_row,
                       pressure: Concurrency) -> None:
    """Every task, item-major, at most `pressure.limit` at once (one by default): a new measurement
    starts once the finished ones' scoring is done, so no scoring runs beside a clock."""
    bar = tqdm(total=len(plan.tasks), desc="measuring", unit="item", file=sys.stderr, disable=not progress)
    holds = VendorHolds()  # each vendor's Retry-After, from its last 429
    with plan_adapters(registry, plan, config.region) as (adapters, secrets), contextlib.closing(bar):

        async def one(task: Task) -> None:
            row = None
            try:
                row = await measure_task(config, task, adapters[task.model.id], run.run_id, plan.seed, secrets,
                                         instrument, instrument_id)
            finally:
                await pressure.done(row)
            if row.status == "rate_limited":
                holds.hold(task.model.vendor, hold_s(row.retry_after_s, config.default_backoff_s))
            writer.write(row)
            rows.append(row)
            run.rows += 1
            run.failed_rows += row.status != "ok"
            if on_row is not None:
                on_row(row)
            bar.set_postfix_str(f"{task.model.id} {task.dataset.name}", refresh=False)
            bar.update(1)

        started: list[asyncio.Task] = []
        try:
            for task in plan.tasks:
                await pressure.admit()
                await on_the_clock.scored()
                wait = holds.wait_s(task.model.vendor, config.max_retry_after_s)
                if wait > 0:  # a rate limit is honoured here, between items, never inside a clock
                    await asyncio.sleep(wait)
                started.append(asyncio.create_task(one(task)))
            await asyncio.gather(*started)
        finally:
            for t in started:
                t.cancel()


async def measure_task(config: Config, task: Task, adapter, run_id: str, seed: int, secrets: tuple,
                       instrument, instrument_id) -> Observation:
    """One row for one task, in-process or in a Celery worker: the worker's region is stamped on it."""
    ctx = MeasureContext(run_id=run_id, seed=seed, region=config.region, timeout_s=config.timeout_s,
                         chunk_ms=config.chunk_ms, recordings_dir=config.recordings_dir, instrument=instrument if heard(task) else None,
                         instrument_id=instrument_id, secrets=secrets, emulator=getattr(adapter, "emulator", False),
                         quality=speech_quality if task.model.board in ("tts", "s2s") else None,
                         stall_bound_ms=config.stall_bound_ms, eot_wait_s=config.eot_wait_s)
    if isinstance(adapter, Exception):
        return failed_observation(task.model, task.dataset, task.item, ctx, "error",
                                  f"adapter unavailable: {adapter}")
    return await measure_item(task.model, adapter, task.dataset, task.item, ctx)


def speech_quality(audio16k: np.ndarray) -> float:
    """The fixed speech quality instrument's score, its model loaded on the first call in a process
    (in the harness' thread, off the clock); a model that cannot load (its weights fail their sha256)
    raises on each call: an instrument error on each row."""
    return DnsmosQuality.get().score(audio16k)


def heard(task: Task) -> bool:
    """Whether the fixed instrument hears what the task's model sends: a TTS synthesis (intelligibility
    WER) or an S2S reply to a spoken question with known answers (answer accuracy)."""
    return task.model.board == "tts" or (task.model.board == "s2s" and bool(getattr(task.item, "answers", None)))


def resolve_instrument(config: Config, registry: Registry, plan: Plan) -> tuple[Callable | None, str | None]:
    """The fixed STT that scores TTS intelligibility and S2S answers; only loaded when a task is heard."""
    if not any(heard(t) for t in plan.tasks):
        return None, None
    return load_instrument(config, registry)


def load_instrument(config: Config, registry: Registry) -> tuple[Callable, str]:
    """The configured instrument, loaded (a Celery worker process loads it once, on its first heard task)."""
    transcribe, model_id = stt_instrument(registry, config.tts_instrument, "[boards.tts] instrument")
    if model_id.startswith("faster-whisper/"):
        from voxwatch.providers.local.whisper_stt import WhisperTiny

        WhisperTiny.get()
    return transcribe, model_id


def stt_instrument(registry: Registry, model_id: str, key: str) -> tuple[Callable[[np.ndarray], str], str]:
    """A fixed STT instrument named by the config key `key` (float32 16 kHz audio -> text) and its id: the
    local faster-whisper model (loaded on its first call, off the clock) or openai/whisper-1 with its key."""
    model = registry.resolve(model_id)
    standing = registry.standing(model)
    if standing.retired:
        raise PlanError(f"instrument {model.id} is {standing.notice}: configure another {key}")
    if model.id == "openai/whisper-1":
        if not model.key_is_set():
            raise PlanError(f"instrument {model.id}: set {key_variable(model.vendor)} to use it")
        return registry.create(model).transcribe_text, model.id
    if model.vendor != "faster-whisper":
        raise PlanError(f"instrument {model.id}: {key} is the local faster-whisper model or openai/whisper-1")
    from voxwatch.providers.local.whisper_stt import WhisperTiny

    registry.create(model)  # checks the installed version against the id
    return lambda audio16k: WhisperTiny.get().transcribe(audio16k), model.id
