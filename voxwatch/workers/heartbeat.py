"""Liveness files for the containers' health checks: a running worker and beat each touch a file, and
`python -m voxwatch.workers.heartbeat FILE --within SECONDS` exits 0 only while it is that fresh.

Why a file: the check must cost next to nothing every 30 s. `celery inspect ping` starts a Celery
client, connects to the broker and waits for every worker's reply; a stat of a file costs one
system call. The worker's file is touched from its consumer's event loop (celery_app.Heartbeat), which
runs only while the worker is connected to the broker and not wedged; beat's after each pass of its
scheduling loop (celery_app.HeartbeatScheduler). This module imports nothing heavy: the check starts
in a few tens of milliseconds.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

WORKER_EVERY_S = 5.0
"""How often a worker touches its file."""


def touch(path: str | Path) -> None:
    """Mark the file fresh now: one utime once it exists (made, with its folder, the first time)."""
    try:
        os.utime(path)
    except FileNotFoundError:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()


def age_s(path: str | Path, now: float | None = None) -> float | None:
    """Seconds since the file was last touched; None when there is none."""
    try:
        touched = Path(path).stat().st_mtime
    except FileNotFoundError:
        return None
    return max(0.0, (time.time() if now is None else now) - touched)


def verdict(path: str | Path, within_s: float) -> tuple[bool, str]:
    """(alive, one line saying why) for a heartbeat file that must be younger than within_s."""
    age = age_s(path)
    if age is None:
        return False, f"no heartbeat yet at {path} (still starting, or not started with --heartbeat-file)"
    if age > within_s:
        return False, (f"stale: {path} last touched {age:.0f} s ago (limit {within_s:g} s): "
                       "its loop is stuck, or the worker has lost the broker")
    return True, f"alive: {path} touched {age:.0f} s ago"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m voxwatch.workers.heartbeat",
                                     description="exit 0 while a worker's or beat's heartbeat file is fresh")
    parser.add_argument("file")
    parser.add_argument("--within", type=float, required=True, metavar="SECONDS", help="the oldest touch that counts")
    args = parser.parse_args(argv)
    alive, line = verdict(args.file, args.within)
    print(line, file=sys.stdout if alive else sys.stderr)
    return 0 if alive else 1


if __name__ == "__main__":
    sys.exit(main())
