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
from typing import Iterator, Mapping

import psycopg

from voxwatch.config import Alerts
from voxwatch.metrics.specs import for_protocol
from voxwatch.observation import FAILED

from . import store
from .notify import Delivery, deliver
from .rules import Finding, latency_shift, rate_spike, wer_shift
from .store import Alert, Series, Values

RATES = {  # kind -> (the statuses it counts over all attempts, its name in a summary)
    "error_rate": (FAILED - {"timeout", "inaudible"}, "error rate"),  # timeouts and inaudible replies alert on their own
    "timeout_rate": (frozenset({"timeout"}), "timeout rate"),
    "inaudible_rate": (frozenset({"inaudible"}), "inaudible rate"),
}
_STARTED, _STATUS, _INSTRUMENT, _ERRORS, _WORDS, _FIRST_LATENCY = range(6)  # columns of store.series_rows


@dataclass(frozen=True)
class Check:
    """One rule applied to one series at one evaluation."""
    kind: str
    metric: str
    series: Series
    finding: Finding

    @property
    def key(self) -> str:
        s = self.series
        return "|".join((self.kind, s.model_id, self.metric, s.dataset, s.region))

    def values(self, rules: Alerts) -> Values:
        s, f = self.series, self.finding
        what = f"{RATES[self.kind][1]} spike" if self.kind in RATES else f"{self.kind} regression"
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


def _series_checks(s: Series, latency: list[str], rows: list[tuple], recent_from: float,
                   rules: Alerts) -> Iterator[Check]:
    """Every rule on one series' rows (in time order): latency per headline metric in ms (rtf is
    latency_ms over the clip's duration, so latency_ms covers it), pooled WER, and the three rates.
    Only `ok` rows feed latency and WER; every attempt counts in the rates."""
    recent = [r for r in rows if r[_STARTED] >= recent_from]
    baseline = [r for r in rows if r[_STARTED] < recent_from]
    ok_recent = [r for r in recent if r[_STATUS] == "ok"]
    ok_baseline = [r for r in baseline if r[_STATUS] == "ok"]
    for i, metric in enumerate(latency, _FIRST_LATENCY):
        yield Check("latency", metric, s, latency_shift([r[i] for r in ok_recent if r[i] is not None],
                                                        [r[i] for r in ok_baseline if r[i] is not None], rules))
    scored = [r for r in ok_recent if r[_WORDS] is not None]
    if scored:  # a TTS series is compared under its newest instrument only: instruments are never pooled
        instrument = scored[-1][_INSTRUMENT]
        now_ = [r for r in scored if r[_INSTRUMENT] == instrument]
        before = [r for r in ok_baseline if r[_WORDS] is not None and r[_INSTRUMENT] == instrument]
        yield Check("wer", "wer", s, wer_shift([r[_ERRORS] for r in now_], [r[_WORDS] for r in now_],
                                               [r[_ERRORS] for r in before], [r[_WORDS] for r in before], rules))
    for kind, (statuses, what) in RATES.items():
        yield Check(kind, kind, s, rate_spike(sum(r[_STATUS] in statuses for r in recent), len(recent),
                                              sum(r[_STATUS] in statuses for r in baseline), len(baseline), rules, what))


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
        if alert is None:
            if holds:
                state = "firing" if rules.fire_after <= 1 else "pending"
                new_id = store.open_alert(conn, check.key, check.kind, check.series, check.metric, state, now, values)
                out.append((state, new_id))
            continue
        if alert.state == "pending":
            streak = alert.streak + 1
            if not holds:
                state, event, streak = "resolved", "cleared", 0
            elif streak >= rules.fire_after:
                state, event, streak = "firing", "firing", 0
            else:
                state, event = "pending", None
        else:  # firing: the streak counts successive clear evaluations
            streak = 0 if holds else alert.streak + 1
            state, event = ("resolved", "resolved") if streak >= rules.resolve_after else ("firing", None)
        store.update_alert(conn, alert, now, values, state, streak)
        if event is not None:
            out.append((event, alert.id))
    if open_:  # open, but their series had no rows to judge this time
        store.touch(conn, [a.id for a in open_.values()], now)
    return out
