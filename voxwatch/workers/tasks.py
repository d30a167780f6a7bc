"""The Celery tasks of distributed mode: plan a tick and fan it out; measure one (model, dataset, item);
finish runs from the store (the reconciler); evaluate the regression alerts.

Both reuse what `voxwatch run` runs: `plan_tick` draws the sample once (seeded, recorded) and
orders it item-major; each measure task rebuilds its task by name and calls `measure_item`
through `runner.measure_task`. A measure task always ends in its row, even when the task itself
fails or is killed by the hard time limit (then the row says so), so every run finishes.
"""

from __future__ import annotations

import contextlib
import copy
import multiprocessing.process as mp_process
import random
import socket
import time
from pathlib import Path

import redis
from billiard import process as billiard_process
from billiard.exceptions import TimeLimitExceeded
from celery import Task as CeleryTask
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_process_init, worker_process_shutdown
from celery.utils.log import get_task_logger

from voxwatch.boards import compare_refresh
from voxwatch.datasets.catalog import IntegrityError, UnknownDataset
from voxwatch.datasets.manifest import ManifestError
from voxwatch.foundation.observation import Observation, RunRecord
from voxwatch.providers.registry import RegistryError
from voxwatch.foundation.store_url import POSTGRES, StoreError, store_kind
from voxwatch.store.spool import drain, spooled_files

from voxwatch.workers.celery_app import app, current_config, queue_name
from voxwatch.workers.job import Job
from voxwatch.workers.process_state import ProcessState, close_state, state
from voxwatch.workers.reconcile import finish_counted, reconcile
from voxwatch.harness.retry_after import hold_s
from voxwatch.harness.tick import Plan, PlanError, plan_burst, plan_tick
from voxwatch.workers.schedule import slot_of, slot_run_id

log = get_task_logger(__name__)
DRAIN_S = 5.0  # how long a measure task may spend adding this host's spooled rows after storing its own
PLAN_ERRORS = (PlanError, RegistryError, UnknownDataset, IntegrityError, ManifestError, KeyError)


@app.task(name="voxwatch.plan", bind=True)
def plan(self, region: str, board: str | None = None, models: list[str] | None = None,
         datasets: list[str] | None = None, sample_size: int | None = None, seed: int | None = None,
         sent_at: float | None = None) -> str | None:
    """Draw the sample once and enqueue one measure task per (model, dataset, item), item-major.

    The run id is the plan's task id (for a plan beat sent, its slot's: schedule.slot_run_id), and
    its seed is kept in Redis, so a redelivered plan re-enqueues the same tasks (whose rows the store
    and the run counters take once), and a second plan of one slot measures nothing.
    """
    config = current_config()
    st = state(config)
    run_id = self.request.id.replace("-", "")
    if sent_at is not None:  # beat's: one run per slot, however many times beat sends it
        run_id = slot_run_id(config, region, board, datasets, sent_at)
        if not _first_plan_of_slot(st, run_id, self.request.id):
            return None
    if st.ledger.is_finished(run_id):
        return run_id
    seed = st.ledger.run_seed(run_id, _seed(st, seed, sent_at))
    try:
        drawn = plan_tick(config, st.registry, st.catalog, sample_size=sample_size, seed=seed, datasets=datasets,
                          models=list(config.boards[board].models) if board and models is None else models)
    except PLAN_ERRORS as exc:
        log.error("run %s not started: %s", run_id, exc)
        return None
    for line in drawn.skipped + drawn.warnings:
        log.warning(line)
    if not drawn.tasks:
        log.warning("run %s not started: nothing to measure", run_id)
        return None
    _fan_out(self.app, st, drawn, run_id, seed, region)
    return run_id


