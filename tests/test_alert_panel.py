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
    world = sim.World(rng, change, sim._panel(24))
    ticks = np.arange(0.0, days * sim.D, sim.TICK)
    return world, sim.runs(world, ticks, np.arange(ticks.size), sim.PER_TICK)


def _findings(columns: list[np.ndarray], now: float, rules: Alerts = RULES) -> dict:
    recent_from = now - rules.recent_hours * sim.H
    keep = columns[0] < now
    return {c.kind: c.finding for c in judge(sim.SERIES, sim.LATENCY, [c[keep] for c in columns], recent_from, rules)}


def test_an_outage_is_decisive_on_one_failing_tick():
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
    assert not any(quiet[k].decisive for k in ("latency", "wer", "outage"))  # noise may pend (a burst), never fire
    assert quiet["latency"].holds is False and quiet["outage"].holds is False
    world, columns = _series(sim.Step(at=3 * sim.D - 4 * sim.TICK, latency_ms=400.0))
    one = _findings(columns, 3 * sim.D - 4 * sim.TICK + 11 * sim.MIN)["latency"]  # one slow tick in: pending, not decisive
    assert one.holds and not one.decisive
    f = _findings(columns, 3 * sim.D - sim.TICK + 11 * sim.MIN)["latency"]  # four: past the firing level
    assert f.holds and f.decisive and "ms (+" in f.why and "95 % interval" in f.why
    assert f.recent > f.baseline * 1.3


def test_the_effect_is_the_step_not_the_evidence_before_it():
    from voxwatch.metrics.sequential import latest_change

    d = np.array([0.0, 1.2, 1.1, 4.0, 4.2, 3.9])  # just over the allowance twice, then a step
    path = cusum(d, k=1.0, cap=10.0)
    assert latest_change(d, path).tolist() == [4.0, 4.2, 3.9]
    assert latest_change(np.array([0.5, -1.0]), cusum(np.array([0.5, -1.0]), 1.0, 10.0)).tolist() == [-1.0]


def test_a_run_is_compared_with_the_baseline_at_its_hour_of_day():
    from voxwatch.metrics.sequential import Observations, hour_centres, sequential_shift

    at = np.arange(0, 10 * sim.D, sim.TICK)
    value = 0.1 * np.sin(2 * np.pi * at / sim.D) + np.random.default_rng(1).normal(0, 0.01, at.size)
    base = Observations(at, value, np.ones(at.size, dtype=np.int64))
    centres = hour_centres(base, 3)
    assert centres[6] == pytest.approx(0.1, abs=0.02) and centres[18] == pytest.approx(-0.1, abs=0.02)
    peak = Observations(np.array([10 * sim.D + 6 * sim.H]), np.array([0.1]), np.ones(1, dtype=np.int64))
    at_hour = sequential_shift(peak, base, 0.5, 2.5, hours=3)
    whole_day = sequential_shift(peak, base, 0.5, 2.5, hours=0)
    assert at_hour.scale < 0.02 < 0.08 < whole_day.scale  # the daily cycle is no longer noise
    assert at_hour.statistic == 0 < 0.3 < whole_day.statistic  # and the daily peak no regression at its hour


def test_an_evaluation_with_no_new_run_is_stale():
    world, columns = _series(sim.Step())
    f = _findings(columns, 3 * sim.D)["latency"]
    assert stale(f, last_evaluated_at=f.observed_at + 60)
    assert not stale(f, last_evaluated_at=f.observed_at - 60)


# --- the panel rules on the real Postgres, through voxwatch.alerts.evaluate.run ----------------------

PANEL = 24  # the packaged [run] panel_size


def _observations(model: str, columns: list[np.ndarray], run: str) -> list:
    """Simulated rows (benchmarks.alert_roc's columns) as the Observations a worker stores: each tick or
    burst a run of its own, each utterance a clip of family "sim" (what the panel is pinned by)."""
    from voxwatch.foundation.observation import Observation

    at, status, _, errors, words, tick, utt, _, latency = columns
    out = []
    for i in range(at.size):
        ok, uid = status[i] == "ok", f"utt{int(utt[i]):03d}"
        out.append(Observation(
            run_id=f"{run}-{int(tick[i])}", model_id=model, dataset="sim-clean", clip_id=uid, attempt=1, board="stt",
            vendor="sim", protocol="stt-batch", region="eu", started_at=float(at[i]), status=str(status[i]),
            family="sim", utterance_id=uid, method_version="4", latency_ms=float(latency[i]) if ok else None,
            substitutions=int(errors[i]) if ok else None, deletions=0 if ok else None, insertions=0 if ok else None,
            ref_words=int(words[i]) if ok else None))
    return out


def _store(url: str, rows: list) -> None:
    from voxwatch.store.postgres import PostgresStore

    store = PostgresStore(url)
    try:
        store.add(rows, refresh=False)
    finally:
        store.close()


