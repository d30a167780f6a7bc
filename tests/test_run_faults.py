"""No run is ever left `running`: distributed mode through the faults operators met (issue #15).

Each scenario runs real `voxwatch worker` and `voxwatch beat` processes against a Postgres and a
Redis of its own, started here in a temporary directory on free ports (never the shared ones:
these are stopped and restarted), and the four run at once, each in a thread (a test waits for
its own). The Deepgram adapter measures the clean starter clips against `voxwatch emulate`
(real-time streaming, a few seconds a clip, and little CPU: no decoder to fall behind on a loaded
machine); beat sends only the reconciler, every 3 s. What must hold, whatever the fault:

- Postgres stopped for 60 s mid-run: every planned row is stored exactly once (the rows it refused
  are spooled, then drained into it by the workers) and the run is finished from the store;
- Redis restarted mid-run: every row stored once, the run finished;
- beat killed and restarted: the plan it sends again for the slot measures nothing (one run);
- a worker SIGKILLed mid-run: its task comes back, every row is stored once, the run finished.

Then the reconciler's rules on their own, on both stores: early when complete, at the deadline
when not, never before it, again when rows arrive late, and for rows whose run has no record.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import re
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import pytest
import redis

from support.processes import run_cli
from voxwatch.config import load
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.foundation.observation import Observation, RunRecord, run_status
from voxwatch.providers.registry import Registry
from voxwatch.foundation.store_url import StoreError
from voxwatch.store import open_store
from voxwatch.workers.job import Job
from voxwatch.workers.process_state import ProcessState
from voxwatch.workers.reconcile import reconcile
from voxwatch.harness.tick import plan_tick
from voxwatch.workers.schedule import slot_of, slot_run_id
from support.private_postgres import PG_BIN, PrivatePostgres, free_port, initdb, run_as_postgres
from support.voxwatch_process import Voxwatch, Worker

pytestmark = pytest.mark.faults

PS = "pocketsphinx/en-us@5.1.1"
MODEL = "deepgram/nova-3"  # against its emulator
CLEAN = "stt-starter-clean"
WAIT_S = 300  # every wait polls; this only bounds a hung scenario
# a measurement may take 20 s (a loaded machine starting a decoder); a killed worker's task is back after 30 s
ENV = {"VOXWATCH_BROKER_SOFT_TIME_LIMIT_S": "25", "VOXWATCH_BROKER_TIME_LIMIT_S": "28",
       "VOXWATCH_BROKER_VISIBILITY_TIMEOUT_S": "30", "VOXWATCH_BROKER_CONVERSATION_SOFT_TIME_LIMIT_S": "26",
       "VOXWATCH_BROKER_CONVERSATION_TIME_LIMIT_S": "29",
       "VOXWATCH_RUN_RECONCILE_EVERY_S": "3", "VOXWATCH_RUN_RECONCILE_AFTER_S": "900",
       "VOXWATCH_BOARDS_STT_MODELS": "", "VOXWATCH_BOARDS_TTS_MODELS": "",  # beat plans nothing by itself:
       "VOXWATCH_BOARDS_S2S_CONVERSATION_MODELS": "",  # not even conversations
       "VOXWATCH_SCHEDULE_EVERY_MINUTES": "60"}


def _until(what: str, check: Callable[[], object], timeout: float = WAIT_S, every: float = 1.0):
    """Poll check() until it returns something true; returns that."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(every)
    return value


