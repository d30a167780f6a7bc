"""Distributed mode as an operator runs it: `voxwatch worker` processes on the real Redis, plans
enqueued with `voxwatch tick`, rows in the Postgres store (SQLite when Postgres is not there).

Every test run gets its own queue prefix and a Redis database picked at random, so runs on one
machine never take each other's tasks; the keys it made are deleted at the end. The broker's
limits are short here (visibility timeout 30 s) so a killed worker's task comes back quickly.
"""

from __future__ import annotations

import importlib.util
import random
import time
import uuid
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Iterator

import pytest
import redis

from support.processes import run_cli
from voxwatch.boards.use_cases import SERIES_BOARDS
from voxwatch.config import ConfigError, load
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.foundation.observation import Observation, RunRecord
from voxwatch.metrics.series import WINDOWS
from voxwatch.providers.registry import Registry
from voxwatch.store import open_store
from voxwatch.workers.celery_app import queue_name
from voxwatch.workers.coordination import Ledger
from voxwatch.harness.tick import plan_tick
from voxwatch.workers.schedule import aligned, beat_schedule, slot_of
from support.voxwatch_process import Worker

pytestmark = pytest.mark.e2e

REDIS = "redis://127.0.0.1:6379"
POSTGRES = "postgresql://postgres@127.0.0.1:5432"
PS = "pocketsphinx/en-us@5.1.1"
ESPEAK = "espeak-ng/en-us@1.52.0"
# a fresh worker's first task starts the pocketsphinx decoder process (seconds on a busy machine, and
# more beside two CPU-bound processes): a task's limits leave it that; the visibility timeout, just
# above them, is how long a killed worker's task waits to come back
LIMITS = {"VOXWATCH_BROKER_SOFT_TIME_LIMIT_S": "25", "VOXWATCH_BROKER_TIME_LIMIT_S": "28",
          "VOXWATCH_BROKER_CONVERSATION_SOFT_TIME_LIMIT_S": "26", "VOXWATCH_BROKER_CONVERSATION_TIME_LIMIT_S": "29",
          "VOXWATCH_BROKER_VISIBILITY_TIMEOUT_S": "30"}


@pytest.fixture(scope="module")
def broker() -> Iterator[tuple[str, str]]:
    db = random.randrange(1, 16)
    client = redis.Redis.from_url(f"{REDIS}/{db}")
    try:
        client.ping()
    except redis.ConnectionError:
        pytest.skip("Redis is not running on 127.0.0.1:6379 (.ci/run starts it)")
    prefix = f"vwtest{uuid.uuid4().hex[:10]}"
    yield f"{REDIS}/{db}", prefix
    for pattern in (f"{prefix}*", f"_kombu.binding*{prefix}*"):
        for key in client.scan_iter(match=pattern):
            client.delete(key)


def _postgres_url() -> str | None:
    """A fresh database on the local Postgres, when the Postgres store and the server are there."""
    if importlib.util.find_spec("voxwatch.store.postgres") is None:
        return None
    import psycopg

    from voxwatch.foundation.store_url import StoreError
    from voxwatch.store.connection import connect

    name = f"voxwatch_test_{uuid.uuid4().hex[:10]}"
    try:
        with connect(f"{POSTGRES}/postgres", timeout_s=5) as conn:
            conn.execute(f"CREATE DATABASE {name}")
    except (StoreError, psycopg.Error):
        return None
    return f"{POSTGRES}/{name}"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Iterator[str]:
    url = _postgres_url()
    if url is None:
        yield f"sqlite:///{tmp_path_factory.mktemp('store') / 'voxwatch.sqlite'}"
        return
    run_cli("db", "upgrade", "--store", url)
    yield url
    from voxwatch.store.connection import connect

    with connect(f"{POSTGRES}/postgres") as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {url.rsplit('/', 1)[1]} WITH (FORCE)")


