"""Each dataset family's clean-against-degraded lines per rolling window and region, computed as
ticks finish and kept in Postgres' `family_lines` table: what the family page and its API read.

The lines compare every utterance a series measured in a family's clean and degraded conditions
over the window (metrics.family_lines), so, like the paired comparisons, they cannot follow each
row's write; computed from the rows on each request they took 14 s at 1M rows. They are recomputed
for the families an STT run measured when the run is recorded as finished, for the families
`voxwatch ingest` added rows of, and for every family by `voxwatch db refresh`. One read of the
family's 30 days of narrow rows (store.family_reads) serves every window and region.
"""

from __future__ import annotations

import time
from typing import Iterable

import psycopg
from psycopg.types.json import Jsonb

from voxwatch.metrics.family_lines import FamilyView, build, from_json, to_json
from voxwatch.metrics.series import WINDOWS
from voxwatch.store.family_reads import family_rows

ALL_REGIONS = ""
"""The key of the lines over every region (the page with no region chosen)."""
DDL = ("CREATE TABLE family_lines (family text COLLATE \"C\" NOT NULL, time_window text NOT NULL, "
       "region text COLLATE \"C\" NOT NULL, view jsonb NOT NULL, computed_at double precision NOT NULL, "
       "PRIMARY KEY (family, time_window, region))")
_ALL_FAMILIES = "SELECT DISTINCT family FROM obs_clips WHERE family IS NOT NULL AND utterance_id IS NOT NULL"


def refresh(conn: psycopg.Connection, families: Iterable[str] | None = None, now: float | None = None) -> int:
    """Recompute the lines of these families (every family with an utterance when None), for every
    window and region, in one transaction per family: readers see its old lines or its new ones.
    Returns the views written."""
    at = time.time() if now is None else now
    chosen = sorted({f for (f,) in conn.execute(_ALL_FAMILIES)} if families is None else set(families) - {None})
    written = 0
    for family in chosen:
        rows = family_rows(conn, family, at - max(WINDOWS.values()))
        views = []
        for window, span in WINDOWS.items():
            recent = [r for r in rows if r.started_at >= at - span]
            whole = build(recent, family, window, None, at)
            views += [(ALL_REGIONS, whole), *((r, build(recent, family, window, r, at)) for r in whole.regions)]
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('voxwatch family lines ' || %s, 0))", (family,))
            conn.execute("DELETE FROM family_lines WHERE family = %s", (family,))
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO family_lines (family, time_window, region, view, computed_at) "
                                "VALUES (%s, %s, %s, %s, %s)",
                                [(family, v.window, region, Jsonb(to_json(v)), at) for region, v in views])
        written += len(views)
    return written


def read(conn: psycopg.Connection, family: str, window: str, region: str | None,
         now: float | None = None) -> FamilyView | None:
    """The kept lines of a family's window (over one region, or all); None when none are kept or the
    newest were computed longer ago than the window is long (no tick has finished since: the caller
    computes them from the rows)."""
    at = time.time() if now is None else now
    found = dict(conn.execute("SELECT region, view FROM family_lines WHERE family = %s AND time_window = %s "
                              "AND computed_at >= %s AND region IN (%s, %s)",
                              (family, window, at - WINDOWS[window], ALL_REGIONS, region or ALL_REGIONS)).fetchall())
    if (region or ALL_REGIONS) in found:
        return from_json(found[region or ALL_REGIONS])
    if ALL_REGIONS in found:  # a region without rows of the family: no lines, the filter's options kept
        whole = from_json(found[ALL_REGIONS])
        return FamilyView(family, window, region, [], [], whole.regions, [], whole.computed_at)
    return None