class PrivateRedis:
    """`redis-server --save "" --appendonly no` of the test's own on a free port."""

    def __init__(self, root: Path) -> None:
        self.dir, self.port = root, free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        with (self.dir / "redis.log").open("a") as log:
            self.proc = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                          "--appendonly", "no", "--dir", str(self.dir)], stdout=log,
                                         stderr=subprocess.STDOUT)
        client = redis.Redis(port=self.port)
        _until("redis to answer", lambda: _pings(client), timeout=60, every=0.1)

    def stop(self, save: bool = False) -> None:
        """SHUTDOWN (SAVE: its data is written to dump.rdb and loaded again at the next start)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(redis.ConnectionError):
            redis.Redis(port=self.port).shutdown(save=save, nosave=not save)
        self.proc.wait(60)


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


@dataclass
class Scenario:
    """One fault's world: its Postgres, its Redis, its processes, its logs."""
    name: str
    root: Path
    postgres: PrivatePostgres
    redis: PrivateRedis
    emulator: dict[str, str]  # the Deepgram emulator's base URL and key variables
    processes: list[Voxwatch] = field(default_factory=list)

    @property
    def region(self) -> str:
        return f"faults-{self.name}"

    def env(self, **extra: str) -> dict[str, str]:
        var = self.root / "var"
        return {"VOXWATCH_WORKER_REGION": self.region,  # beat's own region: where it sends the reconciler
                "VOXWATCH_BROKER_URL": self.redis.url, "VOXWATCH_BROKER_QUEUE_PREFIX": "vwfaults",
                "VOXWATCH_STORE_URL": self.postgres.url, "VOXWATCH_STORE_SPOOL_DIR": str(var / "spool"),
                "VOXWATCH_RUN_RECORDINGS_DIR": str(var / "recordings"), "VOXWATCH_DATASETS_DIR": str(var / "datasets"),
                **self.emulator, **ENV, **extra}

    def worker(self, concurrency: int = 1, **extra: str) -> Worker:
        w = Worker(self.region, self.env(**extra), self.root / f"worker-{len(self.processes)}.log", concurrency)
        self.processes.append(w)
        return w

    def beat(self, **extra: str) -> Voxwatch:
        b = Voxwatch(["beat", "--schedule-file", str(self.root / "beat-schedule")], self.env(**extra),
                     self.root / f"beat-{len(self.processes)}.log", f"beat {self.name}")
        self.processes.append(b)
        return b

    def tick(self, sample_size: int, seed: int) -> str:
        out = run_cli("tick", "--region", self.region, "--models", MODEL, "--datasets", CLEAN, "--sample-size",
                      str(sample_size), "--seed", str(seed), env=self.env()).stdout
        assert out.startswith("run "), out
        return out.split()[1]

    def stored(self, run_id: str) -> tuple[RunRecord | None, list[Observation]] | None:
        """The run's record and rows as the store has them (None while the store is away)."""
        try:
            store = open_store(self.postgres.url)
        except StoreError:
            return None
        try:
            return store.run(run_id), [r for r in store.observations() if r.run_id == run_id]
        except StoreError:
            return None
        finally:
            store.close()

    def finished(self, run_id: str) -> tuple[RunRecord, list[Observation]]:
        def final():
            seen = self.stored(run_id)
            return seen if seen and seen[0] is not None and seen[0].status != "running" else None
        try:
            return _until(f"run {run_id} to finish", final)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.logs()}") from None

    def rows(self, run_id: str) -> int:
        seen = self.stored(run_id)
        return len(seen[1]) if seen else 0

    def logs(self) -> str:
        return "\n".join(f"--- {p.name} ---\n{p.text()[-6000:]}" for p in self.processes)

    def shut_down(self) -> None:
        """Its processes, then its Redis and its Postgres (whatever state a failure left them in)."""
        for p in self.processes:
            with contextlib.suppress(Exception):
                p.stop()
        self.redis.stop()
        with contextlib.suppress(subprocess.CalledProcessError):  # stopped already
            self.postgres.stop()


def planned_keys(sample_size: int, seed: int) -> list[tuple[str, str, str, int]]:
    """The rows a tick on the clean clips should leave, as `voxwatch run` draws them (the draw is the
    same for every model: drawn here for one that needs no key)."""
    plan = plan_tick(load(environ={}), Registry.default(), Catalog([bundled_root()]), models=[PS], datasets=[CLEAN],
                     sample_size=sample_size, seed=seed)
    return sorted((MODEL, t.dataset.name, t.item.id, 1) for t in plan.tasks)


