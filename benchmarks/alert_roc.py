"""False alarms and detection of the alert rules: `python -m benchmarks.alert_roc [--quick]`.

Simulated series with the structure a real one has (docs/ALERTS.md "False alarms"): a tick every
30 minutes measures 10 of a catalog of 64 utterances; each utterance has its own latency and its
own difficulty (WER) and few words (2-16, like the starter datasets); each tick shares a latency
effect with a diurnal drift; row latencies are heavy-tailed (Student's t, 3 df, in log); about one
tick a day is slow as a whole (x1.5-3); errors and timeouts are rare, with an occasional tick
where half the attempts fail. The rules are the production code (voxwatch.alerts.evaluate.judge,
the same function an evaluation calls on store.series_rows' columns) moved by the production
lifecycle step (voxwatch.alerts.lifecycle.step) at the default config, every 15 minutes. Method
3's rules (benchmarks/method3_rules.py) run on the same series, through the same lifecycle.

Reported:
- false alarms: firings per series per 30 days on stable series (any kind), target <= 0.1, with
  the exact Poisson 95 % upper bound: 32 series-months for the new rules (so that none seen
  bounds the rate below 0.1: 3.0 / 32 = 0.094), 4 for method 3's (it fires often enough);
- detection of a sustained step starting at a tick: +200 ms on a 600 ms median (+33 %, over both
  latency floors), and +3 WER points on every utterance. Evaluations are counted from the first
  evaluation whose recent window holds a row after the step (that evaluation is 1). Targets:
  latency fired by evaluation 2 in >= 95 % of trials; WER by evaluation 4 in >= 90 %;
- power: how well an ideal test could meet each detection target, from the stable series' noise
  (benchmarks/alert_power.py).
Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from voxwatch.alerts.evaluate import judge
from voxwatch.alerts.lifecycle import step
from voxwatch.alerts.store import Series
from voxwatch.config import Alerts, load
from voxwatch.foundation.series_key import RowsKey
from voxwatch.metrics.detection import poisson_upper

from . import method3_rules as old
from .alert_power import Noise, lines, noise

# the packaged defaults; VOXWATCH_ALERTS_* override them, to replay the benchmark at another setting
# (e.g. VOXWATCH_ALERTS_WER_P_VALUE=0.01)
RULES = load(environ={k: v for k, v in os.environ.items() if k.startswith("VOXWATCH_ALERTS_")}).alerts
MIN, H, D = 60.0, 3600.0, 86400.0
TICK = 30 * MIN
PER_TICK, CATALOG = 10, 64
MEDIAN_MS = 600.0
SERIES = Series(RowsKey("sim/model@1", "sim-dataset", "eu", "4"), "stt", "stt-batch", 0)
LATENCY = ["latency_ms"]


@dataclass(frozen=True)
class Step:
    """A sustained change from `at` on: ms added to every latency, points added to every utterance's WER."""
    at: float = float("inf")
    latency_ms: float = 0.0
    wer_points: float = 0.0


def simulate(rng: np.random.Generator, start: float, end: float, change: Step = Step()) -> list[np.ndarray]:
    """One series' rows from start to end, as columns in store.series_rows' order (started_at,
    status, instrument, S + D + I, N, tick, utterance, latency_ms)."""
    words_u = rng.integers(2, 17, CATALOG)
    wer_u = rng.beta(1.2, 14, CATALOG)
    latency_u = rng.normal(0, 0.15, CATALOG)
    ticks = np.arange(np.ceil(start / TICK) * TICK, end, TICK)
    n = ticks.size
    utt = np.argsort(rng.random((n, CATALOG)), axis=1)[:, :PER_TICK].ravel()
    tick = np.repeat(np.arange(n), PER_TICK)
    at = np.repeat(ticks, PER_TICK) + np.tile(np.arange(PER_TICK) * 18.0, n)
    diurnal = 0.05 * np.sin(2 * np.pi * ticks / D)
    slow = np.where(rng.random(n) < 1 / 48, np.log(rng.uniform(1.5, 3.0, n)), 0.0)
    tick_effect = rng.normal(0, 0.06, n) + diurnal + slow
    after = at >= change.at
    latency = MEDIAN_MS * np.exp(latency_u[utt] + tick_effect[tick] + 0.15 * rng.standard_t(3, at.size))
    latency += np.where(after, change.latency_ms, 0.0)
    bad_tick = rng.random(n) < 1 / 200
    u = rng.random(at.size)
    fail = np.where(bad_tick[tick], 0.5, 0.01)
    status = np.where(u < 0.005, "timeout", np.where(u < 0.005 + fail, "server_error", "ok")).astype(object)
    words = words_u[utt]
    errors = rng.binomial(words, np.minimum(wer_u[utt] + np.where(after, change.wer_points / 100, 0.0), 1.0))
    ok = status == "ok"
    latency[~ok] = np.nan
    return [at, status, np.full(at.size, None, dtype=object), errors, words, tick, utt, latency]


