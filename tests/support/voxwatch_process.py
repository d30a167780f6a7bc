"""`voxwatch` commands that keep running (a worker, beat) as the tests start them: each in its own
process group, with its log in a file, stopped gently or killed outright."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from support.processes import REPO
from support.processes import kept_env


class Voxwatch:
    """`voxwatch ARGS...` in its own process group (so a kill reaches its children), its log in a file."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path, name: str) -> None:
        self.name, self.log = name, log
        full_env = kept_env() | env
        with log.open("w") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "voxwatch.cli", *args], cwd=REPO, env=full_env,
                                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def text(self) -> str:
        return self.log.read_text()

    def wait_for(self, needle: str, timeout: float = 60, after: int = 0) -> int:
        """Wait until the log holds needle (past offset `after`); returns the offset just past it."""
        deadline = time.monotonic() + timeout
        while (at := self.text().find(needle, after)) < 0:
            assert self.proc.poll() is None, f"{self.name} exited {self.proc.returncode}:\n{self.text()}"
            assert time.monotonic() < deadline, f"{self.name} never logged {needle!r}:\n{self.text()}"
            time.sleep(0.1)
        return at + len(needle)

    def kill(self) -> None:
        """SIGKILL for the process and its children at once: nothing gets to clean up."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # warm shutdown
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()


class Worker(Voxwatch):
    """`voxwatch worker --region R`."""

    def __init__(self, region: str, env: dict[str, str], log: Path, concurrency: int = 1) -> None:
        super().__init__(["worker", "--region", region, "--concurrency", str(concurrency)], env, log,
                         f"worker {region}")
        self.region = region