def assert_finished_from_the_store(scenario: Scenario, run_id: str, sample_size: int, seed: int) -> RunRecord:
    """Every planned row stored exactly once, and the record's counts and status are the store's."""
    run, rows = scenario.finished(run_id)
    keys = sorted((r.model_id, r.dataset, r.clip_id, r.attempt) for r in rows)
    assert keys == planned_keys(sample_size, seed), (keys, scenario.logs())
    failed = sum(r.status != "ok" for r in rows)
    assert (run.rows, run.failed_rows, run.planned) == (sample_size, failed, sample_size), run
    assert run.status == run_status(len(rows), failed) and run.finished_at >= run.started_at, run
    return run


# ---------------------------------------------------------------- the scenarios, each in its own thread

def postgres_down_for_60_s(s: Scenario) -> dict:
    s.worker(concurrency=2), s.beat()
    run_id = s.tick(16, 41)
    _until("a quarter of the rows stored", lambda: s.rows(run_id) >= 4)
    s.postgres.stop()
    down_at = time.monotonic()
    spool = s.root / "var" / "spool"
    _until("a row spooled while the store is down", lambda: any(spool.glob("unsaved-*.jsonl")), timeout=120)
    time.sleep(max(0.0, 60 - (time.monotonic() - down_at)))  # the outage of the issue: 60 s
    s.postgres.start()
    run = assert_finished_from_the_store(s, run_id, 16, 41)
    return {"run": run, "spool left": sorted(p.name for p in spool.iterdir()), "logs": s.logs()}


def redis_restarted(s: Scenario) -> dict:
    worker, _ = s.worker(concurrency=2), s.beat()
    run_id = s.tick(16, 42)
    _until("a third of the rows stored", lambda: s.rows(run_id) >= 5)
    s.redis.stop(save=True)  # a restart that keeps the queue (as the operators' did: 16/16 rows came)
    s.redis.start()
    run = assert_finished_from_the_store(s, run_id, 16, 42)
    return {"run": run, "noticed": "Connection to broker lost" in worker.text(), "logs": s.logs()}


def beat_restarted(s: Scenario) -> dict:
    """Beat keeps its last send times in its schedule file, written after its first send and then at
    most every 3 minutes: killed after a plan it had not recorded, it sends that slot's plan again."""
    board = {"VOXWATCH_BOARDS_STT_MODELS": MODEL, "VOXWATCH_BOARDS_STT_DATASETS": CLEAN,
             "VOXWATCH_SCHEDULE_EVERY_MINUTES": "1", "VOXWATCH_RUN_SAMPLE_SIZE": "1",
             "VOXWATCH_RUN_PANEL_SIZE": "0"}  # one clip a tick: the slot, not the panel, is under test
    worker = s.worker(**board)
    first = s.beat(**board)
    # beat writes its schedule file once its first tick's sends are out (a plan due at start-up goes in
    # that tick, and is recorded): the plan to resend is one sent after a later tick
    synced = first.wait_for("Sending due task runs reconcile", timeout=120)
    synced = first.wait_for("Sending due task runs reconcile", timeout=60, after=synced)
    first.wait_for(f"Sending due task stt {CLEAN} @{s.region}", timeout=150, after=synced)
    # beat logs a send before it publishes: a kill between the two loses the plan, and the second beat's
    # plan is then the slot's first. Kill once the worker holds it (its second plan: start-up's, then this)
    _until("the worker holding the slot's plan",
           lambda: len(re.findall(r"Task voxwatch\.plan\[[^\]]+\] received", worker.text())) >= 2, timeout=60)
    first.kill()
    second = s.beat(**board)
    second.wait_for(f"Sending due task stt {CLEAN} @{s.region}", timeout=120)
    duplicate = worker.wait_for("is a duplicate and measures nothing", timeout=120)
    second.stop()
    line = worker.text()[:duplicate].rsplit("\n", 1)[-1]
    run_id = re.search(r"run ([0-9a-f]{32}): its slot", line).group(1)
    run, rows = s.finished(run_id)
    store = open_store(s.postgres.url)
    try:
        runs = store.runs()
    finally:
        store.close()
    return {"run": run, "rows": rows, "runs": runs, "line": line, "logs": s.logs()}


