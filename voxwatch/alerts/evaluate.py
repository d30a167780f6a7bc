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
from voxwatch.metrics.sequential import factorise
from voxwatch.metrics.conversation_aggregate import adherence_items
from voxwatch.metrics.series import NOT_AN_ATTEMPT, RATES
from voxwatch.metrics.specs import for_protocol

from voxwatch.alerts import store
from voxwatch.alerts.lifecycle import step
from voxwatch.alerts.notify import Delivery, deliver
from voxwatch.alerts.panel_rules import latency_sequential, outage, wer_sequential
from voxwatch.alerts.rules import (Finding, Scored, adherence_drop, conversation_latency_shift, immaterial_rate, latency_shift,
                                   rate_spike, wer_shift)
from voxwatch.datasets.sampling import panel
from voxwatch.alerts.store import CONVERSATION_TURN_COLUMNS, Alert, ConversationSeries, Series, Values

_STARTED, _STATUS, _INSTRUMENT, _ERRORS, _WORDS, _TICK, _UTTERANCE, _PANEL, _FIRST_LATENCY = range(9)
"""store.series_rows' columns, with _PANEL (the clip's ref there) made a bool: a sentinel panel row."""
WHAT = {"adherence_drop": "instruction adherence drop", "conversation_latency": "conversation V2V regression",
        "hallucination": "hallucination spike"}
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


@dataclass(frozen=True)
class BurstRequest:
    """A pending sequential alert's series, to have its panel measured again at once (a confirmation
    burst, docs/ALERTS.md); the worker bounds them per alert and per series and day."""
    alert_id: int
    key: str
    model_id: str
    dataset: str
    region: str


@dataclass
class Evaluation:
    at: float
    checks: int
    transitions: list[Transition]
    deliveries: list[Delivery] = field(default_factory=list)
    bursts: list[BurstRequest] = field(default_factory=list)


def run(conn: psycopg.Connection, rules: Alerts, now: float, environ: Mapping[str, str] | None = None,
        panel_size: int = 0) -> Evaluation:
    """Evaluate at `now`, then notify the webhooks of each firing and resolution (after the commit: a
    notification is never sent for a transition that did not happen)."""
    result = evaluate(conn, rules, now, panel_size)
    result.deliveries = deliver(conn, [t for t in result.transitions if t.notifies], rules,
                                os.environ if environ is None else environ)
    return result


def evaluate(conn: psycopg.Connection, rules: Alerts, now: float, panel_size: int = 0) -> Evaluation:
    """Check every series measured in the recent window [now - recent_hours, now) against its baseline
    (the baseline_days before that) and apply the lifecycle; rows after `now` are not read, so a test
    can replay history by stepping `now`. `panel_size`: [run] panel_size, the sentinel panel the
    ticks measure (0: none, the window rules alone)."""
    with conn.transaction():
        store.lock(conn)
        checks = list(_checks(conn, rules, now, panel_size))
        moves, pending = _apply(conn, checks, rules, now)
        after = store.alerts_by_id(conn, [alert_id for _, alert_id in moves] + [i for i, _ in pending])
    bursts = [BurstRequest(i, after[i].key, after[i].model_id, after[i].dataset, after[i].region)
              for i, _ in pending if after[i].state == "pending"]
    return Evaluation(now, len(checks), [Transition(event, after[alert_id]) for event, alert_id in moves],
                      bursts=bursts)