@pytest.mark.e2e
def test_on_postgres_a_stable_series_is_quiet_a_latency_step_fires_and_an_outage_pages_after_its_burst():
    """Real: PostgresStore, the store's SQL, the panel flags from obs_clips, evaluate.run and the
    lifecycle, at the packaged rules with a 3-day baseline (so the test stores ~12,000 rows, not
    100,000). Simulated: the rows (benchmarks/alert_roc.py's series, a panel of 24 and 2 drawn a tick)
    and the calendar. Three models: stable, a +400 ms step from T, every attempt failing from T."""
    from dataclasses import replace

    from support.postgres import fresh_postgres
    from voxwatch.alerts import store as alert_store
    from voxwatch.alerts.evaluate import run
    from voxwatch.config import load

    rules = replace(load(environ={}).alerts, baseline_days=3.0)
    t = 2_000_000_000.0 // sim.TICK * sim.TICK  # a tick starts at T
    start = t - rules.baseline_days * sim.D - rules.recent_hours * sim.H
    ticks = np.arange(start, t + sim.TICK / 2, sim.TICK)  # the last one at T
    worlds, rows = {}, []
    for n, (model, change) in enumerate((("sim/stable@1", sim.Step()), ("sim/slower@1", sim.Step(at=t, latency_ms=400.0)),
                                         ("sim/down@1", sim.Step(at=t, outage=True)))):
        world = worlds[model] = sim.World(np.random.default_rng(40 + n), change, sim._panel(PANEL))
        rows += _observations(model, sim.runs(world, ticks, np.arange(ticks.size), 2), "tick")
    with fresh_postgres() as url:
        _store(url, rows)
        with alert_store.connected(url, "cannot use") as conn:
            def evaluate(now: float):
                return run(conn, rules, now, environ={}, panel_size=PANEL)

            quiet = [evaluate(t - k * sim.TICK + 11 * sim.MIN) for k in range(6, 0, -1)]  # after each of the 6 ticks before T
            # quiet: nothing fires (a stable series may go pending on noise now and then, and buy a burst)
            assert [x for e in quiet for x in e.transitions if x.event == "firing"] == [], [x for e in quiet for x in e.transitions]
            assert quiet[-1].checks >= 3 * 5  # outage, latency_ms, connect_ms, WER and rates, per model
            now = t + 11 * sim.MIN  # the tick at T is in (34 rows of 18 s)
            first = evaluate(now)
            opened = {(x.alert.model_id, x.alert.kind): x.event for x in first.transitions}
            assert opened == {("sim/slower@1", "latency"): "pending", ("sim/down@1", "outage"): "pending"}
            assert {(b.model_id, b.dataset) for b in first.bursts} == {("sim/slower@1", "sim-clean"), ("sim/down@1", "sim-clean")}
            fired: dict[tuple[str, str], float] = {}
            for burst in range(1, rules.bursts_per_alert + 1):  # each asks for one more, as the burst task does
                for model in ("sim/slower@1", "sim/down@1"):
                    panel_only = sim.runs(worlds[model], np.array([now + 60.0]), np.array([burst]), 0)
                    _store(url, _observations(model, panel_only, "burst"))
                now += 60.0 + PANEL * sim.ROW_S
                for x in evaluate(now).transitions:
                    if x.event == "firing":
                        fired[(x.alert.model_id, x.alert.kind)] = now
                if len(fired) == 2:
                    break
            assert set(fired) == {("sim/slower@1", "latency"), ("sim/down@1", "outage")}
            assert fired[("sim/down@1", "outage")] - t < sim.TICK  # paged within one tick: the tick, then its burst
            assert fired[("sim/slower@1", "latency")] - t < 60 * sim.MIN
            alerts = {(a.model_id, a.kind): a for a in alert_store.list_alerts(conn, "all", 100)}
            stable = [a for (model, _), a in alerts.items() if model == "sim/stable@1"]
            assert all(a.fired_at is None for a in stable), [(a.kind, a.state, a.summary) for a in stable]
            slow = alerts[("sim/slower@1", "latency")]
            assert slow.state == "firing" and slow.metric == "latency_ms"
            assert "panel latency" in slow.summary and "last 6 h vs the 3 d before" in slow.summary
            assert "against each utterance's 3 d median" in slow.summary and "95 % interval" in slow.summary
            assert " ms (+" in slow.summary and "baseline runs" in slow.summary
            assert slow.recent_value > 1.4 * slow.baseline_value  # +400 ms on ~600 ms
            down = alerts[("sim/down@1", "outage")]
            assert down.state == "firing" and "panel attempts of the newest run failed: 24/24" in down.summary


# --- confirmation bursts on the real Redis and a real worker ------------------------------------------

PS = "pocketsphinx/en-us@5.1.1"
LIMITS = {"VOXWATCH_BROKER_SOFT_TIME_LIMIT_S": "25", "VOXWATCH_BROKER_TIME_LIMIT_S": "28",
          "VOXWATCH_BROKER_CONVERSATION_SOFT_TIME_LIMIT_S": "26", "VOXWATCH_BROKER_CONVERSATION_TIME_LIMIT_S": "29",
          "VOXWATCH_BROKER_VISIBILITY_TIMEOUT_S": "30"}  # as tests/test_distributed.py: a busy machine's decoder start-up