def worker_killed(s: Scenario) -> dict:
    a, b = s.worker(), s.worker()
    s.beat()
    run_id = s.tick(8, 43)
    _until("two rows stored", lambda: s.rows(run_id) >= 2)
    task = f"voxwatch.measure[{run_id}:"

    def busy(w: Worker) -> list[str]:
        """The run's tasks the worker took and has not finished (by its log)."""
        text = w.text()
        taken = dict.fromkeys(t.split("]", 1)[0] for t in text.split(task)[1:])
        return [k for k in taken if f"{task}{k}] succeeded" not in text]

    seen = {w: set(busy(w)) for w in (a, b)}  # kill a worker as it starts an item: the item is then mid-way
    victim = _until("a worker taking an item of the run",
                    lambda: next((w for w in (a, b) if set(busy(w)) - seen[w]), None), every=0.1)
    time.sleep(0.3)  # its clip is streaming (a clip takes 1.5 s or more)
    victim.kill()
    killed = busy(victim)  # what it held when it died
    other = b if victim is a else a
    run = assert_finished_from_the_store(s, run_id, 8, 43)
    return {"run": run, "killed": killed, "redelivered": [k for k in killed if f"{task}{k}] received" in other.text()],
            "logs": s.logs()}


SCENARIOS: dict[str, Callable[[Scenario], dict]] = {
    "pgdown": postgres_down_for_60_s, "redis": redis_restarted, "beat": beat_restarted, "kill": worker_killed}
TESTS = {"pgdown": "test_a_run_survives_postgres_down_for_60_s", "redis": "test_a_run_survives_a_redis_restart",
         "beat": "test_a_restarted_beat_plans_no_second_tick_for_its_slot",
         "kill": "test_a_run_survives_a_worker_killed_mid_run"}


# ---------------------------------------------------------------- the reconciler's rules, on both stores

def _row(run_id: str, clip: str, status: str = "ok", at: float | None = None) -> Observation:
    return Observation(run_id=run_id, model_id=PS, dataset=CLEAN, clip_id=clip, attempt=1, board="stt",
                       vendor="pocketsphinx", protocol="local", region="eu", started_at=at or time.time(),
                       status=status, seed=7, method_version="v5")


def _spool(spool_dir: Path, row: Observation) -> Path:
    """Spool the row as a worker does when its store is down (nothing listens at the store's port)."""
    down = load(environ={"VOXWATCH_STORE_URL": f"postgresql://postgres@127.0.0.1:{free_port()}/voxwatch",
                         "VOXWATCH_STORE_SPOOL_DIR": str(spool_dir)})
    writer = ProcessState(down).writer(row.run_id)
    writer.write(row)
    path = writer.flush()
    assert path is not None and path.parent == spool_dir, path
    return path


def _rules(url: str) -> None:
    store = open_store(url)
    now = time.time()
    try:
        for run_id, age, planned in (("complete", 10, 2), ("young", 10, 3), ("late", 100, 3), ("bad", 100, 2)):
            store.start_run(RunRecord(run_id, now - age, "eu", 7, planned=planned))
        store.add([_row("complete", "u001"), _row("complete", "u002", "timeout"), _row("young", "u001"),
                   _row("late", "u001"), _row("late", "u002"), _row("bad", "u001", "error"),
                   _row("norecord", "u001", at=now - 200), _row("norecord", "u002", "error", at=now - 199)])
        settled = {r.run_id: r for r in reconcile(store, 60, now)}
        assert set(settled) == {"complete", "late", "bad", "norecord"}  # "young": short of rows, inside its deadline
        assert (settled["complete"].status, settled["complete"].rows, settled["complete"].failed_rows) == ("partial", 2, 1)
        assert (settled["late"].status, settled["late"].rows) == ("partial", 2)  # one row never came
        assert "2 rows of 3 planned stored by its deadline" in settled["late"].note
        assert (settled["bad"].status, settled["bad"].rows) == ("failed", 1)
        assert (settled["norecord"].status, settled["norecord"].rows, settled["norecord"].planned) == ("partial", 2, None)
        assert settled["norecord"].started_at == pytest.approx(now - 200)
        assert store.run("young").status == "running"
        assert reconcile(store, 60, now + 1) == []  # nothing changed: nothing written
        store.add([_row("late", "u003")])  # the missing row, stored after the run was finished
        again = reconcile(store, 60, now + 2)
        assert [(r.run_id, r.status, r.rows) for r in again] == [("late", "succeeded", 3)]
        assert [(r.run_id, r.status, r.rows) for r in reconcile(store, 60, now + 61)] == [("young", "partial", 1)]
    finally:
        store.close()


