"""One evaluation: every recently measured series checked by the rules, and each alert moved along its
lifecycle (docs/ALERTS.md "Lifecycle").

A key (kind|model_id|metric|dataset|region) has at most one open alert. The condition must hold at
`fire_after` successive evaluations before a pending alert fires, and be clear at `resolve_after`
successive evaluations before a firing one resolves, so one noisy window neither pages nor
un-pages anyone. A pending alert whose condition clears is resolved without ever firing (and
without a notification). The evaluation runs in one transaction under an advisory lock: two
evaluators at once take turns, and the second sees the first's transitions.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterator, Mapping, Sequence

import psycopg

import numpy as np

from voxwatch.config import Alerts
from voxwatch.foundation.scenario import DIMENSIONS
from voxwatch.metrics.clustered import design
from voxwatch.metrics.conversation_aggregate import decided_items
from voxwatch.metrics.series import NOT_AN_ATTEMPT, RATES
from voxwatch.metrics.specs import for_protocol

from voxwatch.alerts import store
from voxwatch.alerts.lifecycle import step
from voxwatch.alerts.notify import Delivery, deliver
from voxwatch.alerts.rules import (Finding, Scored, adherence_drop, conversation_latency_shift, latency_shift, rate_spike,
                    wer_shift)
from voxwatch.alerts.store import CONVERSATION_TURN_COLUMNS, Alert, ConversationSeries, Series, Values

_STARTED, _STATUS, _INSTRUMENT, _ERRORS, _WORDS, _TICK, _UTTERANCE, _FIRST_LATENCY = range(8)  # store.series_rows
WHAT = {"adherence_drop": "instruction adherence drop", "conversation_latency": "conversation V2V regression"}
"""How a summary names the conversation kinds; a rate kind is a spike, any other kind a regression."""


@dataclass(frozen=True)
class Check:
    """One rule applied to one series at one evaluation."""
    kind: str
    metric: str
    series: Series
    finding: Finding

    @property
    def key(self) -> str:
        s = self.series.key
        return "|".join((self.kind, s.model_id, self.metric, s.dataset, s.region))

    def values(self, rules: Alerts) -> Values:
        s, f = self.series.key, self.finding
        what = WHAT.get(self.kind) or (f"{self.kind.replace('_', ' ')} spike" if self.kind in RATES
                                       else f"{self.kind} regression")
        summary = (f"{what}: {s.model_id} {self.metric} on {s.dataset} @ {s.region} (method {s.method_version}), "
                   f"last {rules.recent_hours:g} h vs the {rules.baseline_days:g} d before: {f.why}")
        return Values(f.recent, f.baseline, f.p_value, f.n_recent, f.n_baseline, summary)


@dataclass(frozen=True)
class Transition:
    """An alert changing state: opened (pending), firing, resolved (after firing) or cleared (never fired)."""
    event: str
    alert: Alert

    @property
    def notifies(self) -> bool:
        return self.event in ("firing", "resolved")


@dataclass
class Evaluation:
    at: float
    checks: int
    transitions: list[Transition]
    deliveries: list[Delivery] = field(default_factory=list)


def run(conn: psycopg.Connection, rules: Alerts, now: float, environ: Mapping[str, str] | None = None) -> Evaluation:
    """Evaluate at `now`, then notify the webhooks of each firing and resolution (after the commit: a
    notification is never sent for a transition that did not happen)."""
    result = evaluate(conn, rules, now)
    result.deliveries = deliver(conn, [t for t in result.transitions if t.notifies], rules,
                                os.environ if environ is None else environ)
    return result


def evaluate(conn: psycopg.Connection, rules: Alerts, now: float) -> Evaluation:
    """Check every series measured in the recent window [now - recent_hours, now) against its baseline
    (the baseline_days before that) and apply the lifecycle; rows after `now` are not read, so a test
    can replay history by stepping `now`."""
    with conn.transaction():
        store.lock(conn)
        checks = list(_checks(conn, rules, now))
        moves = _apply(conn, checks, rules, now)
        after = store.alerts_by_id(conn, [alert_id for _, alert_id in moves])
    return Evaluation(now, len(checks), [Transition(event, after[alert_id]) for event, alert_id in moves])


def _checks(conn: psycopg.Connection, rules: Alerts, now: float) -> Iterator[Check]:
    recent_from = now - rules.recent_hours * 3600
    baseline_from = recent_from - rules.baseline_days * 86400
    for s in store.recent_series(conn, recent_from, now, rules.include_emulator):
        if s.recent_attempts < rules.min_recent:
            continue  # no rule could judge it: its baseline is not even read
        latency = [m for m in for_protocol(s.protocol, headline_only=True) if m.unit == "ms"]
        rows = store.series_rows(conn, s, latency, baseline_from, now, rules.include_emulator)
        yield from _series_checks(s, [m.name for m in latency], rows, recent_from, rules)
    for c in store.recent_conversation_series(conn, recent_from, now, rules.include_emulator):
        if c.recent_conversations < rules.min_recent_conversations:
            continue  # no conversation rule could judge it
        turns = store.conversation_turns(conn, c, baseline_from, now, rules.include_emulator)
        yield from judge_conversations(c, turns, recent_from, rules)


def judge_conversations(c: ConversationSeries, turns: list[tuple], recent_from: float,
                        rules: Alerts) -> Iterator[Check]:
    """The conversation rules on one series' turns (store.conversation_turns' rows): instruction
    adherence over every decided turn-dimension, and V2V over the turns that have one, each labelled
    with its conversation, recent when its conversation started at or after recent_from."""
    column = {name: i for i, name in enumerate(CONVERSATION_TURN_COLUMNS)}
    windows = {}
    for when in (True, False):  # recent, then baseline: adherence's items as metrics defines them
        chosen = [t for t in turns if (t[column["started_at"]] >= recent_from) == when]
        windows[when] = decided_items((t[column["conversation_id"]], {d: t[column[d]] for d in DIMENSIONS})
                                      for t in chosen)
    (p_now, lab_now), (p_before, lab_before) = windows[True], windows[False]
    yield Check("adherence_drop", "instruction_adherence", c.series,
                adherence_drop(p_now, lab_now, p_before, lab_before, rules))
    v2v, v2v_labels, v2v_recent = [], [], []
    for t in turns:
        if t[column["v2v_ms"]] is not None:
            v2v.append(t[column["v2v_ms"]])
            v2v_labels.append(t[column["conversation_id"]])
            v2v_recent.append(t[column["started_at"]] >= recent_from)
    v, vlab, vnow = (np.asarray(v2v, dtype=np.float64), np.asarray(v2v_labels, dtype=object),
                     np.asarray(v2v_recent, dtype=bool))
    yield Check("conversation_latency", "v2v_ms", c.series,
                conversation_latency_shift(v[vnow], vlab[vnow], v[~vnow], vlab[~vnow], rules))


def _series_checks(s: Series, latency: list[str], rows: list[tuple], recent_from: float,
                   rules: Alerts) -> Iterator[Check]:
    """store.series_rows' rows, as columns, judged by `judge`."""
    columns = list(zip(*rows)) if rows else [()] * (_FIRST_LATENCY + len(latency))
    yield from judge(s, latency, columns, recent_from, rules)


