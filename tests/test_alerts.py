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
from scipy.stats import fisher_exact, mannwhitneyu

from support.processes import REPO, run_cli
from support.postgres import fresh_postgres
from voxwatch.alerts import notify
from voxwatch.alerts import store as alert_store
from voxwatch.alerts.evaluate import evaluate, run
from voxwatch.alerts.rules import Scored, latency_shift, rate_spike, wer_shift
from voxwatch.config import Alerts, ConfigError, Webhook, load
from voxwatch.metrics.clustered import design
from voxwatch.metrics.compare import tick_medians
from voxwatch.metrics.series import FAILURE_STATUSES, RATES as SERIES_RATES
from voxwatch.foundation.observation import Observation
from voxwatch.store.postgres import PostgresStore
from voxwatch.workers.celery_app import configure
from voxwatch.workers.schedule import beat_schedule
from support.webhook_receiver import receiver
from support.processes import kept_env

pytestmark = pytest.mark.e2e

RULES = load(environ={}).alerts  # the packaged defaults
T = 2_000_000_000.0  # the simulated clock the tests evaluate around (unix seconds, in 2033)
MIN, H, D = 60.0, 3600.0, 86400.0
ARTIFACT = REPO / "var" / "test-artifacts" / "alerts_e2e.json"


def rules(**changes) -> Alerts:
    return replace(RULES, delivery_backoff_s=0.01, **changes)


# --- the rules, on hand-built samples -------------------------------------------------------------

def _ticks(n_ticks: int, per_tick: int, first: int = 0) -> np.ndarray:
    """Each row's tick label: n_ticks runs of per_tick rows."""
    return np.repeat(np.arange(first, first + n_ticks), per_tick)


def test_a_latency_shift_compares_ticks_and_must_be_significant_and_material():
    rng = np.random.default_rng(1)
    b_ticks, r_ticks = _ticks(400, 10), _ticks(12, 10, first=1000)
    baseline = rng.lognormal(np.log(200), 0.1, b_ticks.size) * np.repeat(rng.lognormal(0, 0.05, 400), 10)
    drift = rng.lognormal(np.log(215), 0.1, r_ticks.size)  # +15 ms, +7.5 %: detectable, but no regression a user feels
    tick_r, tick_b = tick_medians(drift, r_ticks), tick_medians(baseline, b_ticks)
    assert tick_r.size == 12 and tick_b.size == 400
    assert tick_b[0] == np.median(baseline[:10])  # a tick's median, not a row's
    assert mannwhitneyu(tick_r, tick_b, alternative="greater").pvalue < 0.01
    f = latency_shift(drift, r_ticks, baseline, b_ticks, RULES)
    assert f.holds is False and f.p_value < 0.01 and "not material" in f.why
    assert (f.recent, f.baseline, f.n_recent, f.n_baseline) == (np.median(tick_r), np.median(tick_b), 120, 4000)

    # rows say "certain", ticks do not: two recent ticks of 60 rows, each +35 % (material), on a
    # provider whose ticks vary that much anyway (tick effects of sd 0.3 in log)
    varied = 200 * np.repeat(rng.lognormal(0, 0.3, 300), 10) * rng.lognormal(0, 0.05, 3000)
    two = 200 * np.exp(0.3) * rng.lognormal(0, 0.05, 120)
    assert mannwhitneyu(two, varied, alternative="greater").pvalue < 1e-20  # rows as if independent
    f = latency_shift(two, _ticks(2, 60, first=1000), varied, _ticks(300, 10), RULES)
    assert f.recent >= 1.2 * f.baseline and f.holds is False and f.p_value >= 0.01 and "not significant" in f.why

    step = np.median(baseline) + 200
    assert latency_shift([step] * 19, np.arange(19), baseline, b_ticks, RULES).holds is None  # < 20 samples
    f = latency_shift([step] * 20, _ticks(2, 10, first=1000), baseline, b_ticks, RULES)
    assert f.holds is True and f.recent == step
    f = latency_shift([step] * 20, _ticks(2, 10, first=1000), baseline[:49], b_ticks[:49], RULES)
    assert f.holds is False and "no baseline yet" in f.why