def test_the_reconciler_finishes_runs_by_their_stored_rows_on_sqlite(tmp_path):
    _rules(f"sqlite:///{tmp_path / 'voxwatch.sqlite'}")


def test_the_reconciler_finishes_runs_by_their_stored_rows_on_postgres(postgres_store_url):
    _rules(postgres_store_url)


def test_runs_reconcile_adds_the_spool_then_finishes_what_it_completes(tmp_path):
    """The command an operator runs: spooled rows go in (the file then goes), the run they complete
    is finished, a run inside its deadline is left alone; `runs list` shows both."""
    url = f"sqlite:///{tmp_path / 'voxwatch.sqlite'}"
    env = {"VOXWATCH_STORE_URL": url, "VOXWATCH_STORE_SPOOL_DIR": str(tmp_path / "spool")}
    store = open_store(url)
    now = time.time()
    store.start_run(RunRecord("spooled", now, "eu", 7, planned=2))
    store.start_run(RunRecord("waiting", now, "eu", 7, planned=2))
    store.add([_row("spooled", "u001")])
    store.close()
    _spool(tmp_path / "spool", _row("spooled", "u002"))
    out = run_cli("runs", "reconcile", env=env).stdout
    assert "spool: 1 rows of 1 runs stored from 1 files" in out, out
    assert "run spooled succeeded: 2 observations of 2 planned (0 not ok)" in out, out
    assert "1 runs finished from the store; 1 still running inside their deadline" in out, out
    assert list((tmp_path / "spool").iterdir()) == []
    listed = run_cli("runs", "list", env=env).stdout.splitlines()
    assert listed[0].split()[:6] == ["run", "region", "status", "rows", "planned", "not"]
    assert {tuple(line.split()[:5]) for line in listed[1:]} == {("spooled", "eu", "succeeded", "2", "2"),
                                                                 ("waiting", "eu", "running", "0", "2")}


def test_a_worker_adds_what_its_host_spooled_once_the_store_takes_a_row(tmp_path):
    """A measure task whose row the store took adds the rows spooled before (here with Redis away as
    well: the counts are lost, the run is finished from the store all the same)."""
    from voxwatch.workers.tasks import record  # the Celery app, in this process only here

    url = f"sqlite:///{tmp_path / 'voxwatch.sqlite'}"
    cfg = load(environ={"VOXWATCH_STORE_URL": url, "VOXWATCH_STORE_SPOOL_DIR": str(tmp_path / "spool"),
                        "VOXWATCH_BROKER_URL": f"redis://127.0.0.1:{free_port()}/0"})  # nothing listens there
    store = open_store(url)
    store.start_run(RunRecord("r", time.time(), "eu", 7, planned=2))
    store.close()
    _spool(cfg.spool_dir, _row("r", "u001"))
    record(ProcessState(cfg), Job("r", 7, PS, CLEAN, "u002", "sha"), _row("r", "u002"),
           drain_until=time.monotonic() + 60)
    assert list(cfg.spool_dir.iterdir()) == []
    store = open_store(url)
    try:
        run = store.run("r")
        assert (run.status, run.rows, run.planned) == ("succeeded", 2, 2) and "every planned row" in run.note
        assert sorted(r.clip_id for r in store.observations()) == ["u001", "u002"]
    finally:
        store.close()


# ---------------------------------------------------------------- the scenarios' outcomes

