"""No password on any output: every CLI command, run against a store URL with a planted password
(and against one whose database is down), prints neither the password nor the URL that holds it.

Postgres here trusts local connections, so a password in the URL is accepted and ignored: each
command does its real work with the secret in hand, the way a deployment with a password does.
"""

from __future__ import annotations

import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from support.processes import REPO, run_cli
from support.postgres import fresh_postgres
from support.processes import kept_env

pytestmark = pytest.mark.e2e

PASSWORD = "pw-" + secrets.token_hex(8)
TOKEN = "glsa_" + secrets.token_hex(12)


def _with_password(url: str, password: str = PASSWORD) -> str:
    scheme, rest = url.split("://", 1)
    user, host = rest.split("@", 1)
    return f"{scheme}://{user}:{password}@{host}"


def _clean(text: str) -> None:
    assert PASSWORD not in text and TOKEN not in text, text[-2000:]


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    proc = run_cli(*args, env={"VOXWATCH_GRAFANA_TOKEN": TOKEN, **(env or {})}, check=False)
    _clean(proc.stdout + proc.stderr)
    return proc


def _long_running(args: list[str], seconds: float, log: Path, port: int | None = None,
                  extra_env: dict[str, str] | None = None) -> str:
    """A serving command for a few seconds (and its pages read, for serve); everything it printed."""
    env = kept_env() | (extra_env or {})
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "voxwatch.cli", *args], cwd=REPO, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    pages = []
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and proc.poll() is None:
            if port is not None:
                try:
                    for path in ("/", "/board/stt", "/api/v1/leaderboard", "/api/v1/health", "/alerts",
                                 "/board/stt?format=csv", "/api/v1/openapi.json"):
                        pages.append(httpx.get(f"http://127.0.0.1:{port}{path}", timeout=5).text)
                    break
                except httpx.TransportError:
                    pass
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return log.read_text() + "".join(pages)


def test_a_password_in_the_store_url_never_appears_in_any_output(tmp_path: Path):
    with fresh_postgres() as plain:
        url = _with_password(plain)
        assert _cli("db", "upgrade", "--store", url).returncode == 0
        ran = _cli("run", "--models", "pocketsphinx/en-us@5.1.1", "--datasets", "stt-starter-clean",
                   "--sample-size", "2", "--store", url, "--no-progress")
        assert ran.returncode == 0 and "store postgresql://postgres:***@" in ran.stdout  # redacted, not dropped
        assert "STT board" in ran.stdout
        for fmt in ("table", "csv", "json"):
            assert _cli("leaderboard", "--format", fmt, "--store", url).returncode == 0
        exported = tmp_path / "rows.jsonl"
        assert _cli("export", "--out", str(exported), "--store", url).returncode == 0
        _clean(exported.read_text())
        assert _cli("ingest", str(exported), "--store", url).returncode == 0
        assert _cli("db", "refresh", "--store", url).returncode == 0
        assert _cli("alerts", "evaluate", "--store", url).returncode == 0
        assert _cli("alerts", "list", "--store", url).returncode == 0
        for args in (("providers", "list"), ("datasets", "list")):
            assert _cli(*args).returncode == 0
        port = _free_port()
        served = _long_running(["serve", "--store", url, "--port", str(port)], 30, tmp_path / "serve.log", port)
        assert "<table" in served  # the pages were read, not just the log
        _clean(served)
        _clean(_long_running(["worker", "--store", url, "--loglevel", "debug"], 6, tmp_path / "worker.log"))
        beat = ["beat", "--schedule-file", str(tmp_path / "beat-schedule"), "--loglevel", "debug"]
        _clean(_long_running(beat, 6, tmp_path / "beat.log", extra_env={"VOXWATCH_STORE_URL": url}))
    # a database that is down: the error names it without its password
    down = _with_password("postgresql://postgres@127.0.0.1:1/voxwatch")
    for args in (("leaderboard", "--store", down), ("leaderboard", "--format", "json", "--store", down),
                 ("db", "upgrade", "--store", down), ("alerts", "list", "--store", down),
                 ("export", "--store", down), ("runs", "list", "--store", down), ("runs", "reconcile", "--store", down)):
        proc = _cli(*args)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert "127.0.0.1:1" in proc.stderr or "cannot" in proc.stderr
    pushed = _cli("dashboards", "push", "--url", "http://admin:" + PASSWORD + "@127.0.0.1:1")
    assert pushed.returncode == 2


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("url", ["postgresql://u:{p}@h:5/db", "postgresql://u@h/db?password={p}&sslmode=require"])
def test_the_redaction_keeps_the_rest_of_the_url(url: str):
    from voxwatch.store import redact

    shown = redact(url.format(p=PASSWORD))
    assert PASSWORD not in shown and "***" in shown and "db" in shown
