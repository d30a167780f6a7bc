"""Regression alerts: the rules on hand-built samples, the lifecycle and dedup on the real Postgres,
webhooks against a real HTTP receiver, the commands, the beat task, and the acceptance test (a real
loopback emulator stepping its latency up) with its false-positive counterpart.

Evaluations take `now` as a parameter, so history is simulated by writing rows with started_at in
the past (or the simulated future) and stepping the evaluation clock; nothing waits for wall time.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import asdict, replace
from pathlib import Path
from typing import Iterator

import numpy as np
import psycopg
import pytest
import redis
from scipy.stats import hypergeom, mannwhitneyu

from conftest import REPO, fresh_postgres, run_cli
from voxwatch.alerts import notify
from voxwatch.alerts import store as alert_store
from voxwatch.alerts.evaluate import evaluate, run
from voxwatch.alerts.rules import latency_shift, rate_spike, wer_shift
from voxwatch.config import Alerts, ConfigError, Webhook, load
from voxwatch.observation import Observation
from voxwatch.store.postgres import PostgresStore
from voxwatch.workers.celery_app import configure
from voxwatch.workers.schedule import beat_schedule
from webhook_receiver import receiver

RULES = load(environ={}).alerts  # the packaged defaults
T = 2_000_000_000.0  # the simulated clock the tests evaluate around (unix seconds, in 2033)
MIN, H, D = 60.0, 3600.0, 86400.0
ARTIFACT = REPO / "var" / "test-artifacts" / "alerts_e2e.json"


def rules(**changes) -> Alerts:
    return replace(RULES, delivery_backoff_s=0.01, **changes)


# --- the rules, on hand-built samples -------------------------------------------------------------

def test_a_latency_shift_must_be_significant_and_material():
    rng = np.random.default_rng(1)
    baseline = rng.lognormal(np.log(200), 0.1, 2000)
    drift = rng.lognormal(np.log(215), 0.1, 400)  # +15 ms, +7.5 %: detectable, but no regression a user feels
    assert mannwhitneyu(drift, baseline, alternative="greater").pvalue < 0.01
    f = latency_shift(drift, baseline, RULES)
    assert f.holds is False and f.p_value < 0.01 and "not material" in f.why
    assert (f.recent, f.baseline, f.n_recent, f.n_baseline) == (np.median(drift), np.median(baseline), 400, 2000)

    wide = rng.uniform(100, 900, 300)
    split = np.array([100.0] * 9 + [640.0] * 11)  # median 640 ms (+28 %, > +50 ms), yet 9 of 20 are the fastest
    assert np.median(split) >= 1.2 * np.median(wide) and np.median(split) - np.median(wide) >= 50
    assert mannwhitneyu(split, wide, alternative="greater").pvalue >= 0.01
    f = latency_shift(split, wide, RULES)
    assert f.holds is False and f.p_value >= 0.01 and "not significant" in f.why and "not material" not in f.why

    step = np.median(baseline) + 200
    assert latency_shift([step] * 19, baseline, RULES).holds is None  # fewer than 20 recent samples: not judged
    f = latency_shift([step] * 20, baseline, RULES)
    assert f.holds is True and f.recent == step
    f = latency_shift([step] * 20, baseline[:49], RULES)  # a new series: no baseline yet
    assert f.holds is False and "no baseline yet" in f.why


def test_a_wer_shift_needs_two_points_and_a_bootstrap_interval_above_zero():
    rng = np.random.default_rng(2)
    words_b = rng.integers(10, 30, 400)
    errors_b = rng.binomial(words_b, 0.10)
    words_r = rng.integers(10, 30, 60)
    errors_r = rng.binomial(words_r, 0.17)
    recent, before = errors_r.sum() / words_r.sum(), errors_b.sum() / words_b.sum()
    assert recent - before >= 0.02
    f = wer_shift(errors_r, words_r, errors_b, words_b, RULES)
    assert f.holds is True and (f.recent, f.baseline) == pytest.approx((recent, before), abs=1e-12)
    assert f.p_value < 0.01

    errors_small = rng.binomial(words_r, 0.11)
    assert errors_small.sum() / words_r.sum() - before < 0.02
    assert wer_shift(errors_small, words_r, errors_b, words_b, RULES).holds is False

    # one pathological clip (200 words, all wrong) carries the whole shift, the other 19 are perfect: a
    # resample that misses it, (19/20)^20 = 36 % of them, has WER 0, so the interval reaches below 0
    words_one = np.array([20] * 19 + [200])
    errors_one = np.array([0] * 19 + [200])
    f = wer_shift(errors_one, words_one, errors_b, words_b, RULES)
    assert f.recent - f.baseline > 0.2 and f.holds is False
    assert f.p_value == pytest.approx((19 / 20) ** 20, abs=0.04)


def test_a_rate_spike_needs_fishers_test_and_the_absolute_floor():
    def fisher(k1: int, n1: int, k2: int, n2: int) -> float:  # P(>= k1 of the k1 + k2 events land in the recent n1)
        return float(hypergeom.sf(k1 - 1, n1 + n2, k1 + k2, n1))

    f = rate_spike(20, 100, 20, 2000, RULES, "error rate")  # 20 % against 1 %
    assert f.holds is True and f.p_value == pytest.approx(fisher(20, 100, 20, 2000), rel=1e-6)
    assert (f.recent, f.baseline) == (0.2, 0.01)
    assert fisher(8, 100, 20, 2000) < 0.01
    assert rate_spike(8, 100, 20, 2000, RULES, "error rate").holds is False  # significant, but +7 points < +10
    assert fisher(2, 20, 0, 100) >= 0.01
    assert rate_spike(2, 20, 0, 100, RULES, "timeout rate").holds is False  # +10 points, but 2 of 20 can be luck
    assert rate_spike(19, 19, 0, 2000, RULES, "timeout rate").holds is None  # 19 attempts: not judged


# --- synthetic rows on the real Postgres ------------------------------------------------------------

def _row(model: str, t: float, *, status: str = "ok", latency_ms: float | None = None, method: str = "3",
         emulator: bool = False, errors: int | None = None, words: int | None = None) -> Observation:
    ok = status == "ok"
    return Observation(run_id=uuid.uuid4().hex, model_id=model, dataset="stt-starter-clean", clip_id="u001", attempt=1,
                       board="stt", vendor="test", protocol="stt-batch", region="eu", started_at=t, status=status,
                       emulator=emulator, method_version=method, latency_ms=latency_ms if ok else None,
                       substitutions=errors if ok else None, deletions=0 if ok and words else None,
                       insertions=0 if ok and words else None, ref_words=words if ok else None)


def _rows(model: str, rng: np.random.Generator, start: float, end: float, per_hour: float, median_ms: float,
          **kw) -> list[Observation]:
    """Rows at random times in [start, end), lognormal latency around median_ms."""
    times = np.sort(rng.uniform(start, end, int(round((end - start) / H * per_hour))))
    return [_row(model, float(t), latency_ms=float(rng.lognormal(np.log(median_ms), 0.1)), **kw) for t in times]


def _add(url: str, rows: list[Observation]) -> None:
    store = PostgresStore(url)
    try:
        store.add(rows, refresh=False)
    finally:
        store.close()


@pytest.fixture
def db() -> Iterator[tuple[str, psycopg.Connection]]:
    with fresh_postgres() as url:
        with alert_store.connected(url, "cannot use") as conn:
            yield url, conn


def _alerts(conn: psycopg.Connection) -> list[alert_store.Alert]:
    return alert_store.list_alerts(conn, "all", 1000)[::-1]  # oldest first


def _deliveries(conn: psycopg.Connection) -> list[tuple]:
    return conn.execute("SELECT alert_id, event, target, attempt, ok, status_code, error FROM alert_deliveries "
                        "ORDER BY id").fetchall()


def test_the_lifecycle_pending_firing_resolved_with_one_open_alert_per_key(db):
    url, conn = db
    rng = np.random.default_rng(3)
    m = "test/batch@1"
    baseline = _rows(m, rng, T - 30 * D - 6 * H, T - 2 * H, 4, 200)
    slow = _rows(m, rng, T - 2 * H, T + 1 * H, 20, 400)  # the regression starts at T - 2 h
    _add(url, baseline + slow)
    key = f"latency|{m}|latency_ms|stt-starter-clean|eu"

    def recent(now: float) -> list[float]:
        return [r.latency_ms for r in baseline + slow if now - 6 * H <= r.started_at < now]

    with receiver() as rx:
        hook = (Webhook("audit", "json", "AUDIT_URL"),)
        env = {"AUDIT_URL": rx.url("/audit")}
        result = run(conn, rules(webhooks=hook), T, env)
        assert [(t.event, t.alert.key) for t in result.transitions] == [("pending", key)] and not rx.received
        assert result.checks == 4  # latency_ms (rtf is latency over duration) and the three rates; no WER parts
        first = _alerts(conn)[0]
        assert (first.state, first.opened_at, first.fired_at, first.n_recent) == ("pending", T, None, len(recent(T)))
        assert first.recent_value == pytest.approx(np.median(recent(T)))
        assert first.baseline_value == pytest.approx(np.median([r.latency_ms for r in baseline if r.started_at < T - 6 * H]))

        result = run(conn, rules(webhooks=hook), T + 15 * MIN, env)
        assert [(t.event, t.alert.state, t.alert.fired_at) for t in result.transitions] == [("firing", "firing", T + 15 * MIN)]
        assert [d.ok for d in result.deliveries] == [True]
        body = rx.bodies("/audit")
        assert len(body) == 1 and body[0]["event"] == "firing" and body[0]["alert"]["id"] == first.id

        result = run(conn, rules(webhooks=hook), T + 30 * MIN, env)  # still regressed: same alert, newer numbers
        assert result.transitions == [] and len(rx.received) == 1
        (again,) = _alerts(conn)
        assert (again.id, again.state, again.last_evaluated_at) == (first.id, "firing", T + 30 * MIN)
        assert again.n_recent == len(recent(T + 30 * MIN)) > first.n_recent

        recovered = _rows(m, rng, T + 1 * H, T + 8 * H, 20, 200)
        _add(url, recovered)
        assert run(conn, rules(webhooks=hook), T + 7 * H + 15 * MIN, env).transitions == []  # clear once: still firing
        assert _alerts(conn)[0].state == "firing"
        result = run(conn, rules(webhooks=hook), T + 7 * H + 30 * MIN, env)  # clear twice (resolve_after = 2)
        assert [(t.event, t.alert.resolved_at) for t in result.transitions] == [("resolved", T + 7 * H + 30 * MIN)]
        assert [b["event"] for b in rx.bodies("/audit")] == ["firing", "resolved"]

        _add(url, _rows(m, rng, T + 8 * H, T + 12 * H, 20, 400))  # it recurs: a new alert, the old one stays resolved
        assert [t.event for t in run(conn, rules(webhooks=hook), T + 12 * H, env).transitions] == ["pending"]
        old, new = _alerts(conn)
        assert (old.id, old.state, new.state, new.key) == (first.id, "resolved", "pending", key) and new.id != old.id
        assert [(d[1], d[2], d[3], d[4]) for d in _deliveries(conn)] == [("firing", "audit", 1, True),
                                                                        ("resolved", "audit", 1, True)]

    with pytest.raises(psycopg.errors.UniqueViolation):  # the schema itself allows one open alert per key
        conn.execute("INSERT INTO alerts (key, kind, board, model_id, metric, dataset, region, method_version, state, "
                     "opened_at, last_evaluated_at, summary) VALUES (%s, 'latency', 'stt', %s, 'latency_ms', "
                     "'stt-starter-clean', 'eu', '3', 'firing', %s, %s, 'x')", (key, m, T, T))


def test_an_evaluation_reads_each_series_by_key_run_by_run(db):
    """Cheap at scale: a series' two windows are read through the fact table's key, one range per run
    of the windows (as the aggregates' refresh reads), whatever the protocol."""
    from voxwatch.metrics.specs import for_protocol

    url, conn = db
    _add(url, _rows("test/batch@1", np.random.default_rng(11), T - D, T, 4, 200))
    conn.execute("SET enable_seqscan = off")
    conn.execute("SET enable_bitmapscan = off")
    for protocol in ("stt-stream", "stt-batch", "tts-stream", "s2s"):
        for include_emulator in (False, True):
            sql = alert_store.series_sql(for_protocol(protocol, headline_only=True), include_emulator)
            lines = [r[0] for r in conn.execute("EXPLAIN " + sql, {
                "model_id": "test/batch@1", "dataset": "stt-starter-clean", "region": "eu", "method_version": "3",
                "since": T - D, "until": T})]
            [at] = [i for i, line in enumerate(lines) if "obs_facts" in line]
            assert "Index Scan using obs_facts_pkey" in lines[at], "\n".join(lines)
            assert all(k in lines[at + 1] for k in ("run_id_ref = ANY", "model_id_ref =", "dataset_ref =")), lines


def test_a_pending_alert_that_clears_resolves_without_ever_firing(db):
    url, conn = db
    rng = np.random.default_rng(4)
    m = "test/blip@1"
    _add(url, _rows(m, rng, T - 30 * D, T - H, 4, 200) + _rows(m, rng, T - H, T, 30, 400)
         + _rows(m, rng, T, T + H, 30, 200))
    short = rules(recent_hours=1.0, webhooks=(Webhook("audit", "json", "AUDIT_URL"),))
    with receiver() as rx:
        env = {"AUDIT_URL": rx.url("/audit")}
        assert [t.event for t in run(conn, short, T, env).transitions] == ["pending"]
        result = run(conn, short, T + H, env)
        assert [(t.event, t.alert.state, t.alert.fired_at) for t in result.transitions] == [("cleared", "resolved", None)]
        assert rx.received == [] and result.deliveries == [] and _deliveries(conn) == []


def test_two_evaluators_at_once_notify_a_transition_once(db):
    url, conn = db
    rng = np.random.default_rng(5)
    _add(url, _rows("test/race@1", rng, T - 30 * D, T - 6 * H, 4, 200) + _rows("test/race@1", rng, T - 6 * H, T, 10, 500))
    with receiver() as rx:
        hooks = rules(webhooks=(Webhook("audit", "json", "AUDIT_URL"),))
        env = {"AUDIT_URL": rx.url("/audit")}
        assert [t.event for t in run(conn, hooks, T, env).transitions] == ["pending"]
        start = threading.Barrier(2)
        results: list = []

        def evaluator() -> None:
            with alert_store.connected(url, "cannot use") as own:
                start.wait()
                results.append(run(own, hooks, T + 15 * MIN, env))

        threads = [threading.Thread(target=evaluator) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert sorted(len(r.transitions) for r in results) == [0, 1]  # the second waited, then saw it firing
        assert len(rx.received) == 1 and len(_deliveries(conn)) == 1


def test_a_method_change_has_no_baseline_and_emulator_rows_count_only_when_asked(db):
    url, conn = db
    rng = np.random.default_rng(6)
    rows = []
    for model, recent_method, emulator in (("test/same@1", "3", False), ("test/changed@1", "4", False),
                                           ("test/emu@1", "3", True)):
        rows += _rows(model, rng, T - 30 * D, T - 6 * H, 4, 200, emulator=emulator)
        rows += _rows(model, rng, T - 6 * H, T, 10, 500, method=recent_method, emulator=emulator)
    _add(url, rows)
    result = evaluate(conn, RULES, T)
    assert [t.alert.model_id for t in result.transitions] == ["test/same@1"]
    assert result.checks == 8  # test/same and test/changed (latency, 3 rates); never test/emu
    opted_in = evaluate(conn, rules(include_emulator=True), T + 1).transitions
    assert [(t.alert.model_id, t.event) for t in opted_in] == [("test/emu@1", "pending"), ("test/same@1", "firing")]

    # test/same moves to method 4 (still slow); test/emu's rows are not judged by default: its alert waits
    _add(url, _rows("test/same@1", rng, T, T + 6 * H, 10, 500, method="4"))
    assert evaluate(conn, RULES, T + 6 * H).transitions == []  # clear once
    (resolved,) = evaluate(conn, RULES, T + 6 * H + 15 * MIN).transitions
    assert (resolved.event, resolved.alert.model_id, resolved.alert.method_version) == ("resolved", "test/same@1", "3")
    assert "no baseline yet" in resolved.alert.summary
    emu = next(a for a in _alerts(conn) if a.model_id == "test/emu@1")
    assert (emu.state, emu.opened_at, emu.last_evaluated_at) == ("pending", T + 1, T + 6 * H + 15 * MIN)


def test_webhooks_retry_record_every_attempt_and_never_store_the_url(db, caplog):
    url, conn = db
    rng = np.random.default_rng(7)
    _add(url, _rows("test/hooks@1", rng, T - 30 * D, T - 6 * H, 4, 200) + _rows("test/hooks@1", rng, T - 6 * H, T, 10, 500))
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    dead_port = closed.getsockname()[1]
    closed.close()  # nothing listens there: connection refused
    hooks = (Webhook("ops-slack", "slack", "SLACK_URL"), Webhook("audit", "json", "AUDIT_URL"),
             Webhook("busy", "json", "BUSY_URL"), Webhook("strict", "json", "STRICT_URL"),
             Webhook("down", "json", "DOWN_URL"), Webhook("unset", "json", "UNSET_URL"),
             Webhook("typo", "json", "TYPO_URL"))
    with receiver() as rx:
        rx.answer("/services/T0/B0/slack-secret", 503)
        rx.answer("/busy-secret", 429)
        rx.answer("/strict-secret", 404)
        env = {"SLACK_URL": rx.url("/services/T0/B0/slack-secret"), "AUDIT_URL": rx.url("/audit-secret"),
               "BUSY_URL": rx.url("/busy-secret"), "STRICT_URL": rx.url("/strict-secret"),
               "DOWN_URL": f"http://127.0.0.1:{dead_port}/down-secret", "TYPO_URL": "hooks.example/typo-secret"}
        with caplog.at_level(logging.INFO, logger="voxwatch.alerts"):
            result = run(conn, rules(fire_after=1, webhooks=hooks), T, env)
        (alert,) = _alerts(conn)
        assert [t.event for t in result.transitions] == ["firing"]
        assert [(d.target, d.attempts, d.ok) for d in result.deliveries] == [
            ("ops-slack", 2, True), ("audit", 1, True), ("busy", 2, True), ("strict", 1, False), ("down", 3, False),
            ("unset", 1, False), ("typo", 1, False)]
        assert [(d[2], d[3], d[4], d[5]) for d in _deliveries(conn)] == [
            ("ops-slack", 1, False, 503), ("ops-slack", 2, True, 200), ("audit", 1, True, 200), ("busy", 1, False, 429),
            ("busy", 2, True, 200), ("strict", 1, False, 404), ("down", 1, False, None), ("down", 2, False, None),
            ("down", 3, False, None), ("unset", 1, False, None), ("typo", 1, False, None)]
        errors = {d[2]: d[6] for d in _deliveries(conn)}
        assert errors["down"].startswith("ConnectError") and "UNSET_URL" in errors["unset"]
        assert errors["typo"].startswith("UnsupportedProtocol")  # a malformed URL is not retried
        assert rx.bodies("/services/T0/B0/slack-secret") == [{"text": f"[FIRING] {alert.summary}"}]
        expected = {k: v for k, v in asdict(alert).items() if k != "streak"}
        assert rx.bodies("/audit-secret") == [{"event": "firing", "alert": expected}]

    stored = json.dumps(conn.execute("SELECT json_agg(a) FROM alerts a").fetchone()[0]
                        + conn.execute("SELECT json_agg(d) FROM alert_deliveries d").fetchone()[0])
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "ops-slack" in logged and "down" in logged
    assert "secret" not in stored and "secret" not in logged  # every URL's path says "secret"
    slack = "https://hooks.slack.com/services/T0/B0/secret"  # and were a message ever to quote one:
    assert "secret" not in notify._without(f"cannot POST {slack}: refused (path /services/T0/B0/secret)", slack)


def test_webhook_config_names_the_variable_and_never_echoes_a_url(tmp_path: Path):
    cfg = load(environ={"VOXWATCH_ALERTS_WEBHOOKS": "ops:slack:SLACK_URL,audit:json:AUDIT_URL",
                        "VOXWATCH_ALERTS_INCLUDE_EMULATOR": "true"}).alerts
    assert cfg.webhooks == (Webhook("ops", "slack", "SLACK_URL"), Webhook("audit", "json", "AUDIT_URL"))
    assert cfg.include_emulator is True and RULES.include_emulator is False
    path = tmp_path / "v.toml"
    path.write_text('[[alerts.webhooks]]\nname = "ops"\nformat = "slack"\n'
                    'url = "https://hooks.slack.com/services/T0/B0/very-secret"\n')
    with pytest.raises(ConfigError, match=r"\[alerts\] webhooks: webhook 1: expected exactly name, format and url_env") as err:
        load(path, environ={})
    assert "very-secret" not in str(err.value)
    path.write_text('[[alerts.webhooks]]\nname = "ops"\nformat = "teams"\nurl_env = "X"\n')
    with pytest.raises(ConfigError, match="format: expected one of slack, json"):
        load(path, environ={})


# --- the commands and the beat task -----------------------------------------------------------------

def test_alerts_list_and_evaluate_from_the_command_line(tmp_path: Path):
    rng = np.random.default_rng(8)
    now = time.time()
    with fresh_postgres() as url, receiver() as rx:
        for model, emulator in (("test/emu@1", True), ("test/now@1", False)):  # both regressed in the last 6 h
            _add(url, _rows(model, rng, now - 30 * D, now - 6 * H, 4, 200, emulator=emulator)
                 + _rows(model, rng, now - 6 * H, now - 1, 10, 500, emulator=emulator))
        with alert_store.connected(url, "cannot use") as conn:
            evaluate(conn, rules(include_emulator=True), now - 1)  # both pending

        env = {"VOXWATCH_ALERTS_FIRE_AFTER": "1", "VOXWATCH_ALERTS_WEBHOOKS": "ops:slack:OPS_URL",
               "OPS_URL": rx.url("/ops")}
        out = run_cli("alerts", "evaluate", "--store", url, env=env).stdout  # emulator rows are not judged by default
        assert "0 opened (pending), 1 firing" in out and "webhook ops: alert" in out
        assert "delivered after 1 attempt" in out
        assert [b["text"].startswith("[FIRING] latency regression: test/now@1") for b in rx.bodies("/ops")] == [True]

        table = run_cli("alerts", "list", "--store", url).stdout.splitlines()
        assert table[0].split()[:4] == ["id", "state", "kind", "model"]
        assert [line.split()[1:4] for line in table[1:]] == [["firing", "latency", "test/now@1"],
                                                            ["pending", "latency", "test/emu@1"]]
        firing = run_cli("alerts", "list", "--state", "firing", "--store", url).stdout
        assert "test/now@1" in firing and "test/emu@1" not in firing
        assert run_cli("alerts", "list", "--state", "resolved", "--store", url).stdout.strip() == "no resolved alerts"
    proc = run_cli("alerts", "list", "--store", f"sqlite:///{tmp_path / 'x.sqlite'}", check=False)
    assert proc.returncode == 2 and "alerts need the Postgres store" in proc.stderr


def test_beat_schedules_the_evaluation_and_a_worker_runs_it(db, tmp_path: Path):
    """The beat entry, sent as beat sends it, taken by a real `voxwatch worker` from the real Redis (a
    random database and queue prefix, so parallel runs never share a queue; its keys are deleted)."""
    url, conn = db
    broker, prefix = f"redis://127.0.0.1:6379/{random.randrange(1, 16)}", f"vwalerts{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(broker)
    try:
        client.ping()
    except redis.ConnectionError:
        pytest.skip("Redis is not running on 127.0.0.1:6379 (.ci/run starts it)")
    env = {"VOXWATCH_STORE_URL": url, "VOXWATCH_BROKER_URL": broker, "VOXWATCH_BROKER_QUEUE_PREFIX": prefix,
           "VOXWATCH_WORKER_REGION": "alerts-test", "VOXWATCH_ALERTS_EVALUATE_EVERY_MINUTES": "10"}
    cfg = load(environ=env)
    entry = beat_schedule(cfg)["alerts evaluate"]
    assert entry["task"] == "voxwatch.alerts.evaluate" and entry["schedule"].seconds == 600
    assert entry["options"]["queue"] == f"{prefix}.alerts-test"
    assert "alerts evaluate" not in beat_schedule(load(environ={}))  # SQLite: no alerts to evaluate

    rng, now = np.random.default_rng(9), time.time()
    _add(url, _rows("test/task@1", rng, now - 30 * D, now - 6 * H, 4, 200) + _rows("test/task@1", rng, now - 6 * H, now, 10, 500))
    log = tmp_path / "worker.log"
    with log.open("w") as out:
        worker = subprocess.Popen([sys.executable, "-m", "voxwatch.cli", "worker"], cwd=REPO, stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True,
                                  env={k: v for k, v in os.environ.items() if not k.startswith("VOXWATCH_")} | env)
    try:
        configure(cfg).send_task(entry["task"], queue=entry["options"]["queue"])
        deadline = time.monotonic() + 60
        while not _alerts(conn):
            assert worker.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        assert [(a.model_id, a.state) for a in _alerts(conn)] == [("test/task@1", "pending")]
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(20)
        for pattern in (f"{prefix}*", f"_kombu.binding*{prefix}*"):
            for key in client.scan_iter(match=pattern):
                client.delete(key)


# --- acceptance: a real emulator's latency steps up; and a stable noisy series stays quiet ----------------

def _stt_stream_rows(rng: np.random.Generator, start: float, end: float, per_hour: float) -> list[Observation]:
    """A stable but noisy streaming STT series: lognormal latencies, binomial errors and timeouts, and a
    WER that varies from clip to clip (Beta-distributed, mean 5 %, over 14 to 30 words)."""
    out = []
    for t in np.sort(rng.uniform(start, end, int(round((end - start) / H * per_hour)))):
        u = rng.random()
        status = "timeout" if u < 0.01 else "server_error" if u < 0.03 else "ok"
        ok, words = status == "ok", int(rng.integers(14, 31))
        out.append(Observation(
            run_id=uuid.uuid4().hex, model_id="test/stream@1", dataset="stt-starter-clean", clip_id="u001", attempt=1,
            board="stt", vendor="test", protocol="stt-stream", region="eu", started_at=float(t), status=status,
            method_version="3", ttfs_ms=float(rng.lognormal(np.log(300), 0.35)) if ok else None,
            first_partial_ms=float(rng.lognormal(np.log(180), 0.35)) if ok else None,
            substitutions=int(rng.binomial(words, rng.beta(2, 38))) if ok else None, deletions=0 if ok else None,
            insertions=0 if ok else None, ref_words=words if ok else None))
    return out


def test_a_stable_noisy_series_raises_no_alert_over_200_evaluations(db):
    """Simulated: 30 days and 50 hours of a stable series at the default schedule's rate (a tick of 10 clips
    every 30 minutes: 20 rows an hour), evaluated with the default rules at 200 successive times 15 minutes
    apart (the default beat interval). Real: the store, the SQL and every rule."""
    url, conn = db
    _add(url, _stt_stream_rows(np.random.default_rng(10), T - 30 * D - 6 * H, T + 50 * H, 20))
    checks, transitions = [], []
    for k in range(200):
        result = evaluate(conn, RULES, T + k * 15 * MIN)
        checks.append(result.checks)
        transitions += result.transitions
    assert set(checks) == {6}  # ttfs_ms, first_partial_ms, WER and the three rates, judged every time
    assert transitions == [] and _alerts(conn) == []


E2E_KEY = "emulator-key-0123456789"
TICK_STREAMS = 24
TICK_EVERY = 6 * H


def _tick(adapter, prompts, run_id: str) -> list[Observation]:
    """One tick measured for real: TICK_STREAMS streams through the Cartesia adapter and the harness."""
    from voxwatch.providers.keys import Secret
    from voxwatch.providers.registry import Registry
    from voxwatch.workers.measure import MeasureContext, measure_item

    model = Registry.default().resolve("cartesia/sonic-3.5")
    ctx = MeasureContext(run_id=run_id, seed=1, region="e2e", timeout_s=10, secrets=(Secret(E2E_KEY),),
                         emulator=adapter.emulator)

    async def streams() -> list[Observation]:
        return [await measure_item(model, adapter, prompts, prompts.prompts[i % len(prompts.prompts)], ctx)
                for i in range(TICK_STREAMS)]

    rows = asyncio.run(streams())
    assert [r.status for r in rows] == ["ok"] * TICK_STREAMS, [(r.status, r.reason) for r in rows]
    return rows


def _at(rows: list[Observation], start: float, run_id: str) -> list[Observation]:
    """The measured rows moved to a tick at `start`, keeping their real spacing."""
    first = rows[0].started_at
    return [replace(r, run_id=run_id, started_at=start + r.started_at - first) for r in rows]


def test_end_to_end_a_latency_step_fires_reaches_the_webhook_and_resolves(db, monkeypatch):
    """The acceptance test.

    Real: a loopback Cartesia emulator in its own process, measured through the real adapter and
    harness (measure_item), rows in the real Postgres, every evaluation by the real code at the default
    rules (emulator rows opted in), notifications over HTTP to a real receiver on 127.0.0.1.
    Simulated: the calendar. The schedule is one tick of 24 streams every 6 hours, so each tick fills
    one recent window (default 6 h) and the first evaluation after a tick judges that tick alone; the
    30-day baseline is the first tick's measured rows repeated at each earlier tick time (120 ticks);
    a tick's rows are placed at the tick's time, keeping their real spacing; the evaluation clock steps
    every 15 minutes (the default beat interval). At S0 the emulator's latency steps up by 200 ms (a new
    emulator process with ttfb_ms + 200: the provider got slower); at S0 + 6 h it is back.
    """
    from voxwatch.datasets.catalog import Catalog, bundled_root
    from voxwatch.providers.emulators.scenario import TTSScenario
    from voxwatch.providers.emulators.server import serve
    from voxwatch.providers.registry import Registry

    url, conn = db
    registry, model = Registry.default(), Registry.default().resolve("cartesia/sonic-3.5")
    prompts = Catalog([bundled_root()]).load("tts-prompts")
    scenario = TTSScenario(ttfb_ms=120.0, leading_silence_ms=80.0, speech_ms=200.0, send_every_ms=2.0, jitter_ms=20.0,
                           api_key=E2E_KEY)
    monkeypatch.setenv("VOXWATCH_CARTESIA_API_KEY", E2E_KEY)
    hooks = (Webhook("ops-slack", "slack", "E2E_SLACK_URL"), Webhook("audit", "json", "E2E_AUDIT_URL"))
    e2e = rules(include_emulator=True, webhooks=hooks)
    s0, every = T, 15 * MIN

    def measured(ttfb_ms: float, start: float) -> tuple[list[Observation], float]:
        with serve("cartesia", replace(scenario, ttfb_ms=ttfb_ms)) as base:
            monkeypatch.setenv("VOXWATCH_CARTESIA_BASE_URL", base)
            up = time.time()
            rows = _tick(registry.create(model), prompts, f"e2e-{start:.0f}")
        _add(url, _at(rows, start, f"e2e-{start:.0f}"))
        return rows, up

    with receiver() as rx:
        env = {"E2E_SLACK_URL": rx.url("/slack"), "E2E_AUDIT_URL": rx.url("/audit")}
        normal, _ = measured(120.0, s0 - TICK_EVERY)
        _add(url, [r for k in range(2, 121) for r in _at(normal, s0 - k * TICK_EVERY, f"e2e-baseline-{k}")])
        before = run(conn, e2e, s0 - 1, env)
        assert before.checks == 6 and before.transitions == []  # ttfa, ttfb, leading silence, three rates: quiet

        slow, step_at = measured(320.0, s0)  # the step
        evaluations, fired = 0, []
        while not fired:
            evaluations += 1
            assert evaluations <= 2, "no alert fired within two evaluations of the step"
            fired = [t for t in run(conn, e2e, s0 + evaluations * every, env).transitions if t.event == "firing"]
        firing_posts = rx.wait_for(2 * len(hooks))
        keys = sorted(t.alert.key for t in fired)
        assert keys == [f"latency|{model.id}|{m}|tts-prompts|e2e" for m in ("ttfa_ms", "ttfb_ms")]
        for k in range(evaluations + 1, int(TICK_EVERY / every) + 1):  # beat carries on: nothing new is sent
            assert run(conn, e2e, s0 + k * every, env).transitions == []
        assert len(rx.received) == len(firing_posts)

        _, recovered_at = measured(120.0, s0 + TICK_EVERY)  # the provider is back
        k, resolved = int(TICK_EVERY / every), []
        while not resolved:
            k += 1
            assert k * every <= TICK_EVERY + 4 * every, "the alerts did not resolve"
            resolved = [t for t in run(conn, e2e, s0 + k * every, env).transitions if t.event == "resolved"]
        resolved_posts = rx.wait_for(4 * len(hooks))[len(firing_posts):]

    assert sorted(t.alert.key for t in resolved) == keys
    assert sorted((b["event"], b["alert"]["metric"]) for b in rx.bodies("/audit")) == [
        ("firing", "ttfa_ms"), ("firing", "ttfb_ms"), ("resolved", "ttfa_ms"), ("resolved", "ttfb_ms")]
    assert [b["text"][:9] for b in rx.bodies("/slack")] == ["[FIRING] "] * 2 + ["[RESOLVED"] * 2
    shift = {}
    for body in rx.bodies("/audit")[:2]:  # the firing numbers are the step tick's and the baseline's medians
        metric, alert = body["alert"]["metric"], body["alert"]
        assert alert["recent_value"] == pytest.approx(np.median([getattr(r, metric) for r in slow]))
        assert alert["baseline_value"] == pytest.approx(np.median([getattr(r, metric) for r in normal]))
        shift[metric] = alert["recent_value"] - alert["baseline_value"]
        assert shift[metric] == pytest.approx(200.0, abs=25.0)  # the injected step, within the rig's lateness
    timings = {
        "evaluations_until_firing": evaluations,
        "seconds_from_step_to_webhook": round(min(p.at for p in firing_posts) - step_at, 3),
        "evaluations_until_resolved": k - int(TICK_EVERY / every),
        "seconds_from_recovery_to_resolved_webhook": round(min(p.at for p in resolved_posts) - recovered_at, 3),
        "simulated_minutes_from_step_to_firing": evaluations * every / MIN,
        "simulated_minutes_from_recovery_to_resolved": (k * every - TICK_EVERY) / MIN,
        "evaluation_interval_minutes": every / MIN,
        "recent_window_hours": e2e.recent_hours,
        "streams_measured": 3 * TICK_STREAMS,
        "baseline_rows": 120 * TICK_STREAMS,
        "step_ms": 200.0,
        "measured_shift_ms": {m: round(v, 1) for m, v in sorted(shift.items())},
        "alerts": keys,
    }
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    ARTIFACT.write_text(json.dumps(timings, indent=2) + "\n")
    print(f"\nalert e2e timings ({ARTIFACT}):\n{json.dumps(timings, indent=2)}")