def worker_env(broker: tuple[str, str], store: str, var, limits: dict[str, str]) -> dict[str, str]:
    """A worker's environment: this run's broker, queue prefix and store, folders under var, the limits."""
    return {"VOXWATCH_BROKER_URL": broker[0], "VOXWATCH_BROKER_QUEUE_PREFIX": broker[1], "VOXWATCH_STORE_URL": store,
            "VOXWATCH_STORE_SPOOL_DIR": str(var / "spool"), "VOXWATCH_RUN_RECORDINGS_DIR": str(var / "recordings"),
            "VOXWATCH_DATASETS_DIR": str(var / "datasets"), **limits}


@pytest.fixture(scope="module")
def env(broker, store, tmp_path_factory) -> dict[str, str]:
    return worker_env(broker, store, tmp_path_factory.mktemp("var"), LIMITS)


@pytest.fixture
def workers(tmp_path) -> Iterator[dict]:
    """Start workers with start(region); every one is stopped at the end of the test."""
    started: list[Worker] = []

    def start(region: str, env: dict[str, str]) -> Worker:
        started.append(Worker(region, env, tmp_path / f"{region}-{len(started)}.log"))
        return started[-1]

    yield start
    for w in started:
        w.stop()


def tick(env: dict[str, str], region: str, *args: str) -> str:
    out = run_cli("tick", "--region", region, *args, env=env).stdout
    assert out.startswith("run "), out
    return out.split()[1]


def finished_run(store_url: str, run_id: str, timeout: float = 240) -> tuple[RunRecord, list[Observation]]:
    """Wait until the run's record is final; then it and its rows."""
    deadline = time.monotonic() + timeout
    while True:
        store = open_store(store_url)
        try:
            run = next((r for r in store.runs() if r.run_id == run_id), None)
            if run is not None and run.status != "running":
                return run, [r for r in store.observations() if r.run_id == run_id]
        finally:
            store.close()
        assert time.monotonic() < deadline, f"run {run_id} did not finish: {run}"
        time.sleep(0.5)


def test_a_worker_measures_a_tick_end_to_end(env, workers):
    worker = workers("test-a", env)
    run_id = tick(env, "test-a", "--models", f"{ESPEAK},{PS}", "--sample-size", "2", "--seed", "7")
    run, rows = finished_run(env["VOXWATCH_STORE_URL"], run_id)
    assert run.status == "succeeded" and (run.rows, run.failed_rows) == (10, 0) and run.region == "test-a"
    assert run.seed == 7 and run.finished_at > run.started_at
    assert len(rows) == 10 and {r.status for r in rows} == {"ok"}, [(r.status, r.reason) for r in rows]
    silent = ("stt-nonspeech", "tts-empty")  # 2 clips without speech, 2 empty prompts: no clock, what was made of nothing
    assert all((r.invented_words, r.invented_audio_ms) != (None, None) for r in rows if r.dataset in silent)
    assert {r.region for r in rows} == {"test-a"} and {r.seed for r in rows} == {7}
    assert all(r.ttfs_ms is not None and r.first_partial_ms is not None for r in rows if r.model_id == PS and r.dataset not in silent)
    assert all(r.ttfa_ms is not None and r.instrument_id and r.ref_words for r in rows if r.model_id == ESPEAK and r.dataset not in silent)
    # the same draw and the same item-major order as `voxwatch run` with that seed
    cfg = load(environ={})
    plan = plan_tick(cfg, Registry.default(), Catalog([bundled_root()]), models=[ESPEAK, PS], sample_size=2, seed=7)
    planned = [(t.model.id, t.dataset.name, t.item.id) for t in plan.tasks]
    assert [(r.model_id, r.dataset, r.clip_id) for r in sorted(rows, key=lambda r: r.started_at)] == planned
    worker.wait_for(f"run {run_id} succeeded", timeout=60)  # logged once the record and its refreshes are written
    # the finished run asked for the comparison pages' views: the worker computed them (store.compare_views)
    worker.wait_for("Task voxwatch.pages.refresh[", timeout=60)
    deadline = time.monotonic() + 60  # the refresh writes each board's views in turn: wait for all of them
    while (views := _compare_views(env["VOXWATCH_STORE_URL"])) < len(SERIES_BOARDS) * len(WINDOWS):
        assert time.monotonic() < deadline, (views, worker.text())
        time.sleep(0.5)
    assert views == len(SERIES_BOARDS) * len(WINDOWS)