def new_checks(columns: list[np.ndarray], recent_from: float, rules: Alerts) -> Iterator[tuple[str, bool | None]]:
    for c in judge(SERIES, LATENCY, columns, recent_from, rules):
        yield c.key, c.finding.holds


def old_checks(columns: list[np.ndarray], recent_from: float, rules: Alerts) -> Iterator[tuple[str, bool | None]]:
    """Method 3's evaluation of one series: rows as independent (benchmarks/method3_rules.py)."""
    at, status, _, errors, words, _, _, latency = columns
    recent, ok = at >= recent_from, status == "ok"
    yield "latency", old.latency_shift(latency[ok & recent], latency[ok & ~recent], rules).holds
    yield "wer", old.wer_shift(errors[ok & recent], words[ok & recent], errors[ok & ~recent], words[ok & ~recent],
                               rules).holds
    for kind, statuses in old.RATES.items():
        hit = np.isin(status, list(statuses))
        yield kind, old.rate_spike(int(hit[recent].sum()), int(recent.sum()), int(hit[~recent].sum()),
                                   int((~recent).sum()), rules, kind).holds


Checks = Callable[[list[np.ndarray], float, Alerts], Iterator[tuple[str, bool | None]]]


def firings(columns: list[np.ndarray], evaluations: np.ndarray, checks: Checks, rules: Alerts) -> list[tuple[int, str]]:
    """Every evaluation in turn through the lifecycle: (evaluation index, key) of each firing."""
    at = columns[0]
    open_: dict[str, tuple[str, int]] = {}
    out = []
    for i, now in enumerate(evaluations):
        recent_from = now - rules.recent_hours * H
        lo, mid, hi = np.searchsorted(at, [recent_from - rules.baseline_days * D, recent_from, now])
        if hi - mid < rules.min_recent:
            continue
        window = [c[lo:hi] for c in columns]
        for key, holds in checks(window, recent_from, rules):
            state, streak = open_.get(key, (None, 0))
            move = step(state, streak, holds, rules)
            if move.event == "firing":
                out.append((i, key))
            if move.state in (None, "resolved"):
                open_.pop(key, None)
            else:
                open_[key] = (move.state, move.streak)
    return out


@dataclass(frozen=True)
class Stable:
    """One stable series: the keys each rule set fired (old: None when not run) and its noise."""
    new: list[str]
    old: list[str] | None
    noise: Noise


def stable_series(seed: int, days: float, rules: Alerts, with_old: bool) -> Stable:
    """One stable series: `days` of evaluations after a full baseline, by the new rules and, when
    asked, method 3's (slower, and settled by fewer series)."""
    rng = np.random.default_rng(seed)
    start = 1_900_000_000.0 // D * D
    columns = simulate(rng, start, start + rules.baseline_days * D + rules.recent_hours * H + days * D)
    first = start + rules.baseline_days * D + rules.recent_hours * H
    evaluations = np.arange(first, first + days * D, rules.evaluate_every_minutes * MIN)
    fired = {name: [k for _, k in firings(columns, evaluations, checks, rules)]
             for name, checks in (("old", old_checks), ("new", new_checks)) if with_old or name == "new"}
    return Stable(fired["new"], fired.get("old"), noise(columns, first, LATENCY_STEP.latency_ms))


def step_trial(seed: int, change: Step, kind: str, rules: Alerts) -> dict[str, int | None]:
    """One step at a tick time: the evaluation (1 = the first whose window holds a post-step row) at
    which the `kind` alert fired, per rule set (None: not within 12 hours; 0: fired before the step)."""
    rng = np.random.default_rng(seed)
    s = 1_900_000_000.0 // D * D + rules.baseline_days * D + rules.recent_hours * H + 2 * D + int(rng.integers(48)) * TICK
    columns = simulate(rng, s - rules.baseline_days * D - rules.recent_hours * H - 3 * H, s + 13 * H, Step(at=s, **{
        "latency": {"latency_ms": change.latency_ms}, "wer": {"wer_points": change.wer_points}}[kind]))
    every = rules.evaluate_every_minutes * MIN
    first = (np.floor(s / every) + 1) * every  # the first evaluation after the step's first row
    evaluations = np.arange(first - 3 * H, first + 12 * H, every)
    out = {}
    for name, checks in (("old", old_checks), ("new", new_checks)):
        fired = [i for i, key in firings(columns, evaluations, checks, rules) if key.split("|")[0] == kind]
        k = fired[0] - int(round(3 * H / every)) + 1 if fired else None
        out[name] = None if k is None else max(k, 0)
    return out


LATENCY_STEP, WER_STEP = Step(latency_ms=200.0), Step(wer_points=3.0)
TARGET_PER_30D = 0.1
SIZES = {False: (32, 4, 30.0, 40), True: (4, 1, 30.0, 20)}  # new series, old series, days, trials per step