def _fan_out(celery_app, st: ProcessState, drawn: Plan, run_id: str, seed: int, region: str,
             note: str | None = None) -> None:
    """Open the run and enqueue one measure task per planned task, in the plan's order."""
    run = RunRecord(run_id=run_id, started_at=st.ledger.started_at(run_id) or time.time(), region=region, seed=seed,
                    planned=len(drawn.tasks), note=note)
    st.ledger.open_run(run, len(drawn.tasks))
    try:
        st.store.start_run(run)
    except StoreError as exc:  # measure anyway: rows the store refuses are spooled, never lost
        log.warning("run %s: the store refused its record (%s)", run_id, exc)
    queue = queue_name(st.config, region)
    with celery_app.producer_or_acquire() as producer:
        for task in drawn.tasks:
            job = Job.of(task, run_id, seed)
            measure.apply_async(kwargs=job.kwargs(), task_id=job.key, queue=queue, producer=producer)
    log.info("run %s: %d measure tasks on %s, seed %d", run_id, len(drawn.tasks), queue, seed)


@app.task(name="voxwatch.alerts.burst", bind=True)
def burst(self, model: str, dataset: str, region: str, alert_id: int | None = None) -> str | None:
    """A confirmation burst (docs/ALERTS.md): the dataset's sentinel panel measured at once for one
    model, as a run of its own; when its last row is counted, finish_run triggers an evaluation. The
    run id is the task's, so a redelivered burst measures once."""
    config = current_config()
    st = state(config)
    run_id = self.request.id.replace("-", "")
    if st.ledger.is_finished(run_id):
        return run_id
    try:
        drawn = plan_burst(config, st.registry, st.catalog, model, dataset)
    except PLAN_ERRORS as exc:
        log.error("burst %s for %s on %s not started: %s", run_id, model, dataset, exc)
        return None
    if not drawn.tasks:
        return None
    seed = st.ledger.run_seed(run_id, _seed(st, None, None))
    _fan_out(self.app, st, drawn, run_id, seed, region, note=f"confirmation burst for alert {alert_id}")
    return run_id


def _first_plan_of_slot(st: ProcessState, run_id: str, plan_id: str) -> bool:
    """False for a second plan of a scheduled slot (a restarted beat sent it again): the slot's run is
    planned already. A redelivered plan is its own first plan."""
    owner, fresh = st.ledger.claim_slot(run_id, plan_id)
    if owner != plan_id:
        log.warning("run %s: its slot was planned by %s already; plan %s is a duplicate and measures nothing",
                    run_id, owner, plan_id)
        return False
    if fresh:  # Redis had no claim: had it lost one? The store keeps every run it was told of
        try:
            known = st.store.run(run_id) is not None
        except StoreError:
            known = False  # the claim decides
        if known:
            log.warning("run %s: its slot was planned already (the store has its record); plan %s is a "
                        "duplicate and measures nothing", run_id, plan_id)
            return False
    return True


@app.task(name="voxwatch.runs.reconcile")
def reconcile_runs() -> int:
    """Finish runs from what the store holds (voxwatch/workers/reconcile.py), after adding the rows this host
    spooled while the store was down. Beat sends it every [run] reconcile_every_s; a duplicate is
    harmless (the same records are written). Returns the records it changed."""
    config = current_config()
    st = state(config)
    try:
        if not drain_spool(st, until=time.monotonic() + config.broker.soft_time_limit_s / 2):
            return 0  # the store is away: nothing to reconcile with
        settled = reconcile(st.store, config.reconcile_after_s)
    except StoreError as exc:
        log.warning("runs not reconciled: %s (the next reconcile tries again)", exc)
        return 0
    except SoftTimeLimitExceeded:
        st.reset_store()  # a store command may have been cut short
        log.warning("runs not all reconciled within the task's soft time limit (the next reconcile goes on)")
        return 0
    for run in settled:
        log.info("run %s %s by the reconciler: %d observations (%d not ok)", run.run_id, run.status, run.rows,
                 run.failed_rows)
    return len(settled)