def test_a_single_slow_tick_does_not_fire_the_latency_rule():
    """A 6-hour window of 12 ticks at 30 minutes, one of which is three times as slow: the median of
    ticks does not move. The same rows read as independent would pass Mann-Whitney."""
    rng = np.random.default_rng(12)
    b_ticks, r_ticks = _ticks(1440, 10), _ticks(12, 10, first=5000)
    baseline = rng.lognormal(np.log(600), 0.2, b_ticks.size)
    recent = rng.lognormal(np.log(600), 0.2, r_ticks.size)
    recent[r_ticks == 5011] *= 3  # the newest tick
    f = latency_shift(recent, r_ticks, baseline, b_ticks, rules(fire_after=1))
    assert f.holds is False and f.recent < 1.2 * f.baseline
    assert mannwhitneyu(recent, baseline, alternative="greater").pvalue < 0.05 < f.p_value
    sustained = rng.lognormal(np.log(600), 0.2, r_ticks.size) * np.where(r_ticks >= 5005, 1.6, 1.0)  # 7 of 12 slow
    assert latency_shift(sustained, r_ticks, baseline, b_ticks, RULES).holds is True


def _scored(utterances, ticks, errors, words) -> Scored:
    return Scored(np.asarray(utterances), np.asarray(ticks), np.asarray(errors), np.asarray(words))


def _catalog_rows(rng: np.random.Generator, wer: np.ndarray, words: np.ndarray, n_ticks: int, first: int,
                  extra: float = 0.0) -> Scored:
    """n_ticks ticks, each measuring 10 utterances drawn from the catalog, errors binomial at each
    utterance's WER (+ extra)."""
    utt = np.concatenate([rng.choice(wer.size, 10, replace=False) for _ in range(n_ticks)])
    w = words[utt]
    return _scored(utt, _ticks(n_ticks, 10, first), rng.binomial(w, np.minimum(wer[utt] + extra, 1)), w)


def test_a_wer_shift_is_paired_by_utterance_significant_and_material():
    rng = np.random.default_rng(2)
    wer, words = rng.beta(1, 10, 64), rng.integers(4, 30, 64)
    baseline = _catalog_rows(rng, wer, words, 1000, 0)
    worse = _catalog_rows(rng, wer, words, 12, 5000, extra=0.06)
    f = wer_shift(worse, baseline, RULES)
    u = np.unique(baseline.utterances)
    per_utt = {k: baseline.errors[baseline.utterances == k].sum() / baseline.words[baseline.utterances == k].sum()
               for k in u}
    expected = sum(w * per_utt[k] for k, w in zip(worse.utterances, worse.words)) / worse.words.sum()
    assert f.holds is True and f.p_value < 0.01
    assert (f.recent, f.baseline) == pytest.approx((worse.errors.sum() / worse.words.sum(), expected), abs=1e-12)
    same = _catalog_rows(rng, wer, words, 12, 6000)
    assert wer_shift(same, baseline, RULES).holds is False

    # the window drew the catalog's hardest utterances: unpaired pooled WER is far up, paired it is not
    hard = np.argsort(wer)[-10:]
    drawn = np.tile(hard, 12)
    hard_window = _scored(drawn, _ticks(12, 10, 7000), rng.binomial(words[drawn], wer[drawn]), words[drawn])
    f = wer_shift(hard_window, baseline, RULES)
    assert hard_window.errors.sum() / hard_window.words.sum() - baseline.errors.sum() / baseline.words.sum() > 0.05
    assert f.holds is False and abs(f.recent - f.baseline) < 0.03


def test_the_wer_rule_is_judged_at_its_own_stricter_level():
    """+2.5 points (+3.1 seen) over a 6-hour window of short clips: material, and about 3 standard errors, so
    p_value (0.01) would page on noise this size about once a month (benchmarks/alert_roc.py);
    wer_p_value (0.001) decides, and p_value has no say in the WER rule."""
    rng = np.random.default_rng(2)
    wer, words = rng.beta(1.2, 14, 64), rng.integers(2, 17, 64)
    baseline = _catalog_rows(rng, wer, words, 1000, 0)
    recent = _catalog_rows(rng, wer, words, 12, 5000, extra=0.025)
    p = wer_shift(recent, baseline, rules(wer_p_value=1.0)).p_value
    assert RULES.wer_p_value < p < RULES.p_value and wer_shift(recent, baseline, RULES).holds is False
    f = wer_shift(recent, baseline, rules(wer_p_value=p * 1.01, p_value=p / 100))
    assert f.holds is True and (f.recent - f.baseline) * 100 >= RULES.wer_increase_points
    g = wer_shift(recent, baseline, rules(wer_p_value=p * 0.99, p_value=1.0))
    assert g.holds is False and f"not significant (needs p < {p * 0.99:g})" in g.why
    assert "not material" not in g.why