def _rate(values: list[int | None], within: int) -> float:
    return sum(v is not None and 1 <= v <= within for v in values) / len(values)


def _median(values: list[int | None]) -> float | None:
    hit = [v for v in values if v is not None and v >= 1]
    return float(np.median(hit)) if hit else None


def _summary(fired: list[str], months: float, lat: list[int | None], wer: list[int | None]) -> dict:
    kinds = [k.split("|")[0] for k in fired]
    return {
        "series_months": months, "false_alarms": len(kinds),
        "false_alarms_per_series_30d": round(len(kinds) / months, 3),
        "false_alarms_upper_95": round(poisson_upper(len(kinds), months), 3),
        "false_alarms_by_kind": {k: kinds.count(k) for k in sorted(set(kinds))},
        "latency_fired_within_2_evaluations": _rate(lat, 2), "latency_median_evaluations": _median(lat),
        "latency_fired_within_12h": _rate(lat, 48), "latency_fired_before_step": sum(v == 0 for v in lat) / len(lat),
        "wer_fired_within_4_evaluations": _rate(wer, 4), "wer_median_evaluations": _median(wer),
        "wer_fired_within_12h": _rate(wer, 48), "wer_fired_before_step": sum(v == 0 for v in wer) / len(wer),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="4 series-months (method 3: 1) and 20 trials per step (a few minutes)")
    args = parser.parse_args()
    n_new, n_old, days, n_trials = SIZES[args.quick]
    rules = RULES
    t0 = time.monotonic()
    with ProcessPoolExecutor(2) as pool:
        stable = list(pool.map(stable_series, range(n_new), [days] * n_new, [rules] * n_new,
                               [i < n_old for i in range(n_new)]))
        lat = list(pool.map(step_trial, range(1000, 1000 + n_trials), [LATENCY_STEP] * n_trials,
                            ["latency"] * n_trials, [rules] * n_trials))
        wer = list(pool.map(step_trial, range(2000, 2000 + n_trials), [WER_STEP] * n_trials,
                            ["wer"] * n_trials, [rules] * n_trials))
    result: dict = {"latency_trials": n_trials, "wer_trials": n_trials}
    result["old"] = _summary([k for s in stable if s.old is not None for k in s.old], n_old * days / 30,
                             [t["old"] for t in lat], [t["old"] for t in wer])
    result["new"] = _summary([k for s in stable for k in s.new], n_new * days / 30,
                             [t["new"] for t in lat], [t["new"] for t in wer])
    print(f"stable series: {n_new} x {days:g} d (method 3: {n_old}); {n_trials} step trials each; evaluations "
          f"every {rules.evaluate_every_minutes} min, fire_after {rules.fire_after}; evaluation 1 = the first whose "
          f"recent window holds a post-step row; WER p < {rules.wer_p_value:g} and +{rules.wer_increase_points:g} "
          f"points\n")
    print(f"{'rules':<10}{'series-months':>14}{'false alarms /30 d':>20}{'(95 % upper)':>14}{'by kind':>28}"
          f"{'lat <=2 ev':>12}{'lat median ev':>15}{'lat <=12 h':>12}{'wer <=4 ev':>12}{'wer median ev':>15}"
          f"{'wer <=12 h':>12}")
    for name, label in (("old", "method 3"), ("new", "method 4")):
        r = result[name]
        print(f"{label:<10}{r['series_months']:>14g}{r['false_alarms_per_series_30d']:>20.3f}"
              f"{r['false_alarms_upper_95']:>14.3f}{json.dumps(r['false_alarms_by_kind']):>28}"
              f"{r['latency_fired_within_2_evaluations']:>12.0%}{str(r['latency_median_evaluations']):>15}"
              f"{r['latency_fired_within_12h']:>12.0%}{r['wer_fired_within_4_evaluations']:>12.0%}"
              f"{str(r['wer_median_evaluations']):>15}{r['wer_fired_within_12h']:>12.0%}")
    ticks_per_30d = 30 * D / TICK
    alpha = TARGET_PER_30D / ticks_per_30d  # one decision per new tick keeps the month under the target
    power, result["power"] = lines([s.noise for s in stable], LATENCY_STEP.latency_ms, WER_STEP.wer_points, alpha)
    result["power"]["alpha_per_decision"] = alpha
    print(f"\npower: the best any rule could do with the ticks it has seen (alpha = {TARGET_PER_30D:g} false alarms / "
          f"{ticks_per_30d:.0f} ticks a month)")
    print("\n".join("  " + line for line in power))
    new = result["new"]
    result["false_alarms_target_met"] = new["false_alarms_per_series_30d"] <= TARGET_PER_30D
    result["latency_detection_target_met"] = new["latency_fired_within_2_evaluations"] >= 0.95
    result["wer_detection_target_met"] = new["wer_fired_within_4_evaluations"] >= 0.90
    result["seconds"] = round(time.monotonic() - t0, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
