"""benchmarks/hallucination.py --quick: two emulated batch STT models, one told to say known words on clips
without speech, one nothing; the stored counts, the series' share and words per minute must be the
injected truth counted by hand, and no clip without speech may keep a clock or a WER part."""

from __future__ import annotations

import pytest

from support.bench import quick_run


@pytest.mark.bench
def test_the_quick_benchmark_meets_its_targets():
    lines, out = quick_run("hallucination")
    assert out["rows"] == 20 and out["quick"] is True
    assert {k: v for k, v in out.items() if k.endswith("_target_met")} == {
        "hallucination_counts_exact_target_met": True, "hallucination_share_exact_target_met": True,
        "hallucination_no_clock_target_met": True}
    assert out["series"]["openai/whisper-1"]["share"] == 0.4 and out["series"]["groq/whisper-large-v3-turbo"]["share"] == 0.0
    assert any("silence-zero" in line and "'Thank you.'" in line for line in lines)  # the table
