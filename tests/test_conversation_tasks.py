"""The S2S board's conversations in distributed mode: beat's entries, the plan (one converse task
per model, scenario and persona; one plan per slot), converse tasks holding real conversations on
the local cascade in a real `voxwatch worker` on the real Redis, into a real store, a redelivered
task writing nothing twice, a conversation cut off by its time limits still ending in a recorded
failure, the spool when the store is down, and the personas key.

Conversations are kept short (1-2 turns of clinic-desk); the broker fixtures are
test_distributed's (a Redis database and queue prefix of this run's own), with time limits a
conversation fits in.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import replace
from datetime import timedelta

import pytest
import redis

from support.processes import run_cli
from test_distributed import LIMITS as MEASURE_LIMITS, broker, store, worker_env, workers  # noqa: F401 - fixtures
from voxwatch.config import ConfigError, load
from voxwatch.conversations.tick import conversation_id, failed_conversation
from voxwatch.conversations.catalog import ScenarioCatalog, bundled_root
from voxwatch.foundation.persona import find
from voxwatch.metrics.conversation_timing import NO_RESPONSE_S
from voxwatch.foundation.observation import RunRecord
from voxwatch.providers.registry import Registry
from voxwatch.store import open_store
from voxwatch.workers import converse
from voxwatch.workers.celery_app import configure, queue_name
from voxwatch.workers.job import ConversationJob
from voxwatch.workers.process_state import ProcessState
from voxwatch.workers.schedule import beat_schedule

pytestmark = pytest.mark.e2e

CASCADE = "local/cascade-scripted-baseline"
SCENARIO = "clinic-desk"
# a conversation's own limits fit two turns of the cascade on a busy machine; the visibility timeout stays above them
LIMITS = {**MEASURE_LIMITS, "VOXWATCH_BROKER_CONVERSATION_SOFT_TIME_LIMIT_S": "200",
          "VOXWATCH_BROKER_CONVERSATION_TIME_LIMIT_S": "210", "VOXWATCH_BROKER_VISIBILITY_TIMEOUT_S": "220"}


@pytest.fixture(scope="module")
def env(broker, store, tmp_path_factory) -> dict[str, str]:  # noqa: F811 - test_distributed's fixtures
    return worker_env(broker, store, tmp_path_factory.mktemp("var"), {
        **LIMITS, "VOXWATCH_BOARDS_STT_MODELS": "", "VOXWATCH_BOARDS_TTS_MODELS": ""})


def _send(env: dict[str, str], region: str, name: str, kwargs: dict, task_id: str | None = None) -> str:
    """Send a task to the region's queue as beat (or a planner) does; returns its task id."""
    config = load(environ=env)
    app = configure(config)
    task_id = task_id or uuid.uuid4().hex
    app.send_task(name, kwargs=kwargs, queue=queue_name(config, region), task_id=task_id)
    return task_id


def _conversations(url: str, run_id: str) -> list:
    s = open_store(url)
    try:
        return [c for c in s.conversations() if c[0].run_id == run_id]
    finally:
        s.close()


def _finished(url: str, run_id: str, timeout: float = 400, worker=None) -> RunRecord:
    """The run's record once it is final; its worker's log (the end of it) says why when it never is."""
    deadline = time.monotonic() + timeout
    while True:
        s = open_store(url)
        try:
            run = s.run(run_id)
        finally:
            s.close()
        if run is not None and run.status != "running":
            return run
        assert time.monotonic() < deadline, f"run {run_id} did not finish: {run}\n" + (worker.text()[-6000:] if worker else "")
        time.sleep(1.0)


def test_beat_plans_the_conversations_per_region_on_their_own_period():
    cfg = replace(load(environ={"VOXWATCH_BOARDS_S2S_CONVERSATION_EVERY_MINUTES": "45"}),
                  schedule_regions=("eu-west", "us-east"))
    entries = beat_schedule(cfg)
    entry = entries["s2s conversations @us-east"]
    assert entry["task"] == "voxwatch.plan_conversations" and entry["options"]["queue"] == "voxwatch.us-east"
    assert entry["kwargs"]["region"] == "us-east" and abs(entry["kwargs"]["sent_at"]() - time.time()) < 5
    assert entry["schedule"].run_every == timedelta(minutes=45)
    assert "s2s conversations @eu-west" in entries
    none = beat_schedule(load(environ={"VOXWATCH_BOARDS_S2S_CONVERSATION_MODELS": ""}))
    assert not [k for k in none if "conversations" in k]


