"""The Postgres fact table's monthly partitions: made ahead, made on a write that needs one, detached to archive.

`obs_facts` is partitioned by RANGE on `run_month`, the UTC month (yyyymm) of the first row stored of
the row's run, kept per run in `obs_runs`. A run's month, not each row's, so that the idempotency key
(run, model, dataset, clip, attempt) stays one key: a redelivered task measures again at another time,
and its row must meet the first one in the same partition for the primary key (which holds the
partition key, as Postgres requires) to refuse it. A run is one tick: its rows are minutes apart.

A partition is a plain table `obs_facts_YYYY_MM`, created and then attached (ATTACH takes a lock that
concurrent writers' COPYs do not wait on, where CREATE ... PARTITION OF would block them all). The
store makes the current and the next month's at every open; a writer makes the month of a new run
that has none before it writes (a backfill, a worker running across a month's end). A detached month
is a table of its own, kept for archiving (`voxwatch db detach-before YYYY-MM`): its rows leave every
read, and a write into that month is refused until it is attached again.
"""

from __future__ import annotations

import re
import time
from typing import Iterable

import psycopg

RUNS_DDL = "CREATE TABLE obs_runs (run_ref integer PRIMARY KEY, month integer NOT NULL)"
"""Each run's partition: the month of its first row stored (what `run_month` holds on its rows)."""
_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('voxwatch partitions', 0))"
_ATTACHED = ("SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
             "WHERE i.inhparent = 'obs_facts'::regclass")
_MONTH = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")


def month_of(at: float) -> int:
    """The UTC month (yyyymm) of a unix time."""
    t = time.gmtime(at)
    return t.tm_year * 100 + t.tm_mon


def next_month(month: int) -> int:
    return month + 89 if month % 100 == 12 else month + 1


def table_of(month: int) -> str:
    return f"obs_facts_{month // 100:04d}_{month % 100:02d}"


def parse_month(text: str) -> int:
    """YYYY-MM as yyyymm; ValueError saying what was expected."""
    found = _MONTH.match(text.strip())
    if not found:
        raise ValueError(f"expected a month as YYYY-MM (e.g. 2026-01), got {text!r:.40}")
    return int(found[1]) * 100 + int(found[2])


def attached(cur: psycopg.Cursor) -> set[str]:
    return {name for (name,) in cur.execute(_ATTACHED)}


def ensure(cur: psycopg.Cursor, months: Iterable[int]) -> None:
    """Make (create, then attach) the partitions of these months that are missing, in the cursor's
    transaction. A month whose table exists but is detached is refused: it was archived."""
    wanted = sorted(set(months))
    if not wanted or {table_of(m) for m in wanted} <= attached(cur):
        return
    cur.execute(_LOCK)
    have = attached(cur)  # again, under the lock: another writer may have made them meanwhile
    for month in wanted:
        name = table_of(month)
        if name in have:
            continue
        if cur.execute("SELECT to_regclass(%s)", (name,)).fetchone()[0] is not None:
            raise psycopg.errors.RaiseException(
                f"the month {month // 100}-{month % 100:02d} is detached ({name}): attach it again to store rows "
                f"of its runs (ALTER TABLE obs_facts ATTACH PARTITION {name} FOR VALUES FROM ({month}) "
                f"TO ({next_month(month)}))")
        cur.execute(f"CREATE TABLE {name} (LIKE obs_facts INCLUDING DEFAULTS)")
        cur.execute(f"ALTER TABLE obs_facts ATTACH PARTITION {name} FOR VALUES FROM ({month}) TO ({next_month(month)})")


def ahead(cur: psycopg.Cursor, now: float | None = None) -> None:
    """The current and the next month's partitions (every open makes them, so writes rarely must).
    A role that may not make them (the web's, which opens the store to add ratings) leaves them to
    the next writer: a reader needs no partition of a month with no rows."""
    month = month_of(time.time() if now is None else now)
    try:
        with cur.connection.transaction():  # a savepoint: the refusal must not abort the caller's transaction
            ensure(cur, (month, next_month(month)))
    except psycopg.errors.InsufficientPrivilege:
        pass


def detach_before(conn: psycopg.Connection, month: int) -> list[str]:
    """Detach every partition of a month before `month` (its table stays, for archiving); returns their
    names, oldest first. A row of a detached month leaves every read: the aggregates of the windows
    it had left already are unchanged."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute(_LOCK)
        old = sorted(n for n in attached(cur) if int(n[10:14] + n[15:17]) < month)
        for name in old:
            cur.execute(f"ALTER TABLE obs_facts DETACH PARTITION {name}")
    return old
