"""Nothing lost when the spool cannot be written (issue #30, X1): the store down and the spool's disk
full. A spool folder that fails leaves no part file and the rows go to the fallback folder; rows no
folder takes are counted and said in one line (exit 3), the run ends `partial` or `failed` without
them, and the store's run record is finished from the store once it answers again.

The full disk is a 64 KiB tmpfs filled to its last byte (tests/support/full_disk.py); the store that
goes away is a Postgres of the test's own, stopped mid-run (tests/support/private_postgres.py), and
`voxwatch run` measures the Deepgram adapter against `voxwatch emulate` (real-time streaming: a few
seconds a clip, so the store can be stopped between rows).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from support.full_disk import full_disk
from support.private_postgres import PG_BIN, PrivatePostgres, free_port, initdb, run_as_postgres
from support.processes import run_cli
from support.voxwatch_process import Voxwatch
from voxwatch.config import load
from voxwatch.foundation.observation import Observation
from voxwatch.foundation.store_url import StoreError
from voxwatch.store import open_store
from voxwatch.store.spool import read_rows
from voxwatch.workers.process_state import ProcessState

MODEL = "deepgram/nova-3"  # against its emulator
CLEAN = "stt-starter-clean"
PLANNED = 6


def _row(clip: str, status: str = "ok") -> Observation:
    return Observation(run_id="r", model_id=MODEL, dataset=CLEAN, clip_id=clip, attempt=1, board="stt",
                       vendor="deepgram", protocol="streaming", region="eu", started_at=time.time(),
                       status=status, seed=7, method_version="v5")


def _writer(spool: Path, fallback: Path):
    """A run's writer whose store is down (nothing listens at its port), as a worker's is."""
    down = load(environ={"VOXWATCH_STORE_URL": f"postgresql://postgres@127.0.0.1:{free_port()}/voxwatch",
                         "VOXWATCH_STORE_SPOOL_DIR": str(spool), "VOXWATCH_STORE_SPOOL_FALLBACK_DIR": str(fallback)})
    return ProcessState(down).writer("r")


def _parts(*folders: Path) -> list[Path]:
    return [p for folder in folders if folder.exists() for p in folder.rglob("*.part")]


def test_rows_a_full_spool_refuses_go_to_the_fallback_and_no_part_file_is_left(tmp_path):
    with full_disk(tmp_path / "disk", ("spool",)) as disk:
        writer = _writer(disk / "spool", tmp_path / "fallback")
        rows = [_row("u001"), _row("u002", "timeout"), _row("u003")]
        for row in rows:
            writer.write(row)
        path = writer.flush()
        assert path is not None and path.parent == tmp_path / "fallback", path
        assert [(r.clip_id, r.status) for r in read_rows(path)] == [(r.clip_id, r.status) for r in rows]
        assert list((disk / "spool").iterdir()) == [] and _parts(disk) == []
        assert writer.unkept == [] and writer.unkept_error is None


def test_rows_no_spool_folder_takes_are_counted_with_every_folder_tried(tmp_path):
    with full_disk(tmp_path / "disk", ("spool", "fallback")) as disk:
        writer = _writer(disk / "spool", disk / "fallback")
        for clip in ("u001", "u002"):
            writer.write(_row(clip))
        assert writer.flush() is None
        assert [r.clip_id for r in writer.unkept] == ["u001", "u002"]
        said = str(writer.unkept_error)
        assert said.startswith("2 rows could not be kept: the store refused them (") and "\n" not in said, said
        assert f"{disk / 'spool'}: No space left on device" in said, said
        assert f"{disk / 'fallback'}: No space left on device" in said, said
        assert _parts(disk) == [] and list((disk / "spool").iterdir()) == [] == list((disk / "fallback").iterdir())
        writer.write(_row("u003"))  # a later flush adds to the count
        assert writer.flush() is None and said.replace("2 rows", "3 rows", 1) == str(writer.unkept_error)


def test_the_fallback_is_the_stores_own_under_the_temporary_folder_by_default():
    a = load(environ={"VOXWATCH_STORE_URL": "postgresql://u:pw1@db.example/a"})
    b = load(environ={"VOXWATCH_STORE_URL": "postgresql://u:pw1@db.example/b"})
    assert a.spool_dirs[0] == Path("var/spool") and a.spool_dirs[1].parent.name == "voxwatch-spool"
    assert a.spool_dirs[1] != b.spool_dirs[1]  # one store's rows are never drained into another
    assert load(environ={"VOXWATCH_STORE_SPOOL_FALLBACK_DIR": "var/spool"}).spool_dirs == (Path("var/spool"),)


# ---------------------------------------------------------------- voxwatch run, the store stopped mid-run

@pytest.fixture(scope="module")
def emulator(tmp_path_factory) -> Iterator[dict[str, str]]:
    """`voxwatch emulate --vendors deepgram`: its base URL and key variables."""
    root = tmp_path_factory.mktemp("emulate")
    proc = Voxwatch(["emulate", "--vendors", "deepgram"], {}, root / "emulate.log", "voxwatch emulate")
    try:
        proc.wait_for("# emulators are running", timeout=300)
        yield dict(line[len("export "):].split("=", 1) for line in proc.text().splitlines()
                   if line.startswith("export "))
    finally:
        proc.stop()


@pytest.fixture
def postgres() -> Iterator[PrivatePostgres]:
    """A Postgres of the test's own (in a folder of /tmp the postgres user can reach: not pytest's)."""
    if not (PG_BIN / "initdb").exists():
        pytest.skip(f"needs the Postgres 15 binaries in {PG_BIN}")
    root = Path(tempfile.mkdtemp(prefix="voxwatch-spool-full-"))
    try:
        as_postgres = run_as_postgres(root)
        initdb(root / "template", as_postgres)
        server = PrivatePostgres(root / "template", root, as_postgres)
        server.start()
        try:
            yield server
        finally:
            with contextlib.suppress(Exception):  # stopped already
                server.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _stored(url: str) -> tuple[list, list[Observation]] | None:
    """The store's run records and rows (None while it is away)."""
    try:
        store = open_store(url)
    except StoreError:
        return None
    try:
        return store.runs(), list(store.observations())
    except StoreError:
        return None
    finally:
        store.close()


