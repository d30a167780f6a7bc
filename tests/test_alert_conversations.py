"""The conversation alert rules: instruction adherence down (clustered by conversation) and
conversation V2V up (conversation against conversation), on hand-built arrays, then through the
evaluation on a real Postgres holding stored conversations, where a drop goes pending and fires.

Evaluations take `now` as a parameter, so history is written with started_at in the past of a
simulated clock and the evaluation is stepped; nothing waits for wall time.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator

import numpy as np
import psycopg
import pytest
from scipy.stats import fisher_exact, mannwhitneyu

from support.postgres import fresh_postgres
from support.conversation_seed import stored_conversation
from voxwatch.alerts import store as alert_store
from voxwatch.alerts.evaluate import evaluate
from voxwatch.alerts.rules import adherence_drop, conversation_latency_shift
from voxwatch.config import Alerts, load
from voxwatch.conversations.records import score_of
from voxwatch.metrics.conversation_aggregate import instruction_adherence
from voxwatch.store.postgres import PostgresStore

RULES = load(environ={}).alerts  # the packaged defaults
T = 2_000_000_000.0
MIN, H, D = 60.0, 3600.0, 86400.0
ITEMS = 30  # decided turn-dimensions per hand-built conversation


def rules(**changes) -> Alerts:
    return replace(RULES, **changes)


def _items(rng: np.random.Generator, rates: list[float], first: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """ITEMS pass/fail items per conversation, the k-th conversation passing each with rates[k]."""
    passed = np.concatenate([rng.random(ITEMS) < r for r in rates])
    return passed, np.repeat([f"c{first + k}" for k in range(len(rates))], ITEMS)


def test_the_packaged_defaults_carry_the_conversation_keys():
    assert (RULES.min_recent_conversations, RULES.min_baseline_conversations, RULES.adherence_drop_points) == \
        (5, 10, 10.0)


def test_an_adherence_drop_fires_when_material_and_significant():
    rng = np.random.default_rng(7)
    base, base_c = _items(rng, [0.9] * 40)
    drop, drop_c = _items(rng, [0.6] * 8, first=1000)
    f = adherence_drop(drop, drop_c, base, base_c, RULES)
    assert f.holds is True and f.p_value < RULES.p_value
    assert (f.recent, f.baseline) == (pytest.approx(drop.mean()), pytest.approx(base.mean()))
    assert (f.n_recent, f.n_baseline) == (8, 40) and "clustered by conversation" in f.why


def test_a_small_drop_is_not_material_and_one_bad_conversation_is_one_cluster():
    rng = np.random.default_rng(8)
    base, base_c = _items(rng, [0.9] * 40)
    slight, slight_c = _items(rng, [0.86] * 30, first=1000)  # -4 points over many conversations
    f = adherence_drop(slight, slight_c, base, base_c, RULES)
    assert f.holds is False and "not material" in f.why

    # five good conversations and one that failed every item: 15 points down, and as rows (180
    # independent items) certain; as six conversations it is one bad draw
    passed = np.concatenate([np.r_[np.ones(27, bool), np.zeros(3, bool)]] * 5 + [np.zeros(ITEMS, bool)])
    labels = np.repeat([f"r{k}" for k in range(6)], ITEMS)
    assert (base.mean() - passed.mean()) * 100 >= RULES.adherence_drop_points
    rows_p = fisher_exact([[int((~passed).sum()), int(passed.sum())], [int((~base).sum()), int(base.sum())]],
                          alternative="greater").pvalue
    assert rows_p < 1e-6
    f = adherence_drop(passed, labels, base, base_c, RULES)
    assert f.holds is False and f.p_value >= RULES.p_value and "not significant" in f.why


def test_too_few_conversations_are_not_judged_and_no_baseline_is_clear():
    rng = np.random.default_rng(9)
    base, base_c = _items(rng, [0.9] * 40)
    few, few_c = _items(rng, [0.2] * (RULES.min_recent_conversations - 1), first=1000)
    f = adherence_drop(few, few_c, base, base_c, RULES)
    assert f.holds is None and f.n_recent == RULES.min_recent_conversations - 1 and "not judged" in f.why
    drop, drop_c = _items(rng, [0.2] * 8, first=2000)
    short, short_c = base[:ITEMS * 6], base_c[:ITEMS * 6]  # six baseline conversations, fewer than ten
    f = adherence_drop(drop, drop_c, short, short_c, RULES)
    assert f.holds is False and "no baseline yet" in f.why
    v = conversation_latency_shift(np.full(ITEMS * 4, 900.0), few_c, np.full(base.size, 700.0), base_c, RULES)
    assert v.holds is None


def _v2v(rng: np.random.Generator, medians: list[float], first: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Eight turns per conversation around each conversation's median."""
    values = np.concatenate([m * rng.lognormal(0, 0.2, 8) for m in medians])
    return values, np.repeat([f"c{first + k}" for k in range(len(medians))], 8)