def _compare_views(store_url: str) -> int:
    store = open_store(store_url)
    try:
        return store.connection().execute("SELECT count(*) FROM compare_views").fetchone()[0]
    finally:
        store.close()


def test_a_killed_worker_task_is_redelivered_and_counted_once(env, workers):
    first = workers("test-kill", env)
    first.wait_for(" ready.")
    run_id = tick(env, "test-kill", "--models", PS, "--datasets", "stt-starter-clean", "--sample-size", "3",
                  "--seed", "3")
    first.wait_for(f"voxwatch.measure[{run_id}:")
    in_flight = first.text().split(f"voxwatch.measure[{run_id}:", 1)[1].split("]", 1)[0]
    time.sleep(1.0)  # the decoder is up and the clip is streaming
    first.kill()
    store = open_store(env["VOXWATCH_STORE_URL"])
    try:
        assert len([r for r in store.observations() if r.run_id == run_id]) < 3
    finally:
        store.close()

    second = workers("test-kill", env)
    run, rows = finished_run(env["VOXWATCH_STORE_URL"], run_id)
    assert f"voxwatch.measure[{run_id}:{in_flight}]" in second.text()  # handed back after the visibility timeout
    keys = [(r.model_id, r.dataset, r.clip_id, r.attempt) for r in rows]
    assert len(keys) == 3 and len(set(keys)) == 3 and {r.attempt for r in rows} == {1}
    assert run.status == "succeeded" and (run.rows, run.failed_rows) == (3, 0), run
    assert {r.status for r in rows} == {"ok"}, [(r.status, r.reason) for r in rows]


def test_each_region_consumes_only_its_queue_and_stamps_its_rows(env, workers):
    a, b = workers("test-a", env), workers("test-b", env)
    args = ("--models", PS, "--datasets", "stt-starter-clean", "--sample-size", "1")
    run_a, run_b = tick(env, "test-a", *args), tick(env, "test-b", *args)
    for run_id, region, mine, other in ((run_a, "test-a", a, b), (run_b, "test-b", b, a)):
        run, rows = finished_run(env["VOXWATCH_STORE_URL"], run_id)
        assert run.status == "succeeded" and run.region == region
        assert len(rows) == 1 and rows[0].region == region
        assert run_id in mine.text() and run_id not in other.text()


def test_the_run_counter_takes_each_row_once_and_finishes_the_run_once(broker):
    ledger = Ledger(broker[0], broker[1])
    run = RunRecord(run_id=uuid.uuid4().hex, started_at=time.time(), region="test-a", seed=5)
    assert ledger.run_seed(run.run_id, 5) == 5 and ledger.run_seed(run.run_id, 9) == 5  # a redelivered plan
    ledger.open_run(run, total=2)
    assert not ledger.complete(run.run_id, "k1", failed=False)
    assert not ledger.complete(run.run_id, "k1", failed=True)  # a redelivery of a stored row
    assert ledger.is_done(run.run_id, "k1") and not ledger.needs_finishing(run.run_id)
    assert ledger.complete(run.run_id, "k2", failed=True)
    assert ledger.needs_finishing(run.run_id)  # until the record is written
    record = ledger.record(run.run_id)
    assert (record.status, record.rows, record.failed_rows, record.seed) == ("partial", 2, 1, 5)
    ledger.mark_finished(run.run_id)
    assert not ledger.complete(run.run_id, "k2", failed=False) and not ledger.needs_finishing(run.run_id)


