"""Running a benchmark's `--quick` mode as a user runs it (`python -m benchmarks.NAME --quick`), for the
tests that hold a quick mode to more than tests/test_benchmarks_quick.py does."""

from __future__ import annotations

import json
import subprocess
import sys

from support.processes import REPO


def quick_run(name: str, timeout_s: float = 600) -> tuple[list[str], dict]:
    """The benchmark's printed lines and its last line's JSON; fails the test with its stderr's end
    when it exits non-zero."""
    proc = subprocess.run([sys.executable, "-m", f"benchmarks.{name}", "--quick"], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout_s)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    return lines, json.loads(lines[-1])