def test_an_unknown_persona_in_the_config_is_a_clear_error():
    with pytest.raises(ConfigError, match=r"\[boards.s2s\] personas = .*unknown persona 'hum5db' "
                                          r"\(did you mean 'hum-5db'\?\); known: default, "):
        load(environ={"VOXWATCH_BOARDS_S2S_PERSONAS": "default,hum5db"})
    bad = run_cli("run", "--board", "s2s", check=False, env={"VOXWATCH_BOARDS_S2S_PERSONAS": "nobody"})
    assert bad.returncode == 2 and "unknown persona 'nobody'" in bad.stderr and "Traceback" not in bad.stderr
    with pytest.raises(ConfigError, match="conversation_soft_time_limit_s < conversation_time_limit_s"):
        load(environ={"VOXWATCH_BROKER_CONVERSATION_TIME_LIMIT_S": "4000"})


def test_a_plan_holds_one_conversation_per_model_scenario_and_persona_and_finishes_its_run(env, workers):  # noqa: F811
    worker = workers("test-conv", env)
    sent_at = time.time()
    plan = dict(region="test-conv", scenarios=[SCENARIO], turns=2, personas=["default", "hum-5db"], sent_at=sent_at)
    _send(env, "test-conv", "voxwatch.plan_conversations", plan)
    _send(env, "test-conv", "voxwatch.plan_conversations", plan)  # a restarted beat's second send for the slot
    at = worker.wait_for("conversation run ", timeout=120)
    run_id = worker.text()[at:].split()[0].rstrip(":")
    run = _finished(env["VOXWATCH_STORE_URL"], run_id, worker=worker)
    held = _conversations(env["VOXWATCH_STORE_URL"], run_id)
    assert sorted(row.persona.split("#")[0] for row, _ in held) == ["default", "hum-5db"]  # each its own conversation
    for row, turns in held:
        assert (row.model_id, row.scenario, row.turns, row.whole, row.region) == (CASCADE, SCENARIO, 2, False, "test-conv")
        assert row.conversation_id == conversation_id(run_id, CASCADE, SCENARIO, row.persona.split("#")[0])
        assert [t.turn_index for t in turns] == [0, 1] and {t.status for t in turns} == {"ok"}, \
            [(t.status, t.reason) for t in turns]
        # each turn timed from the recording; its V2V is the gap only within the no-response limit, which the
        # local cascade's streaming Whisper passed once on a busy CI machine (14.6 s)
        assert all(t.gap_s is not None and (t.v2v_ms is not None) == (t.gap_s <= NO_RESPONSE_S) for t in turns), \
            [(t.status, t.reason, t.gap_s, t.v2v_ms) for t in turns]
    assert (run.status, run.rows, run.failed_rows, run.planned) == ("succeeded", 4, 0, 4), run
    assert run.note.startswith("conversations: 2 planned")
    assert "is a duplicate and measures nothing" in worker.text()  # the second plan of the slot enqueued nothing
    assert worker.text().count(f"conversation run {run_id}: 2 converse tasks") == 1

    # redelivered once Redis has lost its count: the store has it, so nothing is held or written again
    ledger = redis.Redis.from_url(env["VOXWATCH_BROKER_URL"])
    ledger.delete(f"{env['VOXWATCH_BROKER_QUEUE_PREFIX']}:run:{run_id}:done")
    row, turns = held[0]
    job = ConversationJob(run_id, CASCADE, SCENARIO, row.scenario_pin, 2, row.persona.split("#")[0])
    before = len(worker.text())
    _send(env, "test-conv", "voxwatch.converse", job.kwargs(), task_id=job.key)
    at = worker.wait_for(f"voxwatch.converse[{job.key}] succeeded in", timeout=120, after=before)
    assert worker.text()[at:].split("\n", 1)[0].endswith("'stored before'"), worker.text()[before:]
    again = _conversations(env["VOXWATCH_STORE_URL"], run_id)
    assert [(r.conversation_id, r.started_at, len(t)) for r, t in again] == \
        [(r.conversation_id, r.started_at, len(t)) for r, t in held]


