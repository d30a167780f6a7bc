"""benchmarks/stt_eot.py at its smallest (`--quick`): the Flux and Speechmatics emulators script the end
of turn and inject end-of-turn messages inside and before each clip's speech; every row's eot_ms is
compared with the emulator's own send and its false cut-offs with those injected inside the speech.
The precision is the benchmark's business on an idle machine; here only what a wrong anchor, key or
definition would break: a row without its end of turn, or a cut-off miscounted."""

from __future__ import annotations

import pytest

from support.bench import quick_run

ANCHOR_MS = 50.0  # a stream that read the wrong anchor is off by a whole clip's speech, 0.3 s and more


@pytest.mark.e2e
def test_the_quick_run_compares_every_row_with_what_was_sent():
    _, out = quick_run("stt_eot")
    assert out["every_row_has_its_end_of_turn"] and out["cutoffs_injected_inside_speech"] > 0
    assert out["false_cutoff_counts_exact_target_met"] is True
    for name, s in out["results"]["1"].items():
        assert s["rows"] == s["n"] > 0 and s["not_ok"] == 0, (name, s)
        assert s["cutoff_mismatches"] == 0 and s["counted"] > 0, (name, s)
        assert s["max_ms"] < ANCHOR_MS, (name, s)
    assert "eot_latency_error_target_met" in out
