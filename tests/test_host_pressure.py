"""A Celery worker's back-pressure (workers.host_pressure, on a real Redis): its processes share one
limit on measurements at once, halved by a row stalled or over the aim as `voxwatch run`'s is; a
place is a lease a killed process cannot keep; Redis away holds nobody back; and a measure task's
row adapts the limit and says so on its run."""

from __future__ import annotations

import time
import uuid

import redis
from support.private_postgres import free_port

from voxwatch.config import load
from voxwatch.foundation.observation import Observation
from voxwatch.harness.backpressure import AIM_MS, CALM_ROWS
from voxwatch.metrics.witness import Witness
from voxwatch.workers.host_pressure import HostPressure
from voxwatch.workers.job import Job
from voxwatch.workers.process_state import ProcessState

REDIS = "redis://127.0.0.1:6379/0"
PS, CLEAN = "pocketsphinx/en-us@5.1.1", "stt-starter-clean"


def _row(status: str = "ok", reason: str | None = None, uncertainty_ms: float | None = None) -> Observation:
    return Observation(run_id="r", model_id=PS, dataset=CLEAN, clip_id="c", attempt=1, board="stt",
                       vendor="pocketsphinx", protocol="local", region="eu", started_at=0.0, status=status,
                       reason=reason, clock_uncertainty_ms=uncertainty_ms)


STALLED = _row("excluded", Witness(9.0, "kernel").reason)


def _pair(most: int, lease_s: float = 60.0) -> tuple[HostPressure, HostPressure]:
    """Two processes of one worker (one key, a fresh prefix per test)."""
    prefix, client = f"t{uuid.uuid4().hex[:10]}", redis.Redis.from_url(REDIS, decode_responses=True)
    return (HostPressure(client, prefix, "eu:host:1", most, lease_s),
            HostPressure(redis.Redis.from_url(REDIS, decode_responses=True), prefix, "eu:host:1", most, lease_s))


def test_the_processes_share_one_limit_that_starts_slow_and_a_stalled_row_halves():
    a, b = _pair(most=2)
    first = a.admit(time.monotonic() + 1)
    assert first and b.admit(time.monotonic()) is None  # a slow start: one place until a calm row
    assert a.done(first, _row(uncertainty_ms=0.4)) == (1, 2) and b.limit() == 2
    first, second = a.admit(time.monotonic() + 1), b.admit(time.monotonic() + 1)
    assert first and second and first != second
    started = time.monotonic()
    assert a.admit(time.monotonic() + 0.2) is None  # both places held: it waited, then gave up
    assert time.monotonic() - started >= 0.15
    assert a.done(first, STALLED) == (2, 1) and a.limit() == b.limit() == 1
    assert b.admit(time.monotonic()) is None  # one place, still held by the second
    assert b.done(second, _row(uncertainty_ms=0.4)) is None  # after a stall one calm row moves nothing
    third = b.admit(time.monotonic() + 1)
    assert third and a.admit(time.monotonic()) is None
    assert b.done(third, _row(uncertainty_ms=AIM_MS + 1)) is None  # over the aim, but 1 is the floor
    for _ in range(CALM_ROWS):
        a.done(a.admit(time.monotonic() + 1), _row(uncertainty_ms=0.1))
    assert a.limit() == 2  # calm rows earn the place back, never above the most
    assert a.done(a.admit(time.monotonic() + 1), _row(uncertainty_ms=AIM_MS + 0.5)) == (2, 1)


def test_a_place_held_by_a_process_that_died_frees_itself():
    a, b = _pair(most=1, lease_s=0.3)
    assert a.admit(time.monotonic() + 1)  # then the process is killed: it never says done
    assert b.admit(time.monotonic()) is None
    assert b.admit(time.monotonic() + 2)  # the lease ended


def test_redis_away_holds_nobody_back():
    away = redis.Redis.from_url(f"redis://127.0.0.1:{free_port()}/0", decode_responses=True)
    pressure = HostPressure(away, "t", "eu:host:1", 1, 60.0)
    started = time.monotonic()
    assert pressure.admit(time.monotonic() + 5) is None and time.monotonic() - started < 2
    assert pressure.done(None, STALLED) is None


def test_a_measure_task_frees_its_place_and_a_stalled_row_is_noted_on_its_run(tmp_path, monkeypatch):
    monkeypatch.setenv("VOXWATCH_WORKER_CONCURRENCY", "4")
    prefix = f"t{uuid.uuid4().hex[:10]}"
    config = load(environ={"VOXWATCH_STORE_URL": f"sqlite:///{tmp_path / 's.sqlite'}",
                           "VOXWATCH_STORE_SPOOL_DIR": str(tmp_path / "spool"), "VOXWATCH_BROKER_URL": REDIS,
                           "VOXWATCH_BROKER_QUEUE_PREFIX": prefix, "VOXWATCH_WORKER_REGION": "eu"})
    st = ProcessState(config)
    try:
        item = st.dataset(CLEAN).items[0]
        job = Job("r-pressure", 7, PS, CLEAN, item.id, st.dataset(CLEAN).manifest_sha256)
        row = st.measure(job, budget_s=120)
        assert row.status == "ok", row.reason
        pressure = st.pressure()
        assert pressure.most == 4 and pressure.redis.zcard(pressure.running) == 0  # its place is free again
        assert pressure.limit() == 2  # the slow start's first calm row
        for _ in range(2):  # two more: 2 -> 4
            pressure.done(pressure.admit(time.monotonic() + 1), _row(uncertainty_ms=0.1))
        assert pressure.limit() == 4
        st._adapted(job, pressure.admit(time.monotonic() + 1), STALLED)
        assert pressure.limit() == 2
        note = pressure.redis.hget(f"{prefix}:run:r-pressure", "note")
        assert note is not None and "measurements at once 4->2" in note and "eu:" in note, note
    finally:
        for key in st.ledger.redis.scan_iter(f"{prefix}:*"):
            st.ledger.redis.delete(key)
