"""benchmarks/tail_power.py at its smallest (--quick): it runs, prints its table and, last, its JSON line with
the two targets; on its few seeded pairs the p95 comparison tells the slow tail apart far more often than it
tells identical models apart. The shares' precision is the full run's business."""

from __future__ import annotations

import pytest

from support.bench import quick_run


@pytest.mark.bench
def test_the_tail_benchmark_runs_and_tells_a_slow_tail_from_noise():
    lines, out = quick_run("tail_power")
    assert out["quick"] and {"identical_models_target_met", "slow_tail_target_met"} <= set(out)
    assert any(line.startswith("slow tail") for line in lines)
    tail, null = out["results"]["slow_tail_20ticks"], out["identical_p95_apart"]
    assert tail["pairs"] > 0 and tail["p95_na"] == 0
    assert tail["p95_apart"] >= null + 0.5, out