@pytest.fixture(scope="module", autouse=True)
def scenarios(request) -> Iterator[dict[str, Future]]:
    """The selected tests' scenarios, started at once, before the module's first test: the quick tests
    run while they do. VOXWATCH_TEST_KEEP=1 keeps their logs."""
    selected = {item.name for item in request.session.items}
    wanted = [name for name, test in TESTS.items() if test in selected]
    if not wanted or not (PG_BIN / "initdb").exists() or shutil.which("redis-server") is None:
        yield {}  # the scenario tests skip
        return
    root = Path(tempfile.mkdtemp(prefix="voxwatch-faults-"))
    as_postgres = run_as_postgres(root)
    worlds: list[Scenario] = []
    pool = ThreadPoolExecutor(len(SCENARIOS))
    emulator = Voxwatch(["emulate", "--vendors", "deepgram"], {}, root / "emulate.log", "voxwatch emulate")
    try:
        initdb(root / "template", as_postgres)
        emulator.wait_for("# emulators are running", timeout=WAIT_S)
        exports = dict(line[len("export "):].split("=", 1) for line in emulator.text().splitlines()
                       if line.startswith("export "))
        for name in wanted:
            (root / name).mkdir()
            if as_postgres:
                run_as_postgres(root / name)
            worlds.append(Scenario(name, root / name, PrivatePostgres(root / "template", root / name, as_postgres),
                                   PrivateRedis(root / name), exports))

        def play(world: Scenario) -> dict:
            try:
                world.postgres.start()
                world.redis.start()
                open_store(world.postgres.url).close()  # migrated once, before the workers open it
                return SCENARIOS[world.name](world)
            finally:
                world.shut_down()

        yield {w.name: pool.submit(play, w) for w in worlds}
        pool.shutdown(wait=True)
    finally:
        emulator.stop()
        for w in worlds:
            w.shut_down()
        if os.environ.get("VOXWATCH_TEST_KEEP"):
            print(f"scenario logs kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def _outcome(scenarios: dict[str, Future], name: str) -> dict:
    if name not in scenarios:
        pytest.skip(f"needs Postgres 15 binaries in {PG_BIN} and redis-server")
    return scenarios[name].result(timeout=WAIT_S * 2)


def test_a_run_survives_postgres_down_for_60_s(scenarios):
    outcome = _outcome(scenarios, "pgdown")
    # the rows the store refused were spooled, and the spool drained into it: every file
    assert "spool: " in outcome["logs"] and outcome["spool left"] == [], (outcome["spool left"], outcome["logs"])


def test_a_run_survives_a_redis_restart(scenarios):
    outcome = _outcome(scenarios, "redis")
    assert outcome["noticed"], outcome["logs"]  # the worker lost Redis mid-run, and the run was finished all the same


def test_a_restarted_beat_plans_no_second_tick_for_its_slot(scenarios):
    outcome = _outcome(scenarios, "beat")
    run = outcome["run"]
    cfg = load(environ={"VOXWATCH_SCHEDULE_EVERY_MINUTES": "1", "VOXWATCH_BROKER_QUEUE_PREFIX": "vwfaults"})
    slot = slot_of(run.started_at, 1)
    assert run.run_id in {slot_run_id(cfg, "faults-beat", "stt", [CLEAN], s * 60.0) for s in (slot - 1, slot)}
    assert len(outcome["rows"]) == 1 and run.rows == 1 and run.planned == 1, run
    # the plan sent twice measured once (one row above), and every run is named by its slot (the run
    # starts when a worker takes the plan: up to a slot after the send, so a plan sent at hh:mm:59.9
    # starts its run in the next minute, beside that minute's own run)
    assert all(any(r.run_id == slot_run_id(cfg, "faults-beat", "stt", [CLEAN], s * 60.0)
                   for s in (slot_of(r.started_at, 1), slot_of(r.started_at, 1) - 1))
               for r in outcome["runs"]), outcome["runs"]


def test_a_run_survives_a_worker_killed_mid_run(scenarios):
    outcome = _outcome(scenarios, "kill")
    # killed mid-measurement, and every task it held came back to the other worker
    assert outcome["killed"] and outcome["redelivered"] == outcome["killed"], (outcome["killed"], outcome["logs"])