def judge(s: Series, latency: list[str], columns: Sequence[Sequence], recent_from: float,
          rules: Alerts) -> Iterator[Check]:
    """Every rule on one series' rows, given as columns in store.series_rows' order (the benchmark
    calls this with simulated columns): latency per headline metric in ms (rtf is latency_ms over
    the clip's duration, so latency_ms covers it), WER paired by utterance, and the three rates of
    metrics.series.RATES. Only `ok` rows feed latency and WER; every attempt counts in the rates."""
    status = np.asarray(columns[_STATUS], dtype=object)
    attempt = ~np.isin(status, list(NOT_AN_ATTEMPT))
    recent = np.asarray(columns[_STARTED], dtype=np.float64) >= recent_from
    ticks, utterances = np.asarray(columns[_TICK]), np.asarray(columns[_UTTERANCE])
    ok = status == "ok"
    for i, metric in enumerate(latency, _FIRST_LATENCY):
        value = np.asarray(columns[i], dtype=np.float64)  # None (not measured) becomes NaN
        has = ok & ~np.isnan(value)
        now, before = has & recent, has & ~recent
        yield Check("latency", metric, s, latency_shift(value[now], ticks[now], value[before], ticks[before], rules))
    words = np.asarray(columns[_WORDS], dtype=object)
    scored = ok & (words != None)  # noqa: E711 (element-wise)
    if (scored & recent).any():  # a TTS series is compared under its newest instrument only: never pooled
        instrument = np.asarray(columns[_INSTRUMENT], dtype=object)
        scored &= instrument == instrument[np.flatnonzero(scored & recent)[-1]]
        errors = np.asarray(columns[_ERRORS], dtype=object)

        def window(keep: np.ndarray) -> Scored:
            return Scored(utterances[keep], ticks[keep], errors[keep].astype(np.int64), words[keep].astype(np.int64))

        yield Check("wer", "wer", s, wer_shift(window(scored & recent), window(scored & ~recent), rules))
    now, before = attempt & recent, attempt & ~recent
    d_now = design(utterance=utterances[now], tick=ticks[now])
    d_before = design(utterance=utterances[before], tick=ticks[before])
    for kind, statuses in RATES.items():
        hits = np.isin(status, list(statuses))
        yield Check(kind, kind, s, rate_spike(hits[now], d_now, hits[before], d_before, rules, kind.replace("_", " ")))


def _apply(conn: psycopg.Connection, checks: list[Check], rules: Alerts, now: float) -> list[tuple[str, int]]:
    """Move each key's alert along the lifecycle; returns the transitions (event, alert id) in order."""
    open_ = store.open_alerts(conn)
    out: list[tuple[str, int]] = []
    for check in checks:
        alert, holds = open_.pop(check.key, None), check.finding.holds
        if holds is None:  # too few recent samples: an open alert stays as it is
            if alert is not None:
                store.touch(conn, [alert.id], now)
            continue
        values = check.values(rules)
        move = step(None if alert is None else alert.state, 0 if alert is None else alert.streak, holds, rules)
        if alert is None:
            if move.state is not None:
                new_id = store.open_alert(conn, check.key, check.kind, check.series, check.metric, move.state, now, values)
                out.append((move.state, new_id))
            continue
        store.update_alert(conn, alert, now, values, move.state, move.streak)
        if move.event is not None:
            out.append((move.event, alert.id))
    if open_:  # open, but their series had no rows to judge this time
        store.touch(conn, [a.id for a in open_.values()], now)
    return out
