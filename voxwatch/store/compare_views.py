"""Each series comparison board's view per rolling window, computed as ticks finish and kept in
Postgres' `compare_views` table: what the comparison pages (/compare/<board>, its API and CSV) read.

A view pools every dataset of a use case per model (boards.compare_lines), so, like the paired
comparisons and the family lines, it cannot follow each row's write: computed from whole rows on
each request it read every row of the board in the window (5.7M at a year's scale). It is
recomputed by boards.compare_refresh from the board's stored series (store.board_series), as
ticks finish (coalesced: store.coalesce), on `voxwatch ingest` and on `voxwatch db refresh`.
The store keeps the view as the boards layer writes it (JSON); it knows nothing of its fields.
"""

from __future__ import annotations

from typing import Sequence

import psycopg
from psycopg.types.json import Jsonb

from voxwatch.metrics.series import WINDOWS

DDL = ("CREATE TABLE compare_views (board text COLLATE \"C\" NOT NULL, time_window text NOT NULL, "
       "view jsonb NOT NULL, computed_at double precision NOT NULL, PRIMARY KEY (board, time_window))")


def write(conn: psycopg.Connection, board: str, views: Sequence[tuple[str, dict]], at: float) -> int:
    """Replace a board's views (window, view) in one transaction: readers see the old set or the new one."""
    with conn.transaction():
        conn.execute("DELETE FROM compare_views WHERE board = %s", (board,))
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO compare_views (board, time_window, view, computed_at) VALUES (%s, %s, %s, %s)",
                            [(board, window, Jsonb(view), at) for window, view in views])
    return len(views)


def read(conn: psycopg.Connection, board: str, window: str, now: float) -> dict | None:
    """A board's kept view of a window; None when none is kept or it was computed longer ago than the
    window is long (no tick has finished since: the caller computes it from the rows)."""
    found = conn.execute("SELECT view FROM compare_views WHERE board = %s AND time_window = %s AND computed_at >= %s",
                         (board, window, now - WINDOWS[window])).fetchone()
    return None if found is None else found[0]