def test_the_benchmark_figures_a_false_alarm_bound_and_an_ideal_tests_power():
    """metrics.detection, which benchmarks/alert_roc.py reports with: none seen in 32 series-months
    bounds the rate at 3.0 / 32 (under the 0.1 target), three seen at 0.24; a shift exactly at the
    test's critical value is detected half the time, one 1.64 sd beyond it 95 %."""
    from scipy.stats import norm

    from voxwatch.metrics.detection import ideal_power, poisson_upper, robust_sd

    assert poisson_upper(0, 32) == pytest.approx(-np.log(0.05) / 32) and poisson_upper(0, 32) < 0.1
    assert poisson_upper(3, 32) == pytest.approx(0.242, abs=1e-3)
    alpha = 0.1 / 1440
    assert ideal_power(norm.isf(alpha), alpha) == pytest.approx(0.5)
    assert ideal_power(norm.isf(alpha) + norm.isf(0.05), alpha) == pytest.approx(0.95)
    calm = np.r_[np.random.default_rng(4).normal(0, 0.1, 4800), np.full(100, 1.0)]  # a slow tick in 48
    assert robust_sd(calm) == pytest.approx(0.1, rel=0.05) and calm.std() > 1.5 * robust_sd(calm)


def test_wer_pairing_uses_only_utterances_present_in_both_windows():
    rng = np.random.default_rng(13)
    wer, words = rng.beta(1, 10, 64), rng.integers(4, 30, 64)
    baseline = _catalog_rows(rng, wer, words, 500, 0)
    recent = _catalog_rows(rng, wer, words, 12, 5000)
    new = _scored(np.full(30, 999), _ticks(3, 10, 5000), np.full(30, 20), np.full(30, 20))  # all wrong, never in baseline
    with_new = _scored(*(np.r_[getattr(recent, c), getattr(new, c)] for c in ("utterances", "ticks", "errors", "words")))
    f, g = wer_shift(recent, baseline, RULES), wer_shift(with_new, baseline, RULES)
    assert (g.recent, g.baseline, g.p_value, g.n_recent) == (f.recent, f.baseline, f.p_value, f.n_recent)
    assert g.holds is False and f.n_recent == recent.utterances.size
    # a baseline utterance the recent window did not draw carries no weight either
    gone = baseline.utterances != recent.utterances[0]
    fewer = _scored(*(getattr(baseline, c)[gone] for c in ("utterances", "ticks", "errors", "words")))
    h = wer_shift(recent, fewer, RULES)
    keep = recent.utterances != recent.utterances[0]
    assert h.recent == pytest.approx(recent.errors[keep].sum() / recent.words[keep].sum())
    assert wer_shift(_scored(np.arange(20) % 5, np.arange(20), np.ones(20), np.full(20, 10)), baseline,
                     RULES).holds is None  # 5 paired utterances, fewer than min_paired_utterances


def test_a_rate_spike_is_clustered_by_tick_and_needs_the_absolute_floor():
    rng = np.random.default_rng(14)

    def window(hits_per_tick: list[int], per_tick: int, first: int) -> tuple[np.ndarray, object]:
        """Ticks of per_tick utterances drawn from a catalog of 64; the first k of a tick fail."""
        hits = np.concatenate([np.arange(per_tick) < k for k in hits_per_tick])
        utterances = np.concatenate([rng.choice(64, per_tick, replace=False) for _ in hits_per_tick])
        return hits, design(utterance=utterances, tick=_ticks(len(hits_per_tick), per_tick, first))

    base, d_base = window([1 if k % 10 == 0 else 0 for k in range(1000)], 10, 0)  # 1 %
    spread, d_spread = window([2] * 12, 10, 5000)  # 20 % in every tick
    f = rate_spike(spread, d_spread, base, d_base, RULES, "error rate")
    assert f.holds is True and (f.recent, f.baseline) == pytest.approx((0.2, 0.01)) and f.p_value < 1e-6
    burst, d_burst = window([10, 10, 4] + [0] * 9, 10, 6000)  # the same 24 failures in 3 of 12 ticks
    g = rate_spike(burst, d_burst, base, d_base, RULES, "error rate")
    assert g.recent == f.recent and g.p_value > f.p_value  # clustered failures are less evidence
    assert fisher_exact([[24, 96], [10, 9990]], alternative="greater").pvalue < 1e-20  # rows say: certain
    one, d_one = window([10] + [0] * 11, 10, 7000)  # one tick where everything failed: +7 points, one cluster
    assert rate_spike(one, d_one, base, d_base, RULES, "timeout rate").holds is False
    small, d_small = window([1] * 12, 10, 8000)  # 10 % in every tick: significant, +9 points < +10
    h = rate_spike(small, d_small, base, d_base, RULES, "error rate")
    assert h.p_value < 0.01 and h.holds is False and "not material" in h.why
    assert rate_spike(spread[:19], design(utterance=np.arange(19), tick=np.arange(19)), base, d_base, RULES,
                      "timeout rate").holds is None  # 19 attempts: not judged