def test_a_conversation_cut_off_by_its_time_limits_still_ends_in_its_failed_rows(env, workers):  # noqa: F811
    worker = workers("test-kill-conv", env)
    worker.wait_for(" ready.")
    config = load(environ=env)
    pin = ScenarioCatalog([bundled_root()]).load(SCENARIO, verify=False).pin
    run_id = uuid.uuid4().hex
    s = open_store(env["VOXWATCH_STORE_URL"])
    s.start_run(RunRecord(run_id, time.time(), "test-kill-conv", 0, note="conversations: 1 planned", planned=2))
    s.close()
    from voxwatch.workers.coordination import Ledger

    Ledger(env["VOXWATCH_BROKER_URL"], env["VOXWATCH_BROKER_QUEUE_PREFIX"]).run_seed(run_id, 0)
    Ledger(env["VOXWATCH_BROKER_URL"], env["VOXWATCH_BROKER_QUEUE_PREFIX"]).open_run(
        RunRecord(run_id, time.time(), "test-kill-conv", 0), total=1, planned=2)
    job = ConversationJob(run_id, CASCADE, SCENARIO, pin, 2, "default")
    app = configure(config)
    # limits far too short for the conversation: it is cut off mid-way (by the task's budget, its soft
    # limit, or its process killed at the hard limit, whichever a busy machine reaches first)
    app.send_task("voxwatch.converse", kwargs=job.kwargs(), task_id=job.key, queue=queue_name(config, "test-kill-conv"),
                  soft_time_limit=3, time_limit=6)
    run = _finished(env["VOXWATCH_STORE_URL"], run_id, timeout=180, worker=worker)
    [(row, turns)] = _conversations(env["VOXWATCH_STORE_URL"], run_id)
    assert row.status == "failed" and "time limit" in row.reason, row
    assert [t.turn_index for t in turns] == [0, 1] and {t.status for t in turns} <= {"timeout", "error"}, turns
    assert all(t.reason == row.reason for t in turns)
    assert (run.status, run.rows, run.failed_rows) == ("failed", 2, 2), run


def test_a_conversation_the_store_refuses_is_spooled_and_a_later_drain_stores_it(tmp_path, store_url):
    """As a worker keeps a conversation when its store is down (nothing listens at its port); then
    `voxwatch runs reconcile`, the operator's drain, stores it and finishes its run."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    spool = tmp_path / "spool"
    down = load(environ={"VOXWATCH_STORE_URL": f"postgresql://postgres@127.0.0.1:{port}/voxwatch",
                         "VOXWATCH_STORE_SPOOL_DIR": str(spool)})
    full = ScenarioCatalog([bundled_root()]).load(SCENARIO, verify=False)
    model = Registry.default().resolve(CASCADE)
    held = failed_conversation(model, full, 2, find("default"), run_id="spooled-conv", region="eu", status="error",
                               reason="no session: connection refused")
    job = ConversationJob("spooled-conv", CASCADE, SCENARIO, full.pin, 2, "default")
    assert converse.record_rows(ProcessState(down), job, held) is False
    [path] = list(spool.iterdir())
    assert path.name.startswith("unsaved-spooled-conv-") and path.suffix == ".jsonl"

    url = store_url  # conftest's SQLite store in tmp_path
    s = open_store(url)
    s.start_run(RunRecord("spooled-conv", time.time(), "eu", 0, planned=2))
    s.close()
    out = run_cli("runs", "reconcile", env={"VOXWATCH_STORE_URL": url, "VOXWATCH_STORE_SPOOL_DIR": str(spool)}).stdout
    assert "spool: 2 rows of 1 runs stored from 1 files" in out, out
    assert list(spool.iterdir()) == []
    s = open_store(url)
    try:
        [(row, turns)] = s.conversations()
        run = s.run("spooled-conv")
    finally:
        s.close()
    assert (row.conversation_id, row.status, row.reason) == (job.key, "failed", "no session: connection refused")
    assert [t.status for t in turns] == ["error", "error"]
    assert (run.status, run.rows, run.failed_rows) == ("failed", 2, 2), run
