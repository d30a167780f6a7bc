"""The Postgres store's observations as whole rows, on any connection: what the store's own reads, the
comparisons' refresh and the web app's read-only connection stream (which must not open a
PostgresStore: that migrates)."""

from __future__ import annotations

from math import inf as INF
from typing import Iterator

import psycopg

from voxwatch.foundation.observation import FIELDS, KEY, Observation
from voxwatch.store.row_filter import RowFilter

_COLS = ", ".join(FIELDS)


def stream_observations(conn: psycopg.Connection, only: RowFilter) -> Iterator[Observation]:
    """The rows `only` selects, in time order."""
    where, args = only.where("%s")
    sql = f"SELECT {_COLS} FROM observations" + where
    if only.since is not None or only.until is not None:  # a span: found through its runs (docs/STORE.md)
        sql = f"SELECT {_COLS} FROM observations_during(%s, %s)" + where
        args = [-INF if only.since is None else only.since, INF if only.until is None else only.until, *args]
    with conn.transaction(), conn.cursor() as cur:
        # hash joins: the planner takes a span's runs (an array from a subquery) for a handful of rows and
        # would scan each dictionary once per fact row (a day of a year-scale store's STT rows: 229 s)
        cur.execute("SET LOCAL enable_nestloop = off")
        for row in cur.stream(sql + " ORDER BY started_at, " + ", ".join(KEY), args, size=1000):
            yield Observation(*row)