@pytest.mark.e2e
def test_a_burst_is_bounded_in_redis_and_a_worker_measures_the_panel_alone_as_a_run_of_its_own(tmp_path):
    """Real: Redis (a random database and queue prefix, keys deleted after), the Ledger's counts under
    concurrent takers, a `voxwatch worker` taking the voxwatch.alerts.burst task, pocketsphinx measuring,
    the Postgres store. The panel is 2 utterances here ([run] panel_size) so the burst takes seconds."""
    import random
    import time
    import uuid
    from concurrent.futures import ThreadPoolExecutor

    import redis

    from support.processes import run_cli
    from support.postgres import fresh_postgres
    from support.voxwatch_process import Worker
    from voxwatch.config import load
    from voxwatch.datasets.catalog import Catalog, bundled_root
    from voxwatch.harness.tick import plan_burst
    from voxwatch.providers.registry import Registry
    from voxwatch.store import open_store
    from voxwatch.workers.celery_app import configure, queue_name
    from voxwatch.workers.coordination import Ledger

    broker, prefix = f"redis://127.0.0.1:6379/{random.randrange(1, 16)}", f"vwburst{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(broker)
    try:
        client.ping()
    except redis.ConnectionError:
        pytest.skip("Redis is not running on 127.0.0.1:6379 (.ci/run starts it)")
    region = "burst-test"
    with fresh_postgres() as url:
        run_cli("db", "upgrade", "--store", url)
        env = {"VOXWATCH_STORE_URL": url, "VOXWATCH_BROKER_URL": broker, "VOXWATCH_BROKER_QUEUE_PREFIX": prefix,
               "VOXWATCH_WORKER_REGION": region, "VOXWATCH_RUN_PANEL_SIZE": "2",
               "VOXWATCH_STORE_SPOOL_DIR": str(tmp_path / "spool"),
               "VOXWATCH_RUN_RECORDINGS_DIR": str(tmp_path / "recordings"),
               "VOXWATCH_DATASETS_DIR": str(tmp_path / "datasets"), **LIMITS}
        cfg = load(environ=env)
        rules = cfg.alerts
        try:
            # the bounds: concurrent takers get exactly bursts_per_alert for one alert ...
            ledger, day = Ledger(broker, prefix), 23_000

            def take(alert_id: int, series: str = "m|d|r", on: int = day) -> bool:
                return ledger.take_burst(series, alert_id, on, lambda n_alert, n_day: allowed(n_alert, n_day, rules))

            with ThreadPoolExecutor(8) as pool:
                assert sum(pool.map(take, [7] * (3 * rules.bursts_per_alert))) == rules.bursts_per_alert
            # ... and bursts_per_day for one series over many alerts (counted across both bounds), a new day afresh
            taken = sum(take(100 + i, "m2|d|r") for i in range(rules.bursts_per_day + 5))
            assert taken == rules.bursts_per_day
            assert take(500, "m2|d|r", day + 1) and take(7, "m|d|r", day + 1) is False  # the alert's own bound stays

            # the plan: the dataset's panel alone, for the one model
            planned = plan_burst(cfg, Registry.default(), Catalog([bundled_root()]), PS, "stt-starter-clean")
            assert len(planned.tasks) == 2 and {t.model.id for t in planned.tasks} == {PS}
            assert {t.dataset.name for t in planned.tasks} == {"stt-starter-clean"}
            clips = sorted(t.item.id for t in planned.tasks)

            worker = Worker(region, env, tmp_path / "worker.log")
            try:
                task_id = uuid.uuid4().hex
                configure(cfg).send_task("voxwatch.alerts.burst", task_id=task_id, queue=queue_name(cfg, region),
                                         kwargs={"model": PS, "dataset": "stt-starter-clean", "region": region,
                                                 "alert_id": 7})
                deadline = time.monotonic() + 90
                while True:
                    store = open_store(url)
                    try:
                        run = next((r for r in store.runs() if r.run_id == task_id), None)
                        rows = [o for o in store.observations() if o.run_id == task_id]
                    finally:
                        store.close()
                    if run is not None and run.status != "running":
                        break
                    assert worker.proc.poll() is None and time.monotonic() < deadline, worker.text()
                    time.sleep(0.5)
                assert run.status == "succeeded" and run.planned == 2 and run.note == "confirmation burst for alert 7"
                assert sorted(o.clip_id for o in rows) == clips and {o.model_id for o in rows} == {PS}
                assert {o.status for o in rows} == {"ok"}, [(o.status, o.reason) for o in rows]
            finally:
                worker.stop()
        finally:
            for pattern in (f"{prefix}*", f"_kombu.binding*{prefix}*"):
                for key in client.scan_iter(match=pattern):
                    client.delete(key)
