"""benchmarks/hallucination.py --quick: two emulated batch STT models, one told to say known words on clips
without speech, one nothing; the stored counts, the series' share and words per minute must be the
injected truth counted by hand, and no clip without speech may keep a clock or a WER part."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.bench
def test_the_quick_benchmark_meets_its_targets():
    proc = subprocess.run([sys.executable, "-m", "benchmarks.hallucination", "--quick"], cwd=REPO, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    out = json.loads(lines[-1])
    assert out["rows"] == 20 and out["quick"] is True
    assert {k: v for k, v in out.items() if k.endswith("_target_met")} == {
        "hallucination_counts_exact_target_met": True, "hallucination_share_exact_target_met": True,
        "hallucination_no_clock_target_met": True}
    assert out["series"]["openai/whisper-1"]["share"] == 0.4 and out["series"]["groq/whisper-large-v3-turbo"]["share"] == 0.0
    assert any("silence-zero" in line and "'Thank you.'" in line for line in lines)  # the table
