"""The SQL of the alerts: the observations and conversations an evaluation reads, and the alerts and
alert_deliveries tables (migrations 4 and 5). Every statement is here, so the rest of the package is
Python over rows."""

from __future__ import annotations

from dataclasses import dataclass, fields
from contextlib import contextmanager
from typing import Iterable, Iterator

import psycopg

from voxwatch.foundation.scenario import DIMENSIONS
from voxwatch.foundation.series_key import RowsKey
from voxwatch.metrics.specs import MetricSpec
from voxwatch.foundation.store_url import StoreError
from voxwatch.store import layout
from voxwatch.store.postgres import PostgresStore
from voxwatch.foundation.store_url import POSTGRES, store_kind

EVALUATION_LOCK = 0x766F7861  # pg_advisory_xact_lock key: one evaluation at a time ("voxa")
STATES = ("pending", "firing", "resolved")


@dataclass(frozen=True)
class Alert:
    """A row of the alerts table."""
    id: int
    key: str
    kind: str
    board: str
    model_id: str
    metric: str
    dataset: str
    region: str
    method_version: str
    state: str
    opened_at: float
    fired_at: float | None
    resolved_at: float | None
    last_evaluated_at: float
    recent_value: float | None
    baseline_value: float | None
    p_value: float | None
    n_recent: int | None
    n_baseline: int | None
    summary: str
    streak: int  # successive evaluations pointing to the next transition (pending: held; firing: clear)

    @property
    def rows_key(self) -> RowsKey:
        """The series the alert is about, as a board's lines find their alerts."""
        return RowsKey(self.model_id, self.dataset, self.region, self.method_version)


@dataclass(frozen=True)
class Series:
    """What one evaluation judges: the newest method version of a (model, dataset, region) seen recently,
    with the board and protocol of its rows (the rules read its protocol's metrics)."""
    key: RowsKey
    board: str
    protocol: str
    recent_attempts: int


@dataclass(frozen=True)
class Values:
    """The numbers an evaluation writes on an alert."""
    recent_value: float | None
    baseline_value: float | None
    p_value: float | None
    n_recent: int
    n_baseline: int
    summary: str


@dataclass(frozen=True)
class ConversationSeries:
    """What one evaluation judges of the conversations: a (model, scenario, persona, region) seen
    recently, at the method version, scenario version and length (turns held, whole or a trial) of
    its newest conversation; conversations of another of these are not pooled with it."""
    model_id: str
    scenario: str
    persona: str
    region: str
    method_version: str
    scenario_version: int
    turns: int
    whole: bool
    recent_conversations: int

    @property
    def series(self) -> Series:
        """As the alerts table keys it: the dataset column carries scenario/persona."""
        return Series(RowsKey(self.model_id, f"{self.scenario}/{self.persona}", self.region, self.method_version),
                      "s2s", "conversation", self.recent_conversations)


_ALERT_COLUMNS = ", ".join(f.name for f in fields(Alert))
_VALUE_COLUMNS = [f.name for f in fields(Values)]
_EMULATOR = " AND emulator IS NOT TRUE"


@contextmanager
def connected(url: str, what: str) -> Iterator[psycopg.Connection]:
    """The Postgres store's connection (PostgresStore opens and migrates it); a database error in the
    block becomes a StoreError that says `what` failed and names the store without its password."""
    if store_kind(url) != POSTGRES:
        raise StoreError("alerts need the Postgres store (postgresql://...): they run in distributed mode")
    store = PostgresStore(url)
    try:
        yield store.connection()
    except psycopg.Error as exc:
        raise store.error(what, exc) from None
    finally:
        store.close()


def lock(conn: psycopg.Connection) -> None:
    """Serialize evaluations until the end of the caller's transaction (two beats, or beat and a manual
    `voxwatch alerts evaluate`): the second sees the first's transitions, so none is notified twice."""
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (EVALUATION_LOCK,))


