"""Every benchmark's `--quick` mode, run as a user runs it, so that none can rot (issue 45): each must
exit 0 and print, last, one JSON line with at least one `*_target_met` boolean.

The discovery rule: every module `benchmarks/NAME.py` is a benchmark, found by listing the folder,
unless NAME is in LIBRARIES (modules the benchmarks import, or the server one of them starts) or in
OWN_TESTS (a test of its own runs its quick mode and asserts more). So a
new benchmark is tested the day it lands, and one without `--quick` fails here (argparse refuses the
flag). Quick modes run on small data and never read ../shared/data/speech (VOXWATCH_SPEECH_DIR points
at an empty folder): their figures are not the benchmark's, so the targets are not asserted, except
the few a quick mode is built to meet whatever the machine (MET_IN_QUICK).

The runs are subprocesses started CONCURRENT at a time, the slowest first (most wait on audio paced in
real time or on servers starting), so that the file costs about as long as its longest benchmark; each
test waits for its own. The runs are marked `bench`: `make test` runs them, `make test-quick` does not
(it checks only the list of libraries).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from support.processes import REPO, kept_env

LIBRARIES = {
    "__init__": "the package",
    "rig": "the calibration rig clock_truth and soak share",
    "load": "--load's burners, shared by the clock benchmarks",
    "speech_files": "reading ../shared/data/speech",
    "alert_power": "alert_roc's power lines",
    "method3_rules": "method 3's alert rules, which alert_roc prints beside the new ones",
    "independent_tts": "the independent HTTP server http_clock starts (it serves until stopped)",
}
"""Modules in benchmarks/ that are not benchmarks, and what they are."""
OWN_TESTS = {
    "deadline_wer": "test_deadline_wer.py",
    "hallucination": "test_bench_hallucination.py",
    "stt_eot": "test_bench_stt_eot.py",
    "tail_power": "test_bench_tail_power.py",
    "tts_stream": "test_tts_stalls.py",
}
"""Benchmarks whose quick mode a test of their own runs (and asserts more of): run once, there, not here too."""
BENCHMARKS = sorted(p.stem for p in (REPO / "benchmarks").glob("*.py") if p.stem not in {*LIBRARIES, *OWN_TESTS})
SLOWEST_FIRST = ("agent_truth", "conversation_truth", "peer_import", "clock_truth", "web_load", "soak",
                 "store_scale", "make_run", "answer_accuracy", "http_clock")
"""Started first: each waits on real time (paced audio, servers starting) far more than it computes."""
CONCURRENT = 3
TIMEOUT_S = 900
MET_IN_QUICK = {
    "entity_tagger": ("starter_precision_target_met", "starter_recall_target_met", "coval_precision_target_met",
                      "coval_recall_target_met", "coval_entity_error_rate_equals_hand_count_target_met"),
    "wer_reference": ("equal_to_jiwer_target_met",),
    "peer_import": ("import_target_met",),
}
"""Targets a quick mode meets by construction (bundled hand counts, a definition, an import's bytes)."""


def _quick(name: str, no_speech: Path) -> subprocess.CompletedProcess:
    env = {**kept_env(), "VOXWATCH_SPEECH_DIR": str(no_speech)}
    return subprocess.run([sys.executable, "-m", f"benchmarks.{name}", "--quick"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S)


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory) -> dict[str, Future]:
    """Each selected benchmark's quick run, started at once, CONCURRENT at a time, slowest first."""
    module = sys.modules[__name__]
    selected = {item.callspec.params["name"] for item in request.session.items
                if item.module is module and hasattr(item, "callspec") and "name" in item.callspec.params}
    order = sorted(selected, key=lambda n: (SLOWEST_FIRST.index(n) if n in SLOWEST_FIRST else len(SLOWEST_FIRST), n))
    no_speech = tmp_path_factory.mktemp("no-shared-speech")
    pool = ThreadPoolExecutor(CONCURRENT)
    try:
        yield {name: pool.submit(_quick, name, no_speech) for name in order}
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.bench
@pytest.mark.parametrize("name", BENCHMARKS)
def test_quick_mode_completes_and_prints_its_json_line_last(name: str, runs: dict[str, Future]):
    proc = runs[name].result()
    assert proc.returncode == 0, f"python -m benchmarks.{name} --quick exited {proc.returncode}\n{proc.stderr[-3000:]}"
    lines = proc.stdout.splitlines()
    assert len(lines) > 1, f"no table before the JSON line:\n{proc.stdout}"
    out = json.loads(lines[-1])
    met = {k: v for k, v in out.items() if k.endswith("_target_met")}
    assert met, f"no *_target_met key in {sorted(out)}"
    assert all(isinstance(v, bool) for v in met.values()), met
    for key in MET_IN_QUICK.get(name, ()):
        assert met.get(key) is True, (key, met)


def test_a_benchmark_left_to_its_own_test_is_run_there_in_its_quick_mode():
    for name, test in OWN_TESTS.items():
        assert (REPO / "benchmarks" / f"{name}.py").is_file(), f"benchmarks/{name}.py is gone: take it out of OWN_TESTS"
        assert f'quick_run("{name}"' in (REPO / "tests" / test).read_text(), (name, test)


def test_the_library_modules_are_there_and_only_the_server_has_a_main():
    """A library that is renamed or removed leaves this list (or it would hide a benchmark of that name);
    one that grows a main of its own is a benchmark and belongs in the test above."""
    for name in LIBRARIES:
        path = REPO / "benchmarks" / f"{name}.py"
        assert path.is_file(), f"benchmarks/{name}.py is gone: take it out of LIBRARIES"
        tree = ast.parse(path.read_text())
        mains = [n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)]
        assert bool(mains) == (name == "independent_tts"), name
    assert set(BENCHMARKS) >= set(MET_IN_QUICK) | set(SLOWEST_FIRST)