def _until(what: str, check: Callable[[], object], timeout: float = 300) -> object:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
    return value


def _run_with_the_store_stopped(tmp_path: Path, postgres: PrivatePostgres, emulator: dict[str, str],
                                env: dict[str, str]) -> tuple[int, str]:
    """`voxwatch run` of PLANNED clips; the store is stopped once two rows are in it: (rc, its output)."""
    log = tmp_path / "run.log"
    run = Voxwatch(["run", "--models", MODEL, "--datasets", CLEAN, "--sample-size", str(PLANNED), "--seed", "30",
                    "--store", postgres.url, "--no-progress"],
                   {**emulator, "VOXWATCH_RUN_RECORDINGS_DIR": str(tmp_path / "recordings"), **env}, log, "voxwatch run")
    try:
        _until("two rows stored", lambda: (seen := _stored(postgres.url)) and len(seen[1]) >= 2)
        postgres.stop()
        rc = run.proc.wait(300)
    finally:
        run.stop()
    return rc, log.read_text()  # stdout and stderr in one log: the lines are told apart by their start


@pytest.mark.faults
def test_a_run_whose_spool_disk_is_full_keeps_its_rows_in_the_fallback(tmp_path, postgres, emulator):
    with full_disk(tmp_path / "disk", ("spool",)) as disk:
        fallback = tmp_path / "fallback"
        env = {"VOXWATCH_STORE_SPOOL_DIR": str(disk / "spool"), "VOXWATCH_STORE_SPOOL_FALLBACK_DIR": str(fallback)}
        rc, out = _run_with_the_store_stopped(tmp_path, postgres, emulator, env)
        assert rc == 0 and "Traceback" not in out, out
        spooled = list(fallback.glob("unsaved-*.jsonl"))
        assert len(spooled) == 1 and f"they are safe in {spooled[0]}" in out, out
        assert _parts(disk, fallback) == [] and list((disk / "spool").iterdir()) == []
        kept = read_rows(spooled[0])
        assert 1 <= len(kept) <= PLANNED - 2, kept  # the rows measured after the store went away
        postgres.start()
        done = run_cli("runs", "reconcile", "--store", postgres.url, env=env).stdout
        assert f"spool: {len(kept)} rows of 1 runs stored from 1 files" in done, done
        (run,), rows = _stored(postgres.url)
        assert len(rows) == PLANNED and (run.rows, run.planned) == (PLANNED, PLANNED), (run, out)
        assert run.status in ("succeeded", "partial") and "every planned row is stored" in run.note, run
        assert list(fallback.iterdir()) == []


@pytest.mark.faults
def test_a_run_no_spool_folder_takes_says_how_many_rows_it_lost(tmp_path, postgres, emulator):
    with full_disk(tmp_path / "disk", ("spool", "fallback")) as disk:
        env = {"VOXWATCH_STORE_SPOOL_DIR": str(disk / "spool"),
               "VOXWATCH_STORE_SPOOL_FALLBACK_DIR": str(disk / "fallback"), "VOXWATCH_RUN_RECONCILE_AFTER_S": "1"}
        rc, out = _run_with_the_store_stopped(tmp_path, postgres, emulator, env)
        assert rc == 3 and "Traceback" not in out, out
        errors = [line for line in out.splitlines() if line.startswith("voxwatch: error:")]
        assert len(errors) == 1, out
        lost = int(errors[0].split(": ", 3)[3].split()[0])  # "voxwatch: error: run ID: N rows could not be kept: ..."
        assert 1 <= lost <= PLANNED - 2 and f"{lost} rows could not be kept" in errors[0], errors
        assert f"{disk / 'spool'}: No space left on device" in errors[0], errors
        assert f"{disk / 'fallback'}: No space left on device" in errors[0], errors
        assert f": {PLANNED - lost} observations kept" in out, out
        assert _parts(disk) == []
        postgres.start()  # the store back: the run the process could not finish is finished from its rows
        run_cli("runs", "reconcile", "--store", postgres.url, env=env)
        (run,), rows = _stored(postgres.url)
        assert len(rows) == PLANNED - lost and run.rows == PLANNED - lost, (run, out)
        assert run.status in ("partial", "failed") and f"{PLANNED - lost} rows of {PLANNED} planned stored" in run.note, run

