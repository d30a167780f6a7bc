"""What one worker process keeps between tasks: adapters, datasets and scenarios, the instrument, the
store, a loop.

Adapters are created once per process and reused, as `voxwatch run` reuses them for a whole tick
(a warm connection pool, a loaded engine); they live on one event loop that outlasts any task.
Everything is made lazily in the process that uses it, so nothing crosses a fork.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from typing import Callable

from celery.exceptions import SoftTimeLimitExceeded

from voxwatch import __version__
from voxwatch.foundation import preload, priority
from voxwatch.config import Config
from voxwatch.conversations.catalog import ScenarioCatalog, bundled_root as scenarios_root
from voxwatch.conversations.scenario_file import LoadedScenario
from voxwatch.datasets.catalog import Catalog, Dataset, bundled_root
from voxwatch.metrics import METHOD_VERSION
from voxwatch.foundation.observation import Observation
from voxwatch.providers.keys import model_secrets
from voxwatch.providers.registry import ModelInfo, Registry
from voxwatch.store import Store, open_store
from voxwatch.foundation.store_url import StoreError
from voxwatch.store.spool import SpoolingWriter

from voxwatch.workers.coordination import Ledger
from voxwatch.workers.host_pressure import HostPressure
from voxwatch.workers.job import Job
from voxwatch.harness.measure import MeasureContext, failed_observation
from voxwatch.harness.retry_after import wait_s
from voxwatch.harness.tick import PlanError, Task, create_adapter, heard, load_instrument, measure_task

SAFETY_S = 5.0  # the measurement must end this long (at most a fifth of it) before the soft time limit


class Unmeasurable(Exception):
    """A job this worker cannot rebuild (unknown model or dataset, another copy of the dataset)."""


class ProcessState:
    def __init__(self, config: Config) -> None:
        preload.numerics()  # before the first measurement, not inside it
        priority.CLOCK_NICE = config.clock_nice
        self.config, self.pid = config, os.getpid()
        self.registry = Registry.default(files=config.registry_files)
        self.catalog = Catalog([bundled_root(), config.datasets_dir])
        self.ledger = Ledger(config.broker.url, config.broker.queue_prefix)
        self._datasets: dict[str, Dataset] = {}
        self.scenarios = ScenarioCatalog([scenarios_root(), config.scenarios_dir])
        self._scenarios: dict[tuple[str, str], LoadedScenario] = {}
        self._adapters: dict[str, object] = {}
        self._instrument: tuple[Callable, str] | None = None
        self._store: Store | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pressure: HostPressure | None = None

    def pressure(self) -> HostPressure:
        """The worker's shared limit on measurements at once (workers.host_pressure)."""
        if self._pressure is None:
            self._pressure = HostPressure.for_this_worker(self.ledger.redis, self.config.broker.queue_prefix,
                                                          self.config.region, self.config.broker.soft_time_limit_s,
                                                          self.config.stall_bound_ms)
        return self._pressure

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = open_store(self.config.store_url)
        return self._store

    def dataset(self, name: str) -> Dataset:
        """Loaded (every file's sha256 checked) once per process."""
        if name not in self._datasets:
            self._datasets[name] = self.catalog.load(name)
        return self._datasets[name]

    def task(self, job: Job) -> Task:
        try:
            model = self.registry.resolve(job.model)
            dataset = self.dataset(job.dataset)
            if dataset.manifest_sha256 != job.manifest_sha256:  # changed on disk since it was loaded?
                self._datasets.pop(job.dataset)
                dataset = self.dataset(job.dataset)
        except SoftTimeLimitExceeded:
            raise  # the task's limit, reached while loading the dataset: the task says so, not "cannot rebuild"
        except Exception as exc:
            raise Unmeasurable(f"this worker cannot rebuild the task: {exc}") from None
        if dataset.manifest_sha256 != job.manifest_sha256:
            raise Unmeasurable(f"this worker's {job.dataset} manifest differs from the planner's "
                               f"({dataset.manifest_sha256[:12]} vs {job.manifest_sha256[:12]})")
        item = next((i for i in dataset.items if i.id == job.item), None)
        if item is None:
            raise Unmeasurable(f"{job.item} is not in this worker's {job.dataset}")
        return Task(model, dataset, item)

    def instrument(self) -> tuple[Callable, str]:
        """The instrument (TTS intelligibility, S2S answers), loaded on the first task it hears; a failure
        to load it is an instrument error on each row (not a provider failure), as METHOD says."""
        if self._instrument is None:
            try:
                self._instrument = load_instrument(self.config, self.registry)
            except (PlanError, ImportError, OSError, RuntimeError, ValueError) as exc:
                message = str(exc)

                def unavailable(_audio) -> str:
                    raise RuntimeError(f"instrument unavailable: {message}")

                self._instrument = unavailable, self.config.tts_instrument
        return self._instrument

    def adapter(self, model: ModelInfo) -> object:
        if model.id not in self._adapters:
            self._adapters[model.id] = create_adapter(self.registry, model, self.config.region)
        return self._adapters[model.id]

    def measure(self, job: Job, budget_s: float) -> Observation:
        """The job's row, measured as `voxwatch run` measures it, within budget_s seconds."""
        started = time.monotonic()
        try:
            task = self.task(job)
        except Unmeasurable as exc:
            return bare_row(job, self.config.region, str(exc), self.registry)
        not_before = self.ledger.vendor_not_before(self.config.region, task.model.vendor)
        wait = wait_s(time.time(), not_before, self.config.max_retry_after_s, budget_s)
        if wait > 0:  # a rate limit is honoured here, between items, never inside a clock
            time.sleep(wait)
        instrument, instrument_id = self.instrument() if heard(task) else (None, None)
        adapter = self.adapter(task.model)
        # the worker's back-pressure: wait for a place between items (at most half of what is left)
        place = self.pressure().admit(time.monotonic() + (budget_s - (time.monotonic() - started)) / 2)
        coro = measure_task(self.config, task, adapter, job.run_id, job.seed, _secrets(task.model), instrument,
                            instrument_id)
        deadline = max(1.0, budget_s - (time.monotonic() - started) - min(SAFETY_S, budget_s / 5))
        row = None
        try:
            row = self.loop.run_until_complete(asyncio.wait_for(coro, deadline))
            return row
        except asyncio.TimeoutError:
            return self.failure_row(job, "timeout", f"the measurement did not end within the task's time limit "
                                                    f"({budget_s:g} s)", getattr(adapter, "emulator", False))
        finally:
            self._adapted(job, place, row)

    def _adapted(self, job: Job, place: str | None, row: Observation | None) -> None:
        """Free the worker's place and adapt its limit to the row; a limit that fell is noted on the run."""
        pressure = self.pressure()
        fell = pressure.fell(pressure.done(place, row))
        if fell is not None:
            with contextlib.suppress(Exception):
                self.ledger.add_note(job.run_id, fell)

    def failure_row(self, job: Job, status: str, reason: str, emulator: bool = False) -> Observation:
        """The job's row when the task itself could not finish the measurement."""
        try:
            task = self.task(job)
        except Unmeasurable:
            return bare_row(job, self.config.region, reason, self.registry, status)
        ctx = MeasureContext(run_id=job.run_id, seed=job.seed, region=self.config.region, attempt=job.attempt,
                             emulator=emulator, secrets=_secrets(task.model))
        return failed_observation(task.model, task.dataset, task.item, ctx, status, reason)

    def writer(self, run_id: str) -> SpoolingWriter:
        """Rows go to the store, or to the spool file when it cannot even be opened."""
        return SpoolingWriter(self.store_or_refusal(), self.config.spool_dirs, run_id)

    def store_or_refusal(self) -> Store:
        """The store, or one that refuses every write with the reason it cannot be opened (so what
        is written goes to the spool)."""
        try:
            return self.store
        except StoreError as exc:
            return _Refusing(exc)

    def scenario(self, name: str, pin: str) -> LoadedScenario:
        """A planned conversation's scenario, by name and pin (its audio checked once per process)."""
        if (name, pin) not in self._scenarios:
            self._scenarios[(name, pin)] = self.scenarios.load_pinned(name, pin)
        return self._scenarios[(name, pin)]

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        return self._loop

    def abandon_loop(self) -> None:
        """After a time limit interrupted the loop: cancel what ran on it and drop the adapters bound to it."""
        loop, self._loop = self._loop, None
        adapters, self._adapters = self._adapters, {}
        if loop is None:
            return
        with contextlib.suppress(Exception):
            pending = asyncio.all_tasks(loop)
            for t in pending:
                t.cancel()
            loop.run_until_complete(asyncio.wait_for(asyncio.gather(*pending, return_exceptions=True), 5))
        self._close(adapters)
        with contextlib.suppress(Exception):
            loop.close()

    @staticmethod
    def _close(adapters: dict[str, object]) -> None:
        for adapter in adapters.values():
            if hasattr(adapter, "close"):
                with contextlib.suppress(Exception):
                    adapter.close()

    def reset_store(self) -> None:
        """Drop the store's connections (reopened on next use): a time limit that interrupted one of its
        commands leaves the connection busy with it for good."""
        store, self._store = self._store, None
        if store is not None:
            with contextlib.suppress(Exception):
                store.close()

    def close(self) -> None:
        self._close(self._adapters)
        self._adapters = {}
        self.reset_store()


