"""The sentinel panel, the sequential rules and the confirmation bursts (docs/ALERTS.md)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import alert_roc as sim
from voxwatch.alerts.bursts import allowed
from voxwatch.alerts.evaluate import judge, stale
from voxwatch.alerts.lifecycle import step
from voxwatch.config import Alerts
from voxwatch.datasets.sampling import panel
from voxwatch.metrics.sequential import cusum

RULES = Alerts()


def test_the_panel_is_pinned_by_hash_and_stable_as_the_catalog_grows():
    ids = [f"u{i:03d}" for i in range(64)]
    first = panel("stt-starter", ids, 10)
    assert len(first) == 10 and first == panel("stt-starter", list(reversed(ids)), 10)  # order does not matter
    grown = panel("stt-starter", ids + [f"n{i:03d}" for i in range(64)], 10)
    assert len(set(first) - set(grown)) == len([u for u in grown if u.startswith("n")])  # only displaced, by smaller hashes
    assert len(set(first) & set(grown)) >= 3
    assert panel("tts-prompts", ids, 10) != first  # each family has its own


def test_one_capped_increment_cannot_reach_the_firing_level_but_a_sustained_shift_does():
    spike = cusum(np.array([0.0, 50.0, 0.0]), k=RULES.latency_allowance, cap=RULES.increment_cap)
    assert spike.max() == pytest.approx(RULES.increment_cap - RULES.latency_allowance)
    assert spike.max() < RULES.latency_fire_at
    steady = cusum(np.full(4, 3.0), k=RULES.latency_allowance, cap=RULES.increment_cap)
    assert steady[-1] >= RULES.latency_fire_at and np.all(np.diff(steady) > 0)


def test_a_pending_sequential_alert_fires_only_when_decisive():
    assert step("pending", 1, True, RULES, decisive=False).state == "pending"
    assert step("pending", 1, True, RULES, decisive=True).state == "firing"
    assert step("pending", 1, False, RULES, decisive=False).event == "cleared"


def test_bursts_are_bounded_per_alert_and_per_day():
    assert allowed(0, 0, RULES)
    assert not allowed(RULES.bursts_per_alert, 0, RULES)
    assert not allowed(0, RULES.bursts_per_day, RULES)


def _series(change: sim.Step, days: float = 3.0) -> tuple[sim.World, list[np.ndarray]]:
    rng = np.random.default_rng(5)
    world = sim.World(rng, change, sim._panel(20))
    ticks = np.arange(0.0, days * sim.D, sim.TICK)
    return world, sim.runs(world, ticks, np.arange(ticks.size), sim.PER_TICK)


def _findings(columns: list[np.ndarray], now: float, rules: Alerts = RULES) -> dict:
    recent_from = now - rules.recent_hours * sim.H
    keep = columns[0] < now
    return {c.kind: c.finding for c in judge(sim.SERIES, sim.LATENCY, [c[keep] for c in columns], recent_from, rules)}


def test_an_outage_is_pending_after_one_failing_tick_and_decisive_on_its_burst():
    at = 3 * sim.D - sim.TICK  # the last tick fails whole
    world, columns = _series(sim.Step(at=at, outage=True))
    now = float(columns[0][-1] + sim.FAILED_ROW_S)
    f = _findings(columns, now)["outage"]
    assert f.holds and f.decisive and f.recent == 1.0 and "panel attempts of the newest run failed" in f.why
    assert f.observed_at == at
    before = _findings(columns, at)["outage"]  # the tick before it: nothing wrong
    assert before.holds is False


def test_a_stable_series_is_quiet_and_a_latency_step_pends_then_fires_with_its_effect():
    world, columns = _series(sim.Step())
    quiet = _findings(columns, 3 * sim.D)
    assert quiet["latency"].holds is False and quiet["wer"].holds is False and quiet["outage"].holds is False
    world, columns = _series(sim.Step(at=3 * sim.D - 3 * sim.TICK, latency_ms=400.0))
    one = _findings(columns, 3 * sim.D - 2 * sim.TICK + 1)["latency"]  # one slow tick in: pending, not decisive
    assert one.holds and not one.decisive
    f = _findings(columns, 3 * sim.D)["latency"]  # three: past the firing level
    assert f.holds and f.decisive and "ms (+" in f.why and "95 % interval" in f.why
    assert f.recent > f.baseline * 1.3


def test_an_evaluation_with_no_new_run_is_stale():
    world, columns = _series(sim.Step())
    f = _findings(columns, 3 * sim.D)["latency"]
    assert stale(f, last_evaluated_at=f.observed_at + 60)
    assert not stale(f, last_evaluated_at=f.observed_at - 60)