def recent_series(conn: psycopg.Connection, since: float, until: float, include_emulator: bool) -> list[Series]:
    """Each (model, dataset, region) with rows in [since, until), at the method version of its newest row
    (rows of an older method version in the window are not pooled with it, and not judged)."""
    rows = conn.execute(
        "SELECT model_id, dataset, region, method_version, board, protocol, count(*), max(started_at) "
        "FROM observations_during(%s, %s) WHERE started_at < %s" + ("" if include_emulator else _EMULATOR)
        + " GROUP BY model_id, dataset, region, method_version, board, protocol", (since, until, until)).fetchall()
    newest: dict[tuple[str, str, str], tuple] = {}
    for r in rows:
        if r[:3] not in newest or r[7] > newest[r[:3]][7]:
            newest[r[:3]] = r
    return [Series(RowsKey._make(r[:4]), *r[4:7]) for _, r in sorted(newest.items())]


_IDENTITY = ("model_id", "scenario", "persona", "region", "method_version", "scenario_version", "turns", "whole")


def recent_conversation_series(conn: psycopg.Connection, since: float, until: float,
                               include_emulator: bool) -> list[ConversationSeries]:
    """Each (model, scenario, persona, region) with conversations started in [since, until), at the
    identity of its newest conversation."""
    rows = conn.execute(
        f"SELECT {', '.join(_IDENTITY)}, count(*), max(started_at) FROM conversations "
        "WHERE started_at >= %s AND started_at < %s" + ("" if include_emulator else _EMULATOR)
        + f" GROUP BY {', '.join(_IDENTITY)}", (since, until)).fetchall()
    newest: dict[tuple, tuple] = {}
    for r in rows:
        if r[:4] not in newest or r[9] > newest[r[:4]][9]:
            newest[r[:4]] = r
    return [ConversationSeries(*r[:9]) for _, r in sorted(newest.items())]


CONVERSATION_TURN_COLUMNS = ("conversation_id", "started_at", *DIMENSIONS, "v2v_ms")
"""What conversation_turns reads per turn: its conversation, when that started, each dimension's verdict, V2V."""


def conversation_turns(conn: psycopg.Connection, s: ConversationSeries, since: float, until: float,
                       include_emulator: bool) -> list[tuple]:
    """The turns of the series' conversations started in [since, until), in CONVERSATION_TURN_COLUMNS."""
    cols = ", ".join(f"c.{c}" if c in ("conversation_id", "started_at") else f"t.{c}" for c in CONVERSATION_TURN_COLUMNS)
    where = " AND ".join(f"c.{c} = %({c})s" for c in _IDENTITY)
    return conn.execute(
        f"SELECT {cols} FROM conversations c JOIN conversation_turns t ON t.conversation_id = c.conversation_id "
        f"WHERE {where} AND c.started_at >= %(since)s AND c.started_at < %(until)s"
        + ("" if include_emulator else " AND c.emulator IS NOT TRUE")
        + " ORDER BY c.started_at, c.conversation_id, t.turn_index",
        {**{c: getattr(s, c) for c in _IDENTITY}, "since": since, "until": until}).fetchall()


def series_sql(latency: list[MetricSpec], include_emulator: bool) -> str:
    """The read of one series' rows in [since, until): started_at, status, instrument_id, S + D + I, N,
    the row's tick (its run) and utterance (its clip), as interned refs (the rules only group by
    them), its clip's obs_clips ref (clip_utterances names it: the panel), then each latency metric, then
    its invented words (a clip without speech's); by key, run by run, as the aggregates' refresh reads
    (layout.series_sql)."""
    cols = ", ".join(["f.started_at", "f.status", "c.instrument_id", "f.substitutions + f.deletions + f.insertions",
                      "f.ref_words", "f.run_id_ref", "f.clip_id_ref", "f.clip_ref"] + [f"f.{m.name}" for m in latency]
                     + ["f.invented_words"])
    return layout.series_sql(cols, until=True, emulator=include_emulator)


def series_rows(conn: psycopg.Connection, s: Series, latency: list[MetricSpec], since: float, until: float,
                include_emulator: bool) -> list[tuple]:
    with conn.cursor(binary=True) as cur:
        return cur.execute(series_sql(latency, include_emulator),
                           {**s.key._asdict(), "since": since, "until": until}).fetchall()