def test_the_rate_kinds_count_exactly_the_statuses_of_metrics_series_rates():
    """Each rate kind is one of metrics.series.RATES (the leaderboard's definition), so each status
    counts in exactly the kind the leaderboard counts it in."""
    from voxwatch.alerts.evaluate import judge
    from voxwatch.alerts.store import Series
    from voxwatch.foundation.series_key import RowsKey

    statuses = sorted(FAILURE_STATUSES | {"ok"})
    series = Series(RowsKey("test/rates@1", "stt-starter-clean", "eu", "4"), "stt", "stt-batch", 0)
    for status in statuses:
        # baseline: 60 ticks of 10 ok rows; recent: 12 ticks of 10 rows, 3 of each 10 with `status`
        # (started_at, status, instrument, S + D + I, N, tick, utterance, panel, latency_ms, connect_ms)
        rows = [(float(k), "ok", None, None, None, k // 10, k % 64, False, 200.0, 20.0) for k in range(600)]
        rows += [(1000.0 + k, status if k % 10 < 3 else "ok", None, None, None, 100 + k // 10, k % 64, False, 200.0,
                  20.0) for k in range(120)]
        checks = {c.kind: c.finding for c in judge(series, ["latency_ms", "connect_ms"], list(zip(*rows)), 1000.0,
                                                   rules(min_baseline=5))}
        counted = {kind for kind, members in SERIES_RATES.items() if status in members}
        assert {k for k in SERIES_RATES if checks[k].recent == pytest.approx(0.3)} == counted
        assert {k for k in SERIES_RATES if checks[k].holds} == counted
        assert all(checks[k].recent == 0 for k in SERIES_RATES if k not in counted)
    assert set(SERIES_RATES) == {"error_rate", "timeout_rate", "inaudible_rate"}


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
        assert result.checks == 5  # latency_ms (rtf is latency over duration), connect_ms, three rates; no WER parts
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
            scans = [i for i, line in enumerate(lines) if " on obs_facts_" in line]  # one per month's partition
            assert scans, "\n".join(lines)
            for at in scans:
                assert "Index Scan using obs_facts_" in lines[at] and "_pkey" in lines[at], "\n".join(lines)
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
    assert result.checks == 10  # test/same and test/changed (latency_ms, connect_ms, 3 rates); never test/emu
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

        table = run_cli("alerts", "list", "--wide", "--store", url).stdout.splitlines()  # a row a line
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
                                  env=kept_env() | env)
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
    assert set(checks) == {7}  # ttfs_ms, first_partial_ms, connect_ms, WER and the three rates, every time
    assert transitions == [] and _alerts(conn) == []


E2E_KEY = "emulator-key-0123456789"
TICK_STREAMS = 24
TICK_EVERY = 6 * H


def _tick(adapter, prompts, run_id: str) -> list[Observation]:
    """One tick measured for real: TICK_STREAMS streams through the Cartesia adapter and the harness."""
    from voxwatch.providers.keys import Secret
    from voxwatch.providers.registry import Registry
    from voxwatch.harness.measure import MeasureContext, measure_item

    model = Registry.default().resolve("cartesia/sonic-3.5-2026-05-04")
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
    registry, model = Registry.default(), Registry.default().resolve("cartesia/sonic-3.5-2026-05-04")
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
        assert before.checks == 7 and before.transitions == []  # ttfa, ttfb, leading silence, connect, 3 rates: quiet

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
