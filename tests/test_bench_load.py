"""benchmarks/load.py: the burners beside a benchmark's loaded run start as asked and stop, exactly
they, whatever happens; and a benchmark run with --load prints both runs in its JSON line."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.load import BURN, MAX_LOAD, burners, load_count

REPO = Path(__file__).resolve().parents[1]


def alive(pid: int) -> bool:
    """Whether pid is a live process (a zombie, killed but not reaped, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_burners_start_n_children_and_stop_exactly_them():
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with burners(3) as pids:
            assert len(set(pids)) == 3 and all(alive(p) for p in pids)
            assert {int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1]) for p in pids} == {os.getpid()}
        assert not any(alive(p) for p in pids)
        assert alive(bystander.pid)
    finally:
        bystander.kill()
        bystander.wait()


def test_burners_stop_when_the_body_raises():
    with pytest.raises(KeyboardInterrupt):
        with burners(2) as pids:
            raise KeyboardInterrupt
    assert len(pids) == 2 and not any(alive(p) for p in pids)
    with burners(0) as none:
        assert none == []


def test_a_burner_ends_by_itself_after_its_lifetime():
    """The safety net: a burner that nobody stops spins no longer than the lifetime it was given."""
    p = subprocess.Popen([sys.executable, "-c", BURN, "0.3"], stdout=subprocess.DEVNULL)
    assert p.wait(timeout=30) == 0


@pytest.mark.parametrize("text", ["-1", str(MAX_LOAD + 1), "two", "1.5"])
def test_load_is_bounded(text: str):
    with pytest.raises(argparse.ArgumentTypeError, match=f"0 to {MAX_LOAD}"):
        load_count(text)
    assert load_count(str(MAX_LOAD)) == MAX_LOAD
    with pytest.raises(ValueError):
        with burners(MAX_LOAD + 1):
            pass


@pytest.mark.e2e
def test_a_benchmark_with_load_prints_idle_and_loaded_and_leaves_no_burner():
    """benchmarks/http_clock.py at its smallest, with one burner beside the loaded run (figures not held:
    that is the benchmark's own business)."""
    proc = subprocess.run([sys.executable, "-m", "benchmarks.http_clock", "--requests", "3", "--heads", "early",
                           "--load", "1"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["load"] == 1 and len(out["loadavg"]) == 3 and len(out["burner_pids"]) == 1
    for run in ("idle", "loaded"):
        early = out[run]["results"]["early"]  # a row the witness excluded as the worker's stall is counted apart
        assert early["ttfb"]["n"] + early["stalled"]["excluded"] == early["stalled"]["rows"] == 3
    assert set(out) >= {"http_ttfb_p99_target_met", "http_ttfa_p99_target_met", "loaded_http_ttfb_p99_target_met",
                        "loaded_http_ttfa_p99_target_met"}
    assert out["http_ttfb_p99_target_met"] == out["idle"]["http_ttfb_p99_target_met"]
    assert out["loaded_http_ttfb_p99_target_met"] == out["loaded"]["http_ttfb_p99_target_met"]
    assert not any(alive(p) for p in out["burner_pids"])
