"""A Postgres cluster of a test's own, on a free port of loopback, that the test may stop and start
again (never the shared one): the store going away mid-run, as a server that goes down does."""

from __future__ import annotations

import os
import pwd
import socket
import subprocess
from pathlib import Path

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_as_postgres(root: Path) -> list[str]:
    """The prefix that runs a Postgres binary as the postgres user when the tests run as root (Postgres
    refuses to run as root), with root handed to that user; [] otherwise."""
    if os.geteuid() != 0:
        return []
    pw = pwd.getpwnam("postgres")
    os.chown(root, pw.pw_uid, pw.pw_gid)
    return ["runuser", "-u", "postgres", "--"]


def initdb(template: Path, as_postgres: list[str]) -> None:
    """An empty cluster in `template` (trust auth, user postgres), to copy for each PrivatePostgres."""
    subprocess.run([*as_postgres, str(PG_BIN / "initdb"), "-D", str(template), "-U", "postgres",
                    "-A", "trust", "-E", "UTF8", "--no-sync"], check=True, capture_output=True, timeout=300)


class PrivatePostgres:
    """A Postgres cluster of the test's own (copied from a template made once), on a free port."""

    def __init__(self, template: Path, root: Path, as_postgres: list[str]) -> None:
        self.data, self.log, self.run_as = root / "data", root / "postgres.log", as_postgres
        self.port = free_port()
        subprocess.run([*self.run_as, "cp", "-a", str(template), str(self.data)], check=True)
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _ctl(self, *args: str) -> None:
        subprocess.run([*self.run_as, str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-w", "-t", "180", *args],
                       check=True, capture_output=True, timeout=240)

    def start(self) -> None:
        self._ctl("-l", str(self.log), "-o", f"-p {self.port} -c listen_addresses=127.0.0.1 "
                  f"-c unix_socket_directories={self.data} -c fsync=off -c synchronous_commit=off "
                  "-c full_page_writes=off -c shared_buffers=16MB -c max_connections=50", "start")

    def stop(self) -> None:
        self._ctl("-m", "fast", "stop")  # clients are cut off at once, as when a server goes away
