"""The Postgres store's observations as whole rows, on any connection: what the store's own reads, the
comparisons' refresh and the web app's read-only connection stream (which must not open a
PostgresStore: that migrates)."""

from __future__ import annotations

from math import inf as INF
from typing import Iterator

import psycopg

from voxwatch.foundation.observation import FIELDS, KEY, Observation
from voxwatch.metrics.witness import STALLED
from voxwatch.store.row_filter import RowFilter

_COLS = ", ".join(FIELDS)


def _selected(columns: str, only: RowFilter, condition: str | None = None) -> tuple[str, list]:
    """SELECT `columns` of the rows `only` selects (and `condition` holds): a span's found through its
    runs (docs/STORE.md)."""
    where, args = only.where("%s")
    if condition:
        where += (" AND " if where else " WHERE ") + condition
    if only.since is None and only.until is None:
        return f"SELECT {columns} FROM observations" + where, args
    span = [-INF if only.since is None else only.since, INF if only.until is None else only.until]
    return f"SELECT {columns} FROM observations_during(%s, %s)" + where, [*span, *args]


def _planned(cur: psycopg.Cursor) -> None:
    # hash joins: the planner takes a span's runs (an array from a subquery) for a handful of rows and
    # would scan each dictionary once per fact row (a day of a year-scale store's STT rows: 229 s)
    cur.execute("SET LOCAL enable_nestloop = off")


def stream_observations(conn: psycopg.Connection, only: RowFilter) -> Iterator[Observation]:
    """The rows `only` selects, in time order."""
    sql, args = _selected(_COLS, only)
    with conn.transaction(), conn.cursor() as cur:
        _planned(cur)
        for row in cur.stream(sql + " ORDER BY started_at, " + ", ".join(KEY), args, size=1000):
            yield Observation(*row)


def emulated_counts(conn: psycopg.Connection, only: RowFilter) -> dict[str, int]:
    """Each model's rows of those `only` selects that were measured against an emulator."""
    return _counts(conn, only, "emulator IS TRUE")


def stalled_counts(conn: psycopg.Connection, only: RowFilter) -> dict[str, int]:
    """Each model's real rows of those `only` selects excluded as the measuring worker's stall."""
    return _counts(conn, only, f"emulator IS NOT TRUE AND status = 'excluded' AND starts_with(reason, '{STALLED}')")


def _counts(conn: psycopg.Connection, only: RowFilter, condition: str) -> dict[str, int]:
    sql, args = _selected("model_id, count(*)", only, condition)
    with conn.transaction(), conn.cursor() as cur:
        _planned(cur)
        return dict(cur.execute(sql + " GROUP BY model_id", args).fetchall())
