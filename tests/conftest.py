"""Shared fixtures: the CLI run as a user runs it, in a subprocess, against a throwaway store."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
POSTGRES_ADMIN = os.environ.get("VOXWATCH_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            check: bool = True) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("VOXWATCH_")}
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "voxwatch.cli", *args], cwd=cwd or REPO, env=full_env,
                          capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"voxwatch {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


@contextlib.contextmanager
def fresh_postgres() -> Iterator[str]:
    """A new, empty database on the test Postgres (VOXWATCH_TEST_POSTGRES, else the local one), dropped after."""
    from voxwatch.store import StoreError
    from voxwatch.store.connection import connect

    try:
        admin = connect(POSTGRES_ADMIN, timeout_s=5)
    except StoreError as exc:
        raise RuntimeError(f"the tests need Postgres at {POSTGRES_ADMIN} (.ci/run starts it): {exc}") from None
    name = f"voxwatch_test_{secrets.token_hex(5)}"
    with admin:
        admin.execute(f"CREATE DATABASE {name}")
        try:
            yield POSTGRES_ADMIN.rsplit("/", 1)[0] + "/" + name
        finally:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


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
        if name.startswith("VOXWATCH_"):
            monkeypatch.delenv(name)
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


def tone(sample_rate: int, onset_s: float, duration_s: float, total_s: float, freq: float = 220.0,
         amplitude: float = 0.3) -> np.ndarray:
    """Silence, then a sine that starts sharply at onset_s."""
    x = np.zeros(int(round(total_s * sample_rate)))
    start = int(round(onset_s * sample_rate))
    n = int(round(duration_s * sample_rate))
    t = np.arange(n) / sample_rate
    x[start:start + n] = amplitude * np.sin(2 * np.pi * freq * t)
    return x


# the files that take longest, first: `--dist loadfile` hands files out in collection order, so a long
# file collected last would run alone at the end while the other workers sit idle
_LONGEST_FIRST = ("test_run_cli.py", "test_every_vendor.py", "test_alerts.py", "test_run_faults.py", "test_distributed.py",
                  "test_openai.py", "test_vendor_emulators.py", "test_elevenlabs.py", "test_no_secrets.py", "test_web.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(_LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
