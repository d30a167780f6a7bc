"""False alarms and detection of the alert rules: `python -m benchmarks.alert_roc [--quick]`.

Simulated series with the structure a real one has (docs/ALERTS.md "False alarms"): a tick every
30 minutes measures 10 of a catalog of 64 utterances at random; each utterance has its own latency
and its own difficulty (WER) and few words (2-16, like the starter datasets); each tick shares a
latency effect with a diurnal drift; row latencies are heavy-tailed (Student's t, 3 df, in log);
about one tick a day is slow as a whole (x1.5-3); errors and timeouts are rare, with an occasional
tick where half the attempts fail.

Two designs, each through the production code (voxwatch.alerts.evaluate.judge, the function an
evaluation calls on store.series_rows' columns, moved by voxwatch.alerts.lifecycle.step as
evaluate._apply moves it):
- old: the random draw alone, the window rules, an evaluation every 15 minutes;
- new: every tick also measures the sentinel panel ([run] panel_size utterances pinned by
  datasets.sampling.panel), the sequential rules judge it, an evaluation follows each tick and
  each confirmation burst; a burst (the panel alone, asked for by a pending sequential alert,
  bounded by alerts.bursts.allowed) is simulated as a run of its own with a FRESH tick effect
  (its own shock, diurnal phase and chance of being slow), a minute after the evaluation.
Rows take 18 s each; a failing attempt 2 s (refused or answered 5xx at once).

Targets (new design): a +200 ms step (on a 600 ms median, +33 %) fired within 60 minutes of its
start in >= 95 % of trials; +3 WER points within 3 hours in >= 90 %; a total outage (every attempt
fails) within 10 minutes; <= 0.1 false pages per series per 30 days (with the exact Poisson 95 %
upper bound); bursts <= 10 % of the regular clips at steady state. Steps and outages start at a
tick. Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from voxwatch.alerts.bursts import allowed
from voxwatch.alerts.evaluate import judge, stale
from voxwatch.alerts.lifecycle import step
from voxwatch.alerts.store import Series
from voxwatch.config import Alerts, load
from voxwatch.datasets.sampling import panel
from voxwatch.foundation.series_key import RowsKey
from voxwatch.metrics.detection import poisson_upper

# the packaged defaults; VOXWATCH_ALERTS_* and VOXWATCH_RUN_PANEL_SIZE override them, to replay the
# benchmark at another setting (e.g. VOXWATCH_ALERTS_WER_FIRE_AT=7)
_CONFIG = load(environ={k: v for k, v in os.environ.items() if k.startswith(("VOXWATCH_ALERTS_", "VOXWATCH_RUN_"))})
RULES, PANEL_SIZE = _CONFIG.alerts, _CONFIG.panel_size
MIN, H, D = 60.0, 3600.0, 86400.0
TICK = 30 * MIN
PER_TICK, CATALOG = 10, 64
ROW_S, FAILED_ROW_S, BURST_DELAY_S = 18.0, 2.0, 60.0
MEDIAN_MS = 600.0
SERIES = Series(RowsKey("sim/model@1", "sim-dataset", "eu", "4"), "stt", "stt-batch", 0)
LATENCY = ["latency_ms"]
IDS = [f"utt{u:03d}" for u in range(CATALOG)]


@dataclass(frozen=True)
class Step:
    """A sustained change from `at` on: ms added to every latency, points added to every utterance's
    WER, or (outage) every attempt failing."""
    at: float = float("inf")
    latency_ms: float = 0.0
    wer_points: float = 0.0
    outage: bool = False


@dataclass
class World:
    """One simulated series' fixed traits: its utterances' words, difficulty and latency, its panel."""
    rng: np.random.Generator
    change: Step
    panel: np.ndarray
    words_u: np.ndarray = field(init=False)
    wer_u: np.ndarray = field(init=False)
    latency_u: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.words_u = self.rng.integers(2, 17, CATALOG)
        self.wer_u = self.rng.beta(1.2, 14, CATALOG)
        self.latency_u = self.rng.normal(0, 0.15, CATALOG)


def _panel(k: int) -> np.ndarray:
    return np.array(sorted(IDS.index(u) for u in panel("sim", IDS, k)), dtype=np.int64)


def simulate(rng: np.random.Generator, start: float, end: float, change: Step = Step(), panel_size: int = 0,
             world: World | None = None) -> list[np.ndarray]:
    """One series' ticks from start to end, as columns in store.series_rows' order (started_at,
    status, instrument, S + D + I, N, tick, utterance, panel, latency_ms): each tick measures its
    panel (panel_size utterances, first) and 10 utterances drawn at random."""
    world = world or World(rng, change, _panel(panel_size))
    ticks = np.arange(np.ceil(start / TICK) * TICK, end, TICK)
    return runs(world, ticks, np.arange(ticks.size), PER_TICK)


def runs(w: World, starts: np.ndarray, labels: np.ndarray, draw: int) -> list[np.ndarray]:
    """Runs starting at `starts` (labels: their tick ids), each measuring the panel and `draw`
    random utterances, with a fresh tick effect each."""
    rng, change = w.rng, w.change
    n, k = starts.size, w.panel.size
    order = rng.random((n, CATALOG))
    order[:, w.panel] = 2.0  # the draw is of the utterances outside the panel (harness.tick._draw_tasks)
    drawn = np.argsort(order, axis=1)[:, :draw]
    utt = np.concatenate([np.tile(w.panel, (n, 1)), drawn], axis=1).ravel()
    per = k + draw
    in_panel = np.tile(np.r_[np.ones(k, dtype=bool), np.zeros(draw, dtype=bool)], n)
    tick = np.repeat(labels, per)
    begin = np.repeat(starts, per)
    outage = change.outage & (begin >= change.at)
    at = begin + np.tile(np.arange(per), n) * np.where(outage, FAILED_ROW_S, ROW_S)
    diurnal = 0.05 * np.sin(2 * np.pi * starts / D)
    slow = np.where(rng.random(n) < 1 / 48, np.log(rng.uniform(1.5, 3.0, n)), 0.0)
    tick_effect = rng.normal(0, 0.06, n) + diurnal + slow
    after = begin >= change.at
    idx = np.repeat(np.arange(n), per)
    latency = MEDIAN_MS * np.exp(w.latency_u[utt] + tick_effect[idx] + 0.15 * rng.standard_t(3, at.size))
    latency += np.where(after, change.latency_ms, 0.0)
    bad_tick = rng.random(n) < 1 / 200
    u = rng.random(at.size)
    fail = np.where(bad_tick[idx], 0.5, 0.01)
    status = np.where(u < 0.005, "timeout", np.where(u < 0.005 + fail, "server_error", "ok"))
    status[outage] = "server_error"
    words = w.words_u[utt]
    errors = rng.binomial(words, np.minimum(w.wer_u[utt] + np.where(after, change.wer_points / 100, 0.0), 1.0))
    latency[status != "ok"] = np.nan
    return [at, status, np.full(at.size, None, dtype=object), errors, words, tick, utt, in_panel, latency]


@dataclass
class Open:
    """An open alert of one key, as the alerts table holds it."""
    state: str
    streak: int
    last_evaluated_at: float
    bursts: int = 0


@dataclass
class Replay:
    """What one series' replay saw: each firing (time, key), each burst's time, the regular clips."""
    fired: list[tuple[float, str]] = field(default_factory=list)
    bursts: list[float] = field(default_factory=list)
    regular_clips: int = 0
    burst_clips: int = 0
    pending: dict[str, int] = field(default_factory=dict)  # evaluations that asked for a burst, by kind
    ticks: int = 0


def evaluate_once(columns: list[np.ndarray], now: float, rules: Alerts, open_: dict[str, Open],
                  out: Replay) -> bool:
    """One evaluation at `now` of the rows before it (columns sorted by time: the two windows are one
    slice), moving open_ as evaluate._apply moves the alerts table; True when a pending sequential
    alert wants a burst."""
    at = columns[0]
    recent_from = now - rules.recent_hours * H
    lo, mid, hi = np.searchsorted(at, [recent_from - rules.baseline_days * D, recent_from, now])
    if hi - mid < rules.min_recent:
        return False
    window = [c[lo:hi] for c in columns]
    wants = False
    for c in judge(SERIES, LATENCY, window, recent_from, rules):
        f, alert = c.finding, open_.get(c.key)
        if f.holds is None or (alert is not None and stale(f, alert.last_evaluated_at)):
            if alert is not None:
                alert.last_evaluated_at = now
            continue
        move = step(None if alert is None else alert.state, 0 if alert is None else alert.streak, f.holds, rules,
                    f.decisive)
        if move.event == "firing":
            out.fired.append((now, c.key))
        if move.state in (None, "resolved"):
            open_.pop(c.key, None)
            continue
        if alert is None:
            alert = open_[c.key] = Open(move.state, move.streak, now)
        alert.state, alert.streak, alert.last_evaluated_at = move.state, move.streak, now
        if move.state == "pending" and f.decisive is not None:
            wants = True
            out.pending[c.kind] = out.pending.get(c.kind, 0) + 1
    return wants


def _end(columns: list[np.ndarray]) -> float:
    """When a run's last attempt ended (its evaluation follows)."""
    at, status = columns[0], columns[1]
    return float(at[-1] + (ROW_S if status[-1] == "ok" else FAILED_ROW_S))