def test_conversation_v2v_compares_conversation_medians():
    rng = np.random.default_rng(10)
    base, base_c = _v2v(rng, list(700 * rng.lognormal(0, 0.1, 40)))
    slow, slow_c = _v2v(rng, list(1000 * rng.lognormal(0, 0.1, 8)), first=1000)
    f = conversation_latency_shift(slow, slow_c, base, base_c, RULES)
    assert f.holds is True and (f.n_recent, f.n_baseline) == (8, 40) and "conversation medians" in f.why

    # one conversation five times slower among eight: rows shift, the median of conversations does not
    one, one_c = _v2v(rng, [700.0] * 7 + [3500.0], first=2000)
    assert mannwhitneyu(one, base, alternative="greater").pvalue < RULES.p_value  # turns as the unit would fire
    assert one.mean() >= 1.2 * base.mean() and one.mean() - base.mean() >= RULES.latency_increase_ms
    f = conversation_latency_shift(one, one_c, base, base_c, RULES)
    assert f.holds is False and f.recent < 800


# --- through the evaluation, on a real Postgres -------------------------------------------------------

MODEL, EMULATED = "openai/gpt-realtime-2025-08-28", "test/emulated-agent@1"


@pytest.fixture
def db() -> Iterator[tuple[PostgresStore, psycopg.Connection]]:
    with fresh_postgres() as url:
        store = PostgresStore(url)
        try:
            with alert_store.connected(url, "cannot use") as conn:
                yield store, conn
        finally:
            store.close()


def test_an_adherence_drop_in_stored_conversations_fires_after_fire_after_evaluations(db):
    store, conn = db
    rng = np.random.default_rng(11)
    stored = []

    def add(prefix: str, count: int, start: float, step: float, model: str = MODEL, **kw) -> None:
        for k in range(count):
            row, turns = stored_conversation(rng, f"{prefix}-{k}", model=model, scenario="clinic-desk",
                                             persona="default", region="eu-west", started_at=start + k * step,
                                             turns=10, **kw)
            assert store.add_conversation(row, turns)
            stored.append((row, turns))

    add("base", 24, T - 10 * D, 9 * H, adherence=0.93)
    add("drop", 8, T - 5 * H, 30 * MIN, adherence=0.55)
    add("emul", 8, T - 5 * H, 30 * MIN, adherence=0.0, model=EMULATED, emulator=True)  # never judged
    add("emul-base", 12, T - 9 * D, 12 * H, adherence=0.95, model=EMULATED, emulator=True)
    key = f"adherence_drop|{MODEL}|instruction_adherence|clinic-desk/default|eu-west"

    first = evaluate(conn, rules(), T)
    assert [(t.event, t.alert.key) for t in first.transitions] == [("pending", key)]
    assert first.checks == 2  # adherence and V2V of the one non-emulated series
    alert = first.transitions[0].alert
    recent = [score_of(r, t) for r, t in stored if r.conversation_id.startswith("drop-")]
    baseline = [score_of(r, t) for r, t in stored if r.conversation_id.startswith("base-")]
    assert alert.recent_value == pytest.approx(instruction_adherence(recent).rate)  # the one definition
    assert alert.baseline_value == pytest.approx(instruction_adherence(baseline).rate)
    assert (alert.n_recent, alert.n_baseline, alert.board, alert.dataset) == (8, 24, "s2s", "clinic-desk/default")
    assert alert.summary.startswith("instruction adherence drop: ") and alert.p_value < RULES.p_value

    second = evaluate(conn, rules(), T + 15 * MIN)
    assert [(t.event, t.alert.key, t.alert.fired_at) for t in second.transitions] == [("firing", key, T + 15 * MIN)]
    states = {a.key: a.state for a in alert_store.list_alerts(conn, "all", 100)}
    assert states == {key: "firing"}  # V2V did not move, and the emulated series was never read

    everything = evaluate(conn, rules(include_emulator=True), T + 30 * MIN)
    assert everything.checks == 4  # asked for, the emulated series is judged too (its own key)
    assert any(t.alert.model_id == EMULATED for t in everything.transitions)
