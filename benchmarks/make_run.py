"""What a new user sees: `make run` from a fresh clone, twice, timed, and the board the second one prints.

`python -m benchmarks.make_run` clones this repository's HEAD into a scratch folder, runs `make run`
there twice (the first creates the virtual environment and installs; the second adds a second tick,
so the board has intervals and ranks) and records both times and the second run's output in
docs/make_run.txt. With `--write` it also puts that board and those times in the README, between its
`make-run` markers; tests/test_readme.py holds the README to that file and the file to the code.
Prints a table and, last, one JSON line.

`--quick` clones nothing and installs nothing (that takes minutes): it runs what `make run` runs, one
tick of `voxwatch run`, at its smallest (QUICK_RUN: the TTS board, 1 prompt) into a
scratch SQLite store with this checkout's interpreter, and writes no file; its target is that tick's
own time within the same 5 minutes (`quick_tick_within_5_min_target_met`).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECORD = REPO / "docs" / "make_run.txt"
README = REPO / "README.md"
BEGIN, END = "<!-- make-run:begin (python -m benchmarks.make_run --write) -->", "<!-- make-run:end -->"
TARGET_S = 300.0  # a first `make run`, install included, within five minutes on 2 cores
QUICK_RUN = ("run", "--board", "tts", "--sample-size", "1", "--seed", "1", "--no-progress")
"""`make run`'s `voxwatch run`, at its smallest: --quick's one tick (every board at 1 item and 1 conversation
turn took 94 s of wall time on a busy 2-core machine, the recorded speech's STT paced in real time; the TTS
board alone, the local eSpeak NG heard by the Whisper instrument, takes seconds)."""


def _make_run(clone: Path) -> tuple[float, str]:
    started = time.monotonic()
    proc = subprocess.run(["make", "--no-print-directory", "-s", "run"], cwd=clone, capture_output=True, text=True,
                          timeout=1800)
    took = time.monotonic() - started
    if proc.returncode != 0:
        sys.exit(f"make run exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return took, proc.stdout


def record_text(first_s: float, second_s: float, board: str, commit: str) -> str:
    day = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    return (f"# python -m benchmarks.make_run, {day}, commit {commit[:12]}, {platform.machine()}, "
            f"{subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores\n"
            f"# first make run (fresh clone, install included): {first_s:.0f} s\n"
            f"# second make run: {second_s:.0f} s\n" + board.rstrip("\n") + "\n")


def parse_record(text: str) -> tuple[int, int, str]:
    """(first seconds, second seconds, the board) from docs/make_run.txt."""
    lines = text.splitlines()
    first = int(lines[1].rsplit(": ", 1)[1].split()[0])
    second = int(lines[2].rsplit(": ", 1)[1].split()[0])
    return first, second, "\n".join(lines[3:]) + "\n"


def minutes(seconds: int) -> str:
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def readme_block(text: str) -> str:
    first, second, board = parse_record(text)
    return (f"{BEGIN}\nFrom a fresh clone on a 2-core machine the first `make run` took {minutes(first)} (installing "
            f"included), the second {minutes(second)}. The second printed:\n\n```\n{board}```\n{END}")


def write_readme(text: str) -> None:
    readme = README.read_text()
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    README.write_text(head + readme_block(text) + tail)


def quick() -> int:
    """One tick of `voxwatch run` at its smallest, in a scratch folder and store: its time and board."""
    with tempfile.TemporaryDirectory() as scratch:
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "voxwatch.cli", *QUICK_RUN, "--store",
                               f"sqlite:///{Path(scratch) / 'voxwatch.sqlite'}"], cwd=scratch, capture_output=True,
                              text=True, timeout=1800)
        took = time.monotonic() - started
    if proc.returncode != 0:
        sys.exit(f"voxwatch run exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    print(proc.stdout.rstrip("\n"))
    print(f"{'run':<24} {'seconds':>8}\n{'voxwatch ' + ' '.join(QUICK_RUN[:3]):<24} {took:>8.1f}")
    print(json.dumps({"quick": True, "command": ["voxwatch", *QUICK_RUN], "tick_s": round(took, 1),
                      "quick_tick_within_5_min_target_met": took <= TARGET_S}))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="also put the board and times in the README")
    parser.add_argument("--quick", action="store_true",
                        help="no clone, no install: one tick of voxwatch run at its smallest, nothing written (seconds)")
    args = parser.parse_args()
    if args.quick:
        if args.write:
            parser.error("--write records a full run: not with --quick")
        return quick()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    with tempfile.TemporaryDirectory() as scratch:
        clone = Path(scratch) / "voxwatch"
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        first_s, _ = _make_run(clone)
        second_s, board = _make_run(clone)
    text = record_text(first_s, second_s, board, commit)
    RECORD.write_text(text)
    if args.write:
        write_readme(text)
    print(f"{'run':<8} {'seconds':>8}\n{'first':<8} {first_s:>8.1f}\n{'second':<8} {second_s:>8.1f}")
    print(json.dumps({"first_make_run_s": round(first_s, 1), "second_make_run_s": round(second_s, 1),
                      "first_make_run_within_5_min_target_met": first_s <= TARGET_S}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