def replay_new(world: World, base: list[np.ndarray], ticks: np.ndarray, rules: Alerts) -> Replay:
    """The new design from the first of `ticks` on: after each tick (rows in `base` already) an
    evaluation, and while a pending sequential alert wants one and alerts.bursts.allowed, a burst (the
    panel alone, a fresh tick effect) a minute later, then another evaluation."""
    out, open_ = Replay(), {}
    columns = list(base)
    day_bursts: dict[int, int] = {}
    label = first_burst = int(base[5].max()) + 1 if base[5].size else 0  # burst run ids after the ticks' (small integers)
    for t in ticks:
        a, b = np.searchsorted(columns[0], [t, t + TICK])
        mine = columns[5][a:b] < first_burst  # the tick's rows (a long chain of bursts may spill past t)
        if not mine.any():
            continue
        now = _end([c[a:b][mine] for c in columns[:2]])
        out.regular_clips += int(mine.sum())
        out.ticks += 1
        wants = evaluate_once(columns, now, rules, open_, out)
        while wants:
            pend = [x for x in open_.values() if x.state == "pending"]
            day = int(now // D)
            if not any(allowed(x.bursts, day_bursts.get(day, 0), rules) for x in pend):
                break
            for x in pend:
                x.bursts += 1
            day_bursts[day] = day_bursts.get(day, 0) + 1
            burst = runs(world, np.array([now + BURST_DELAY_S]), np.array([label]), 0)
            label += 1
            out.bursts.append(now)
            out.burst_clips += burst[0].size
            merged = [np.concatenate([c, x]) for c, x in zip(columns, burst)]
            order = np.argsort(merged[0], kind="stable")  # kept in time order (a burst may overlap a tick)
            columns = [c[order] for c in merged]
            now = _end(burst)
            wants = evaluate_once(columns, now, rules, open_, out)
    return out


def replay_old(columns: list[np.ndarray], evaluations: np.ndarray, rules: Alerts) -> Replay:
    """The old design: the random draw alone, an evaluation every evaluate_every_minutes."""
    out, open_ = Replay(), {}
    span = (columns[0] >= evaluations[0]) & (columns[0] < evaluations[-1])
    out.regular_clips, out.ticks = int(span.sum()), int(np.unique(columns[5][span]).size)
    for now in evaluations:
        evaluate_once(columns, float(now), rules, open_, out)
    return out


START = 1_900_000_000.0 // D * D
LEAD = RULES.baseline_days * D + RULES.recent_hours * H  # rows before the first evaluation


def series(seed: int, design: str, change: Step, start: float, days: float) -> tuple[World, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    world = World(rng, change, _panel(PANEL_SIZE if design == "new" else 0))
    ticks = np.arange(np.ceil(start / TICK) * TICK, start + LEAD + days * D, TICK)
    return world, runs(world, ticks, np.arange(ticks.size), PER_TICK)


def run_design(seed: int, design: str, change: Step, first: float, until: float, rules: Alerts) -> Replay:
    """One series (its baseline before `first`) replayed from `first` to `until` in one design."""
    world, columns = series(seed, design, change, first - LEAD, (until - first) / D)
    if design == "new":
        ticks = np.arange(np.ceil(first / TICK) * TICK, until, TICK)
        columns_before = [c for c in columns]
        return replay_new(world, columns_before, ticks, rules)
    every = rules.evaluate_every_minutes * MIN
    return replay_old(columns, np.arange(np.ceil(first / every) * every, until, every), rules)


def stable(seed: int, design: str, days: float, rules: Alerts) -> Replay:
    first = START + LEAD
    return run_design(seed, design, Step(), first, first + days * D, rules)


KINDS = {"latency": Step(latency_ms=200.0), "wer": Step(wer_points=3.0), "outage": Step(outage=True)}
WITHIN = {"latency": 60 * MIN, "wer": 3 * H, "outage": 10 * MIN}


def trial(seed: int, design: str, kind: str, rules: Alerts) -> float | None:
    """A step of `kind` at a tick: minutes from its start to the first firing of its alert (None:
    not within 6 hours; negative: a page before the step). Evaluations from 3 h before it."""
    rng = np.random.default_rng(seed + 77)
    at = START + LEAD + 2 * D + int(rng.integers(48)) * TICK
    change = KINDS[kind]
    change = Step(at=at, latency_ms=change.latency_ms, wer_points=change.wer_points, outage=change.outage)
    r = run_design(seed, design, change, at - 3 * H, at + 6 * H, rules)
    alert_kind = {"outage": ("outage", "error_rate")}.get(kind, (kind,))
    times = [t for t, key in r.fired if key.split("|")[0] in alert_kind]
    return None if not times else (times[0] - at) / MIN


TARGET_PER_30D = 0.1
SIZES = {False: (32, 1, 30.0, 40, 20), True: (1, 1, 1.0, 1, 1)}  # new, old series; days; step trials; outages


def _detected(values: list[float | None], within_min: float) -> float:
    return sum(v is not None and 0 <= v <= within_min for v in values) / len(values)


def _median(values: list[float | None]) -> float | None:
    hit = [v for v in values if v is not None and v >= 0]
    return round(float(np.median(hit)), 1) if hit else None


def _summary(replays: list[Replay], days: float, trials: dict[str, list[float | None]]) -> dict:
    months = len(replays) * days / 30
    kinds = [k.split("|")[0] for r in replays for _, k in r.fired]
    regular = sum(r.regular_clips for r in replays)
    extra = sum(r.burst_clips for r in replays)
    out = {"series_months": months, "false_alarms": len(kinds),
           "false_alarms_per_series_30d": round(len(kinds) / months, 3),
           "false_alarms_upper_95": round(poisson_upper(len(kinds), months), 3),
           "false_alarms_by_kind": {k: kinds.count(k) for k in sorted(set(kinds))},
           "bursts_per_series_day": round(sum(len(r.bursts) for r in replays) / (len(replays) * days), 2),
           "burst_clips_share": round(extra / regular, 4) if regular else 0.0,
           "clips_per_tick": round(regular / max(1, sum(r.ticks for r in replays)), 2),
           "burst_clips_per_tick": round(extra / max(1, sum(r.ticks for r in replays)), 2),
           "bursts_asked_by_kind": {k: sum(r.pending.get(k, 0) for r in replays)
                                    for k in sorted({k for r in replays for k in r.pending})}}
    for kind, values in trials.items():
        out[f"{kind}_detected_within_target"] = _detected(values, WITHIN[kind] / MIN)
        out[f"{kind}_median_minutes"] = _median(values)
        out[f"{kind}_fired_before_step"] = sum(v is not None and v < 0 for v in values) / len(values)
    return out


def _rules_line(rules: Alerts) -> str:
    return (f"panel {PANEL_SIZE}, latency allowance/pending/fire {rules.latency_allowance:g}/{rules.latency_pending_at:g}/"
            f"{rules.latency_fire_at:g}, WER {rules.wer_allowance:g}/{rules.wer_pending_at:g}/{rules.wer_fire_at:g}, "
            f"cap {rules.increment_cap:g}, hour window {rules.hour_window}, outage from {rules.outage_share:g}, bursts "
            f"<= {rules.bursts_per_alert} an alert and {rules.bursts_per_day} a series-day")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="seconds, small data: 1 series x 1 day per design, "
                        "1 trial per step and 1 outage (the same code path; too few to judge a target)")
    args = parser.parse_args()
    n_new, n_old, days, n_trials, n_outages = SIZES[args.quick]
    rules = RULES
    t0 = time.monotonic()
    result: dict = {"panel_size": PANEL_SIZE, "draw_per_tick": PER_TICK}
    with ProcessPoolExecutor(2) as pool:
        for design, n_series in (("new", n_new), ("old", n_old)):
            replays = list(pool.map(stable, range(n_series), [design] * n_series, [days] * n_series,
                                    [rules] * n_series))
            trials = {}
            for j, kind in enumerate(KINDS):
                n = n_outages if kind == "outage" else n_trials
                seeds = range(1000 * (j + 1), 1000 * (j + 1) + n)
                trials[kind] = list(pool.map(trial, seeds, [design] * n, [kind] * n, [rules] * n))
            result[design] = _summary(replays, days, trials)
    regular_per_tick = PANEL_SIZE + PER_TICK
    print(f"new: every tick measures a panel of {PANEL_SIZE} + {PER_TICK} drawn utterances ({regular_per_tick} "
          f"clips, {PANEL_SIZE / PER_TICK:.0%} more than the draw alone), sequential rules, an evaluation after each "
          f"tick and burst; old: {PER_TICK} drawn, window rules, an evaluation every {rules.evaluate_every_minutes} min")
    print(f"stable series: {n_new} x {days:g} d (old: {n_old}); {n_trials} trials per step, {n_outages} outages\n")
    head = (f"{'design':<8}{'series-mo':>10}{'false /30 d':>12}{'(95 % up)':>10}{'by kind':>22}{'lat <=60 min':>13}"
            f"{'lat median':>11}{'wer <=3 h':>10}{'wer median':>11}{'outage <=10 min':>16}{'outage median':>14}"
            f"{'clips/tick':>11}{'bursts/day':>11}{'burst clips':>12}")
    print(head)
    for name in ("old", "new"):
        r = result[name]
        print(f"{name:<8}{r['series_months']:>10g}{r['false_alarms_per_series_30d']:>12.3f}"
              f"{r['false_alarms_upper_95']:>10.3f}{json.dumps(r['false_alarms_by_kind']):>22}"
              f"{r['latency_detected_within_target']:>13.0%}{str(r['latency_median_minutes']):>11}"
              f"{r['wer_detected_within_target']:>10.0%}{str(r['wer_median_minutes']):>11}"
              f"{r['outage_detected_within_target']:>16.0%}{str(r['outage_median_minutes']):>14}"
              f"{r['clips_per_tick'] + r['burst_clips_per_tick']:>11.1f}"
              f"{r['bursts_per_series_day']:>11g}{r['burst_clips_share']:>12.1%}")
    print(f"\nnew rules: {_rules_line(rules)}\n")
    new = result["new"]
    result["latency_detection_target_met"] = new["latency_detected_within_target"] >= 0.95
    result["wer_detection_target_met"] = new["wer_detected_within_target"] >= 0.90
    result["outage_detection_target_met"] = new["outage_detected_within_target"] >= 1.0
    result["false_alarms_target_met"] = new["false_alarms_per_series_30d"] <= TARGET_PER_30D
    result["burst_cost_target_met"] = new["burst_clips_share"] <= 0.10
    result["seconds"] = round(time.monotonic() - t0, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