def _secrets(model: ModelInfo) -> tuple:
    """The keys a reason must never show (the vendor's, or each of a cascade's parts')."""
    return model_secrets(model)


class _Refusing:
    def __init__(self, error: StoreError) -> None:
        self.error = error

    def add(self, rows) -> int:
        raise self.error

    def add_conversation(self, row, turns) -> bool:
        raise self.error


def bare_row(job: Job, region: str, reason: str, registry: Registry, status: str = "error") -> Observation:
    """A failure row for a job this worker cannot rebuild or finish: the key, what is known of the
    model, the status and the reason, with no measurement."""
    try:
        model = registry.resolve(job.model)
        board, vendor, protocol = model.board, model.vendor, model.protocol
    except Exception:
        board, vendor, protocol = "", job.model.split("/", 1)[0], ""
    return Observation(run_id=job.run_id, model_id=job.model, dataset=job.dataset, clip_id=job.item,
                       attempt=job.attempt, board=board, vendor=vendor, protocol=protocol, region=region,
                       started_at=time.time(), status=status, reason=reason[:500], seed=job.seed,
                       method_version=METHOD_VERSION, runner_version=__version__)


_state: ProcessState | None = None
_inherited: list[ProcessState] = []


def state(config: Config) -> ProcessState:
    """This process's state (a forked child makes its own, never sharing its parent's connections).

    A parent's state inherited through fork is kept, unused, rather than dropped: finalizing it here
    would close connections whose sockets the parent still uses (a Postgres session, for one).
    """
    global _state
    if _state is None or _state.pid != os.getpid():
        if _state is not None:
            _inherited.append(_state)
        _state = ProcessState(config)
    return _state


def close_state() -> None:
    if _state is not None and _state.pid == os.getpid():
        _state.close()