def _checks(conn: psycopg.Connection, rules: Alerts, now: float, panel_size: int = 0) -> Iterator[Check]:
    recent_from = now - rules.recent_hours * 3600
    baseline_from = recent_from - rules.baseline_days * 86400
    for s in store.recent_series(conn, recent_from, now, rules.include_emulator):
        if s.recent_attempts < rules.min_recent:
            continue  # no rule could judge it: its baseline is not even read
        latency = [m for m in for_protocol(s.protocol, headline_only=True) if m.unit == "ms" and m.alerted]
        rows = store.series_rows(conn, s, latency, baseline_from, now, rules.include_emulator)
        yield from _series_checks(conn, s, [m.name for m in latency], rows, recent_from, rules, panel_size)
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
        windows[when] = adherence_items((t[column["conversation_id"]], {d: t[column[d]] for d in DIMENSIONS})
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


def _series_checks(conn: psycopg.Connection, s: Series, latency: list[str], rows: list[tuple], recent_from: float,
                   rules: Alerts, panel_size: int) -> Iterator[Check]:
    """store.series_rows' rows, as columns (the clip refs made panel flags), judged by `judge`."""
    columns = list(zip(*rows)) if rows else [()] * (_FIRST_LATENCY + len(latency) + 1)
    columns[_PANEL] = panel_flags(store.clip_utterances(conn, set(columns[_PANEL])), columns[_PANEL], panel_size)
    yield from judge(s, latency, columns, recent_from, rules)


def panel_flags(utterances: Mapping[int, tuple[str, str]], clip_refs: Sequence[int], panel_size: int) -> np.ndarray:
    """Which rows are of the sentinel panel: per family, the panel_size utterance ids of smallest hash
    among those the rows measured (datasets.sampling.panel; a panel utterance is in every tick, so
    it is always among them)."""
    by_family: dict[str, set[str]] = {}
    for family, uid in utterances.values():
        if family is not None and uid is not None:
            by_family.setdefault(family, set()).add(uid)
    pinned = {(f, u) for f, ids in by_family.items() for u in panel(f, sorted(ids), panel_size)}
    return np.array([utterances.get(r) in pinned for r in clip_refs], dtype=bool)


def judge(s: Series, latency: list[str], columns: Sequence[Sequence], recent_from: float,
          rules: Alerts) -> Iterator[Check]:
    """Every rule on one series' rows, given as columns in store.series_rows' order (the benchmark
    calls this with simulated columns): latency per headline metric in ms (rtf is latency_ms over
    the clip's duration, so latency_ms covers it), WER paired by utterance, and the three rates of
    metrics.series.RATES. Only `ok` rows feed latency and WER; every attempt counts in the rates."""
    status = _statuses(columns[_STATUS])
    attempt = ~_any_of(status, NOT_AN_ATTEMPT)
    started = np.asarray(columns[_STARTED], dtype=np.float64)
    recent = started >= recent_from
    ticks, utterances = _codes(columns[_TICK]), _codes(columns[_UTTERANCE])  # labels as integers, once
    ok = status == "ok"
    yield from _hallucination_check(s, latency, columns, ok, recent, ticks, utterances, rules)
    in_panel = np.asarray(columns[_PANEL], dtype=bool) if len(columns[_PANEL]) else np.zeros(status.size, dtype=bool)
    if factorise(ticks[in_panel & ~recent])[0].size >= rules.min_baseline_observations:
        yield from judge_panel(s, latency, columns, in_panel & attempt, recent, rules, status, ticks, utterances)
        yield from _rate_checks(s, status, attempt, recent, ticks, utterances, rules)
        return
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
    yield from _rate_checks(s, status, attempt, recent, ticks, utterances, rules)


def _hallucination_check(s: Series, latency: list[str], columns: Sequence[Sequence], ok: np.ndarray, recent: np.ndarray,
                         ticks: np.ndarray, utterances: np.ndarray, rules: Alerts) -> Iterator[Check]:
    """A series heard on clips without speech (its rows' invented words, the column after the latencies
    where store.series_rows reads it): the share of its scored clips with any invented word (METHOD
    "Hallucination on non-speech"), up by rate_increase_points and significantly, as a rate's spike
    (rules.rate_spike: clustered by utterance and tick). Every tick measures every such clip, so the
    window rule judges them whether or not they are the family's sentinel panel."""
    at = _FIRST_LATENCY + len(latency)
    if len(columns) <= at or not len(columns[at]):
        return
    words = np.asarray(columns[at], dtype=np.float64)  # None (not a clip without speech) becomes NaN
    scored = ok & ~np.isnan(words)
    if not (scored & recent).any():
        return
    hits = np.nan_to_num(words) > 0
    now, before = scored & recent, scored & ~recent
    quick = immaterial_rate(hits[now], hits[before], rules, "hallucination share")
    yield Check("hallucination", "hallucination_rate", s, quick if quick is not None else rate_spike(
        hits[now], design(utterance=utterances[now], tick=ticks[now]), hits[before],
        design(utterance=utterances[before], tick=ticks[before]), rules, "hallucination share"))


def judge_panel(s: Series, latency: list[str], columns: Sequence[Sequence], panel_rows: np.ndarray,
                recent: np.ndarray, rules: Alerts, status: np.ndarray | None = None, ticks: np.ndarray | None = None,
                utterances: np.ndarray | None = None) -> Iterator[Check]:
    """The sequential rules on the sentinel panel's attempts (panel_rows): latency per headline metric
    and WER over each run's paired difference, and the newest run's failures (outage). Each tick and
    each confirmation burst is one observation; the window rules are not applied beside them (their
    false alarms would add to these')."""
    started = np.asarray(columns[_STARTED], dtype=np.float64)[panel_rows]
    status = (_statuses(columns[_STATUS]) if status is None else status)[panel_rows]
    runs = (_codes(columns[_TICK]) if ticks is None else ticks)[panel_rows]
    utts = (_codes(columns[_UTTERANCE]) if utterances is None else utterances)[panel_rows]
    now = recent[panel_rows]
    ok = status == "ok"
    yield Check("outage", "panel_failures", s, outage(~ok, utts, runs, started, now, rules))
    for i, metric in enumerate(latency, _FIRST_LATENCY):
        value = np.asarray(columns[i], dtype=np.float64)[panel_rows]
        has = ok & ~np.isnan(value)
        yield Check("latency", metric, s, latency_sequential(value[has], utts[has], runs[has], started[has], now[has], rules))
    words = np.asarray(columns[_WORDS])[panel_rows]
    scored = ok & (words != None) if words.dtype == object else ok.copy()  # noqa: E711 (element-wise)
    if (scored & now).any():  # a TTS series under its newest instrument only, as the window rule
        instrument = np.asarray(columns[_INSTRUMENT], dtype=object)[panel_rows]
        scored &= instrument == instrument[np.flatnonzero(scored & now)[-1]]
        errors = np.asarray(columns[_ERRORS])[panel_rows]
        yield Check("wer", "wer", s, wer_sequential(errors[scored].astype(np.int64), words[scored].astype(np.int64),
                                                    utts[scored], runs[scored], started[scored], now[scored], rules))


def _rate_checks(s: Series, status: np.ndarray, attempt: np.ndarray, recent: np.ndarray, ticks: np.ndarray,
                 utterances: np.ndarray, rules: Alerts) -> Iterator[Check]:
    """The three rates of metrics.series.RATES, clustered by utterance and tick, over every attempt.
    A rate not up by rate_increase_points cannot hold whatever its p, so its multiway variance (the
    costly part) is computed only for a material rise; the finding then says so without a p."""
    now, before = attempt & recent, attempt & ~recent
    designs: list = []
    for kind, statuses in RATES.items():
        what = kind.replace("_", " ")
        hits = _any_of(status, statuses)
        quick = immaterial_rate(hits[now], hits[before], rules, what)
        if quick is not None:
            yield Check(kind, kind, s, quick)
            continue
        if not designs:
            designs = [design(utterance=utterances[now], tick=ticks[now]),
                       design(utterance=utterances[before], tick=ticks[before])]
        yield Check(kind, kind, s, rate_spike(hits[now], designs[0], hits[before], designs[1], rules, what))


def _statuses(column: Sequence) -> np.ndarray:
    """Row statuses as a string array (fast to compare)."""
    a = np.asarray(column)
    return a.astype(str) if a.dtype == object else a


def _any_of(status: np.ndarray, values) -> np.ndarray:
    out = np.zeros(status.shape, dtype=bool)
    for v in values:
        out |= status == v
    return out


def _codes(labels: Sequence) -> np.ndarray:
    """Labels (run ids, utterance ids; None for a row with none) as integers in their sorted order, so
    the rules factorise them once per series, not once per rule (None sorts first, as its own label)."""
    a = np.asarray(labels)
    if a.dtype.kind in "iu":
        return a
    if a.dtype == object:
        a = np.array(["" if x is None else "\x01" + str(x) for x in a.tolist()])
    return factorise(a)[1]


def stale(finding: Finding, last_evaluated_at: float | None) -> bool:
    """A sequential finding with no observation (run) started since the alert's last evaluation: it
    is the same evidence again, and must not count as a second successive evaluation (a beat
    evaluation between ticks), so the alert stays as it is."""
    return (finding.observed_at is not None and last_evaluated_at is not None
            and finding.observed_at < last_evaluated_at)


def _apply(conn: psycopg.Connection, checks: list[Check], rules: Alerts,
           now: float) -> tuple[list[tuple[str, int]], list[tuple[int, str]]]:
    """Move each key's alert along the lifecycle; returns the transitions (event, alert id) in order,
    and the (alert id, key) of each sequential alert that is pending on a fresh observation (to be
    confirmed by a burst)."""
    open_ = store.open_alerts(conn)
    out: list[tuple[str, int]] = []
    pending: list[tuple[int, str]] = []
    for check in checks:
        alert, holds = open_.pop(check.key, None), check.finding.holds
        if holds is None or (alert is not None and stale(check.finding, alert.last_evaluated_at)):
            if alert is not None:  # too few recent samples, or nothing new: an open alert stays as it is
                store.touch(conn, [alert.id], now)
            continue
        values = check.values(rules)
        move = step(None if alert is None else alert.state, 0 if alert is None else alert.streak, holds, rules,
                    check.finding.decisive)
        if alert is None:
            if move.state is not None:
                new_id = store.open_alert(conn, check.key, check.kind, check.series, check.metric, move.state, now, values)
                out.append((move.state, new_id))
                if move.state == "pending" and check.finding.decisive is not None:
                    pending.append((new_id, check.key))
            continue
        store.update_alert(conn, alert, now, values, move.state, move.streak)
        if move.event is not None:
            out.append((move.event, alert.id))
        if move.state == "pending" and check.finding.decisive is not None:
            pending.append((alert.id, check.key))
    if open_:  # open, but their series had no rows to judge this time
        store.touch(conn, [a.id for a in open_.values()], now)
    return out, pending