def drain_spool(st: ProcessState, until: float | None = None) -> bool:
    """Add the rows this host spooled while the store was down (starting no file after `until`) and
    finish the runs they complete; False when the store refused them (they stay for the next drain)."""
    if not spooled_files(st.config.spool_dirs):
        return True
    try:
        drained = drain(st.store, st.config.spool_dirs, until)
        for problem in drained.unreadable:
            log.error("spool file set aside, not ingested: %s", problem)
        if drained.rows:
            log.info("spool: %d rows of %d runs stored from %d files", sum(drained.rows.values()),
                     len(drained.rows), drained.files)
            for run in reconcile(st.store, st.config.reconcile_after_s, run_ids=drained.rows):
                log.info("run %s %s: %d observations (%d not ok)", run.run_id, run.status, run.rows, run.failed_rows)
        if drained.error is not None:
            raise drained.error
    except StoreError as exc:
        log.warning("spool not drained yet: %s (the next drain tries again)", exc)
        return False
    return True


@app.task(name="voxwatch.alerts.evaluate")
def evaluate_alerts() -> dict[str, int]:
    """One regression-alert evaluation at the time it runs (beat sends one every [alerts]
    evaluate_every_minutes). A duplicate or redelivered task is harmless: evaluations take an advisory
    lock in turn, and the later one finds nothing new to notify. Returns the transitions by event."""
    from voxwatch.alerts.evaluate import run
    from voxwatch.alerts.store import connected

    from voxwatch.alerts.bursts import allowed, cost

    config = current_config()
    with connected(config.store_url, "cannot evaluate the alerts of") as conn:
        result = run(conn, config.alerts, time.time(), panel_size=config.panel_size)
    st = state(config)
    sent: set[tuple[str, str, str]] = set()
    for b in result.bursts:  # one burst per series, however many of its alerts are pending
        series = (b.model_id, b.dataset, b.region)
        if series in sent:
            continue
        try:
            ok = st.ledger.take_burst("|".join(series), b.alert_id, int(result.at // 86400),
                                      lambda n_alert, n_day: allowed(n_alert, n_day, config.alerts))
        except redis.RedisError as exc:
            log.warning("alert %d: no confirmation burst (Redis cannot count it: %s)", b.alert_id, exc)
            continue
        if not ok:
            log.info("alert %d: no confirmation burst (bursts_per_alert or bursts_per_day spent)", b.alert_id)
            continue
        sent.add(series)
        burst.apply_async(kwargs={"model": b.model_id, "dataset": b.dataset, "region": b.region,
                                  "alert_id": b.alert_id}, queue=queue_name(config, b.region))
        log.info("alert %d pending: confirmation burst of %s on %s @ %s, %s", b.alert_id, b.model_id, b.dataset,
                 b.region, cost(config.panel_size, *_burst_price(config, st, b.model_id, b.dataset)))
    counts: dict[str, int] = {}
    for t in result.transitions:
        counts[t.event] = counts.get(t.event, 0) + 1
    failed = sum(not d.ok for d in result.deliveries)
    log.info("alerts: %d checks, transitions %s, %d deliveries (%d failed)", result.checks, counts or "none",
             len(result.deliveries), failed)
    return counts


def _burst_price(config, st: ProcessState, model: str, dataset: str) -> tuple[float | None, str]:
    """A burst's price per clip from the registry's list price over the panel it will measure (or why none)."""
    from voxwatch.alerts.bursts import NO_PRICE, price_per_clip

    try:
        drawn = plan_burst(config, st.registry, st.catalog, model, dataset)
    except PLAN_ERRORS:
        return None, NO_PRICE
    return price_per_clip((t.model, t.item) for t in drawn.tasks)


def _seed(st: ProcessState, seed: int | None, sent_at: float | None) -> int:
    """Asked for, else configured, else the schedule slot's (shared by the slot's plans), else fresh."""
    if seed is not None:
        return seed
    if st.config.seed >= 0:
        return st.config.seed
    if sent_at is not None:
        return st.ledger.slot_seed(st.config.every_minutes, slot_of(sent_at, st.config.every_minutes))
    return random.SystemRandom().randrange(2**31)


class MeasureTask(CeleryTask):
    def on_failure(self, exc, task_id, args, kwargs, einfo) -> None:
        """The task failed (a bug, or the hard time limit killed its process; then this runs in the
        worker's main process): the job still ends in a row, so its run can finish."""
        st = state(current_config())
        job = Job(**kwargs)
        record(st, job, st.failure_row(job, *task_failure(st, exc, "measure")))


def task_failure(st: ProcessState, exc: BaseException, task: str) -> tuple[str, str]:
    """The status and reason a failed task's row says (a measure task's, a converse task's)."""
    if isinstance(exc, SoftTimeLimitExceeded):  # it may have cut a store command short
        st.reset_store()
    if isinstance(exc, TimeLimitExceeded):
        return "timeout", f"the worker process was killed at the task's hard time limit ({exc.args[0]} s)"
    return "error", f"the {task} task failed: {type(exc).__name__}: {exc}"


@app.task(name="voxwatch.measure", bind=True, base=MeasureTask)
def measure(self, run_id: str, seed: int, model: str, dataset: str, item: str, manifest_sha256: str,
            attempt: int = 1) -> str:
    """Measure one item with the worker's adapter and store its row (stamped with the worker's region)."""
    config = current_config()
    st = state(config)
    started = time.monotonic()
    job = Job(run_id, seed, model, dataset, item, manifest_sha256, attempt)
    if counted_before(st, run_id, job.key):  # redelivered after its row was stored: nothing to measure
        return "stored before"
    try:
        row = st.measure(job, budget_s=config.broker.soft_time_limit_s)
    except SoftTimeLimitExceeded:
        st.abandon_loop()
        row = st.failure_row(job, "timeout", f"the measurement passed the task's soft time limit "
                                             f"({config.broker.soft_time_limit_s} s)")
    # the store took the row, so it may take what this host spooled: for a few seconds, well inside the time limit
    record(st, job, row, drain_until=min(time.monotonic() + DRAIN_S, started + config.broker.soft_time_limit_s / 2))
    return row.status


def record(st: ProcessState, job: Job, row: Observation, drain_until: float | None = None) -> None:
    """Store the row (or spool it), count it once, honour a Retry-After, finish the run on its last row;
    with drain_until, add rows spooled before once the store has taken this one (until then)."""
    writer = st.writer(job.run_id)
    writer.write(row)
    spooled = writer.flush()
    if spooled is None and drain_until is not None and time.monotonic() < drain_until:
        drain_spool(st, drain_until)
    if spooled is not None:
        note_spooled(st, job.run_id, f"rows ({writer.last_error})", spooled)
    if writer.unkept_error is not None:  # counted all the same: the run is finished short of it at its deadline
        log.error("run %s: %s", job.run_id, writer.unkept_error)
    try:
        if row.status == "rate_limited":
            st.ledger.hold_vendor(st.config.region, row.vendor, hold_s(row.retry_after_s, st.config.default_backoff_s))
    except redis.RedisError as exc:
        _not_counted(job.run_id, job.key, exc)
        return
    count(st, job.run_id, job.key, failed=row.status != "ok")


def counted_before(st: ProcessState, run_id: str, key: str) -> bool:
    """True when Redis counted this key already (a task redelivered after its rows were stored and
    counted): there is nothing to do but finish its run, if that is still owed. False when Redis
    cannot say: do it again, the store keeps one row (conversation) per key."""
    try:
        done, unfinished = st.ledger.is_done(run_id, key), st.ledger.needs_finishing(run_id)
    except redis.RedisError:
        return False
    if done and unfinished:
        finish_run(st, run_id)
    return done


def count(st: ProcessState, run_id: str, key: str, failed: bool) -> None:
    """Count the key once in Redis (a measure task's row, a converse task's conversation) and finish
    the run on its last; when Redis cannot count it, the reconciler finishes the run from the store."""
    try:
        last = st.ledger.complete(run_id, key, failed=failed)
    except redis.RedisError as exc:
        _not_counted(run_id, key, exc)
        return
    if last:
        finish_run(st, run_id)


def _not_counted(run_id: str, key: str, exc: redis.RedisError) -> None:
    log.warning("run %s: Redis did not count %s (%s); the reconciler finishes the run from the store", run_id, key, exc)


def note_spooled(st: ProcessState, run_id: str, what: str, path: Path) -> None:
    """Say on the run's record what the store refused and where it is safe on this host; the note is
    bookkeeping (the spool file is the rows), so Redis refusing it changes nothing."""
    with contextlib.suppress(redis.RedisError):
        st.ledger.add_note(run_id, f"store refused {what}; spooled to {path} on {socket.gethostname()}")


def finish_run(st: ProcessState, run_id: str) -> None:
    """Every row is counted: write the run record from the rows the store holds, succeeded, partial or
    failed (reconcile.finish_counted). Whatever stops it here, the reconciler finishes the run later."""
    try:
        run = finish_counted(st.store, st.ledger.record(run_id))
    except (StoreError, redis.RedisError) as exc:
        log.warning("run %s: its final record was not written (%s); its rows are safe, and the reconciler "
                    "finishes it", run_id, exc)
        return
    if run is None:
        log.warning("run %s: every row is counted but not every row is stored (spooled); it is finished once "
                    "they are", run_id)
        return
    with contextlib.suppress(redis.RedisError):
        st.ledger.mark_finished(run_id)
    log.info("run %s %s: %d observations (%d not ok)", run_id, run.status, run.rows, run.failed_rows)
    evaluate_after_run(st)
    refresh_after_run(st)


def evaluate_after_run(st: ProcessState) -> None:
    """Event-driven alerts: every finished run (a tick or a burst) is followed by an evaluation, so
    an outage pages within one tick, not at the next 15-minute beat (docs/ALERTS.md)."""
    if store_kind(st.config.store_url) != POSTGRES:
        return
    with contextlib.suppress(Exception):  # the beat's evaluation still comes; a broker hiccup must not fail the row
        evaluate_alerts.apply_async(queue=queue_name(st.config, st.config.region))


def refresh_after_run(st: ProcessState) -> None:
    """The comparison pages' kept views follow finished runs (boards.compare_refresh), in a task of
    their own so the row's task is not held; the store runs it once for the runs finishing together."""
    if store_kind(st.config.store_url) != POSTGRES:
        return
    with contextlib.suppress(Exception):  # the next finished run asks again; a broker hiccup must not fail the row
        refresh_compare_views.apply_async(queue=queue_name(st.config, st.config.region))


@app.task(name="voxwatch.pages.refresh")
def refresh_compare_views() -> int | None:
    """Recompute the comparison boards' kept views, unless another worker is (then it runs again for
    this request: store.coalesce). Returns the views written here."""
    st = state(current_config())
    try:
        return compare_refresh.request(st.store, st.registry)
    except StoreError as exc:
        log.warning("the comparison views were not refreshed (%s): the next finished run asks again", exc)
        return None


_STDLIB_MAIN = mp_process.current_process()  # imported in the worker's main process, before the pool forks


@worker_process_init.connect
def _may_start_processes(**_) -> None:
    """Let adapters start processes (pocketsphinx decodes in its own, as a server would).

    billiard presents a pool process to the standard library's multiprocessing as a daemonic
    process with billiard's own authentication key, so multiprocessing refuses to start a child
    from it. Here the standard library sees the pool process as a copy of the main process it was
    forked from; billiard keeps its own record and still ends its pool processes itself, and an
    adapter's decoder process ends on close, or when its pipe closes with its parent.
    """
    if type(_STDLIB_MAIN).__name__ == "_MainProcess":
        me = copy.copy(_STDLIB_MAIN)
        me.name = billiard_process.current_process().name  # log lines still name the pool process
        mp_process._current_process = me


@worker_process_shutdown.connect
def _close_process(**_) -> None:
    close_state()