def test_a_key_counted_again_after_its_counter_died_before_the_record_finishes_the_run(env):
    """The last key's counter killed (the hard time limit) between counting it and writing the record:
    the same key counted again (the killed task's on_failure, its redelivery) writes it."""
    from voxwatch.workers.job import Job
    from voxwatch.workers.process_state import ProcessState, bare_row
    from voxwatch.workers.tasks import count

    st = ProcessState(load(environ=env))
    run = RunRecord(run_id=uuid.uuid4().hex, started_at=time.time(), region="test-a", seed=0)
    job = Job(run.run_id, 0, PS, "stt-clean", "item-1", "0" * 64)
    st.store.start_run(run)
    st.ledger.run_seed(run.run_id, 0)
    st.ledger.open_run(run, total=1)
    st.store.add([bare_row(job, "test-a", "the worker process was killed", st.registry)])
    assert st.ledger.complete(run.run_id, job.key, failed=True)  # counted, then the process died: no record
    assert st.store.run(run.run_id).status == "running"
    count(st, run.run_id, job.key, failed=True)
    assert (st.store.run(run.run_id).status, st.ledger.is_finished(run.run_id)) == ("failed", True)
    count(st, run.run_id, job.key, failed=True)  # once finished, counting it again writes nothing
    assert not st.ledger.needs_finishing(run.run_id)


def test_beat_plans_every_board_dataset_and_region_on_slots_aligned_to_the_epoch():
    cfg = replace(load(environ={"VOXWATCH_SCHEDULE_EVERY_MINUTES": "30"}), schedule_regions=("eu-west", "us-east"))
    entries = beat_schedule(cfg)
    # stt: clean, phonecodec, nonspeech; tts: prompts, empty; s2s has no single-turn models but its conversations;
    # the reconciler
    assert len(entries) == 2 * (3 + 2 + 1 + 1)
    assert entries["runs reconcile @us-east"]["task"] == "voxwatch.runs.reconcile"
    assert entries["runs reconcile @us-east"]["options"]["queue"] == "voxwatch.us-east"
    entry = entries["stt stt-recorded-phonecodec @us-east"]
    assert entry["options"]["queue"] == "voxwatch.us-east" and entry["task"] == "voxwatch.plan"
    assert entry["kwargs"]["datasets"] == ["stt-recorded-phonecodec"] and entry["kwargs"]["board"] == "stt"
    assert abs(entry["kwargs"]["sent_at"]() - time.time()) < 5  # evaluated as beat sends it

    now = datetime(2026, 1, 1, 10, 17, 30, tzinfo=timezone.utc)
    period = aligned(timedelta(minutes=30), nowfun=lambda: now)
    due, wait = period.is_due(datetime(2026, 1, 1, 10, 0, 2, tzinfo=timezone.utc))  # it fired at 10:00
    assert not due and wait == pytest.approx(12.5 * 60)  # next at 10:30, whenever beat started
    due, wait = period.is_due(datetime(2026, 1, 1, 9, 59, tzinfo=timezone.utc))  # 10:00 has not fired yet
    assert due and wait == pytest.approx(12.5 * 60)
    assert slot_of(now.timestamp(), 30) == slot_of(datetime(2026, 1, 1, 10, 0, 1, tzinfo=timezone.utc).timestamp(), 30)


def test_a_task_that_could_outlive_its_visibility_timeout_is_a_config_error():
    with pytest.raises(ConfigError, match="soft_time_limit_s < time_limit_s < visibility_timeout_s"):
        load(environ={"VOXWATCH_BROKER_TIME_LIMIT_S": "4000"})
    with pytest.raises(ConfigError, match="VOXWATCH_BROKER_URL"):
        load(environ={"VOXWATCH_BROKER_URL": "amqp://localhost"})
    with pytest.raises(ConfigError, match="region 'eu west'"):
        queue_name(load(environ={}), "eu west")
