"""Shared fixtures: the CLI run as a user runs it, against a throwaway store. Helpers that tests import
live in tests/support/."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

from support import browser
from support.postgres import fresh_postgres
from support.processes import BOUND_VARIABLE, UNBOUNDED_MS, run_cli


@pytest.fixture(scope="session", autouse=True)
def witness_off_but_where_tested() -> Iterator[None]:
    """The suite runs on a busy 2-core machine (CI: two CPU-bound processes beside four test workers),
    where the clock witness rightly excludes rows whose worker stalled around a timed event (METHOD
    "Clock witness"). A test of something else must not turn on the machine's load, so its bound is
    lifted here, in this process and in the CLIs tests start (support.processes); the witness's own
    tests (test_clock_witness, test_stalled_rows, test_backpressure) hold rows to the method's bound."""
    from voxwatch.metrics import witness

    held, witness.STALL_BOUND_MS = witness.STALL_BOUND_MS, UNBOUNDED_MS
    os.environ[BOUND_VARIABLE] = str(UNBOUNDED_MS)
    try:
        yield
    finally:
        witness.STALL_BOUND_MS = held


@pytest.fixture
def method_bound(monkeypatch) -> float:
    """The clock witness held to the method's bound (see witness_off_but_where_tested)."""
    from voxwatch.metrics import witness

    monkeypatch.setattr(witness, "STALL_BOUND_MS", witness.METHOD_BOUND_MS)
    monkeypatch.delenv(BOUND_VARIABLE, raising=False)
    return witness.METHOD_BOUND_MS


@pytest.fixture
def unpaced(monkeypatch) -> None:
    """A caller's audio as fast as the socket takes it (support.contract.unpace), for a contract test
    that times nothing: pacing in real time would only make it wait."""
    from support.contract import unpace

    unpace(monkeypatch)


@pytest.fixture(scope="module")
def postgres_store_url() -> Iterator[str]:
    """A migrated Postgres store of the module's own (`voxwatch db upgrade`, as a user runs it)."""
    with fresh_postgres() as url:
        run_cli("db", "upgrade", "--store", url)
        yield url


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'voxwatch.sqlite'}"


@pytest.fixture
def cli(monkeypatch, tmp_path: Path, capsys):
    """`voxwatch ARGS` in-process, in an empty folder, with no VOXWATCH_* variable but `env`:
    (exit code, stdout, stderr)."""
    from voxwatch.cli import main as cli_main

    for name in list(os.environ):
        if name.startswith("VOXWATCH_") and name != BOUND_VARIABLE:  # the suite's lifted bound stays (a CLI
            monkeypatch.delenv(name)  # the test starts with run_cli would otherwise hold its rows to the method's)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)

    def call(*argv: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
        with monkeypatch.context() as m:
            for name, value in (env or {}).items():
                m.setenv(name, value)
            capsys.readouterr()
            try:
                code = cli_main(list(argv))
            except SystemExit as exc:  # argparse
                code = exc.code
            out = capsys.readouterr()
        return code, out.out, out.err
    return call


# the files that take longest, first: `--dist loadfile` hands files out in collection order, so a long
# file collected last would run alone at the end while the other workers sit idle
_LONGEST_FIRST = ("test_run_cli.py", "test_every_vendor.py", "test_alerts.py", "test_run_faults.py", "test_distributed.py",
                  "test_openai.py", "test_vendor_emulators.py", "test_elevenlabs.py", "test_no_secrets.py", "test_web.py")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: the browser marker must be on the items by then
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(_LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
    for item in items:
        if browser.FIXTURE in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)


def pytest_collection_finish(session: pytest.Session) -> None:
    """A selected browser test without Chromium stops the run here, in one line, not in a page of errors."""
    if browser.missing() and any(item.get_closest_marker("browser") for item in session.items):
        pytest.exit(f"the browser tests need {' and '.join(browser.missing())}: apt-get install chromium "
                    "chromium-driver (make test does when it may), or deselect them: -m 'not browser'", returncode=4)