def clip_utterances(conn: psycopg.Connection, clip_refs: Iterable[int]) -> dict[int, tuple[str, str]]:
    """The (family, utterance_id) of each obs_clips ref: what the sentinel panel is pinned by."""
    return {r[0]: (r[1], r[2]) for r in conn.execute(
        "SELECT ref, family, utterance_id FROM obs_clips WHERE ref = ANY(%s)", ([int(x) for x in clip_refs],))}


def open_alerts(conn: psycopg.Connection) -> dict[str, Alert]:
    """The open (pending or firing) alert of each key; the alerts_open index allows one per key."""
    return {a.key: a for a in (Alert(*r) for r in conn.execute(
        f"SELECT {_ALERT_COLUMNS} FROM alerts WHERE state <> 'resolved'"))}


def alerts_by_id(conn: psycopg.Connection, ids: Iterable[int]) -> dict[int, Alert]:
    return {r[0]: Alert(*r) for r in conn.execute(f"SELECT {_ALERT_COLUMNS} FROM alerts WHERE id = ANY(%s)",
                                                  (list(ids),))}


def open_alert(conn: psycopg.Connection, key: str, kind: str, s: Series, metric: str, state: str, at: float,
               values: Values) -> int:
    """A new alert (a key with no open alert); returns its id."""
    return conn.execute(
        "INSERT INTO alerts (key, kind, board, model_id, metric, dataset, region, method_version, state, opened_at, "
        f"fired_at, last_evaluated_at, {', '.join(_VALUE_COLUMNS)}, streak) "
        f"VALUES ({', '.join(['%s'] * (12 + len(_VALUE_COLUMNS)))}, 1) RETURNING id",
        (key, kind, s.board, s.key.model_id, metric, s.key.dataset, s.key.region, s.key.method_version, state, at,
         at if state == "firing" else None, at, *[getattr(values, c) for c in _VALUE_COLUMNS])).fetchone()[0]


def update_alert(conn: psycopg.Connection, alert: Alert, at: float, values: Values, state: str, streak: int) -> None:
    """An evaluation of an open alert: its latest numbers, state and streak; a transition stamps its time."""
    fired_at = at if state == "firing" and alert.state == "pending" else alert.fired_at
    resolved_at = at if state == "resolved" else None
    conn.execute(
        f"UPDATE alerts SET last_evaluated_at = %s, {', '.join(f'{c} = %s' for c in _VALUE_COLUMNS)}, "
        "state = %s, fired_at = %s, resolved_at = %s, streak = %s WHERE id = %s",
        (at, *[getattr(values, c) for c in _VALUE_COLUMNS], state, fired_at, resolved_at, streak, alert.id))


def touch(conn: psycopg.Connection, alert_ids: list[int], at: float) -> None:
    """Open alerts whose series could not be judged this time: evaluated, nothing else changes."""
    conn.execute("UPDATE alerts SET last_evaluated_at = %s WHERE id = ANY(%s)", (at, alert_ids))


def record_delivery(conn: psycopg.Connection, alert_id: int, event: str, target: str, attempt: int, at: float,
                    ok: bool, status_code: int | None, error: str | None) -> None:
    """One delivery attempt, committed at once (a later attempt's crash keeps the record of this one)."""
    conn.execute("INSERT INTO alert_deliveries (alert_id, event, target, attempt, at, ok, status_code, error) "
                 "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", (alert_id, event, target, attempt, at, ok, status_code, error))


def list_alerts(conn: psycopg.Connection, state: str, limit: int) -> list[Alert]:
    """Alerts in one state (or all), newest first."""
    where, args = ("", ()) if state == "all" else (" WHERE state = %s", (state,))
    return [Alert(*r) for r in conn.execute(
        f"SELECT {_ALERT_COLUMNS} FROM alerts{where} ORDER BY coalesce(resolved_at, fired_at, opened_at) DESC, "
        f"id DESC LIMIT %s", (*args, limit))]
