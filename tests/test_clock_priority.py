"""The measuring thread's priority while on the clock (foundation.priority): raised as the first clock
of its loop starts, given back as the last one stops; a thread the loop starts meanwhile for work that
times nothing runs at the process's priority; off at 0; refused without CAP_SYS_NICE, said once in
the run's note and never a failure of the measurement."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from voxwatch.config import load
from voxwatch.foundation import priority
from voxwatch.foundation.clock import on_the_clock

REPO = Path(__file__).resolve().parents[1]


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(priority, "refused", None)
    monkeypatch.setattr(priority, "_base", None)
    monkeypatch.setattr(priority, "CLOCK_NICE", -10)


def _seen() -> dict[str, int]:
    async def run() -> dict[str, int]:
        seen = {"before": _nice()}
        with on_the_clock:
            seen["first clock"] = _nice()
            with on_the_clock:
                seen["second clock"] = _nice()
            seen["one still on"] = _nice()
            seen["scoring thread"] = await asyncio.to_thread(_nice)
        seen["after"] = _nice()
        return seen

    return asyncio.run(run())


def test_the_loop_thread_is_raised_while_on_the_clock_and_its_other_threads_are_not(fresh):
    seen = _seen()
    if priority.refused is not None:
        pytest.skip(f"this process may not raise a priority: {priority.refused}")
    base = seen["before"]
    assert seen["first clock"] == seen["second clock"] == seen["one still on"] == max(-20, base - 10)
    assert seen["scoring thread"] == base and seen["after"] == base
    assert priority.note() is None


def test_off_at_zero(fresh, monkeypatch):
    monkeypatch.setattr(priority, "CLOCK_NICE", 0)
    seen = _seen()
    assert len(set(seen.values())) == 1


def test_the_config_sets_it_and_refuses_a_lowered_one():
    assert load(environ={}).clock_nice == -10
    assert load(environ={"VOXWATCH_RUN_CLOCK_NICE": "0"}).clock_nice == 0
    with pytest.raises(Exception, match="clock_nice = 5: expected a nice value"):
        load(environ={"VOXWATCH_RUN_CLOCK_NICE": "5"})


PROBE = """
import asyncio, os, threading
from voxwatch.foundation import priority
from voxwatch.foundation.clock import on_the_clock
async def run():
    with on_the_clock:
        first = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    with on_the_clock:
        pass
    return first
print(asyncio.run(run()), os.getpriority(os.PRIO_PROCESS, 0))
print(priority.note())
"""


def test_without_the_capability_it_is_refused_once_and_said(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("dropping to an unprivileged user needs root")
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                           sys.executable, "-c", PROBE], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO), "HOME": str(tmp_path)})
    if proc.returncode != 0 and ("Permission denied" in proc.stderr or "ModuleNotFoundError" in proc.stderr):
        pytest.skip(f"the unprivileged user cannot read this checkout: {proc.stderr.strip().splitlines()[-1]}")
    assert proc.returncode == 0, proc.stderr
    numbers, note = proc.stdout.strip().splitlines()
    on_clock, after = map(int, numbers.split())
    assert on_clock == after  # not raised, and the measurement went on
    assert note.startswith("the measuring thread's priority was not raised") and "CAP_SYS_NICE" in note
