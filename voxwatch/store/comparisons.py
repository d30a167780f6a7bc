"""The paired comparisons of every ranking, per rolling window: computed once from the rows, read by all.

metrics.paired.compare needs every model's rows of a ranking at once, so unlike a series'
aggregates it cannot follow each row's write. Postgres keeps them in the `comparisons` table,
recomputed for the datasets a tick measured when its run is recorded as finished (and for
everything by `voxwatch db refresh`); the dashboards read that table. Elsewhere (SQLite, a span
of the user's) they are computed from the rows on read, by the same `compute`.
"""

from __future__ import annotations

import time
from typing import Iterable, Mapping

import psycopg

from voxwatch.foundation.observation import Observation
from voxwatch.foundation.series_key import SeriesKey
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.paired import COLUMNS, Comparison, compare, flat, from_flat
from voxwatch.metrics.ranking import comparable
from voxwatch.metrics.series import WINDOWS, SeriesData, series_rows
from voxwatch.store.observation_reads import stream_observations
from voxwatch.store.row_filter import RowFilter
from voxwatch.store.series_data import group, group_windows

_TYPES = {"a": "double precision", "b": "double precision", "estimate": "double precision",
          "ci_low": "double precision", "ci_high": "double precision", "p_value": "double precision",
          "p_holm": "double precision", "shown": "boolean NOT NULL", "cells": "integer NOT NULL",
          "utterances": "integer NOT NULL", "ticks": "integer NOT NULL"}
_TEXT = 'text COLLATE "C" NOT NULL'
_KEY = ("time_window", *COLUMNS[:10])
DDL = ("CREATE TABLE comparisons (time_window text NOT NULL, "
       + ", ".join(f"{c} {_TYPES.get(c, _TEXT)}" for c in COLUMNS)
       + f", computed_at double precision NOT NULL, PRIMARY KEY ({', '.join(_KEY)}))")


def compute(rows: Iterable[Observation]) -> list[Comparison]:
    """The comparisons of some rows (one window's, or a span's): every ranking's pairs, on the rows'
    own statistics' eligibility (metrics.ranking.comparable)."""
    return compute_series(group(rows))


def compute_series(series: Mapping[SeriesKey, SeriesData]) -> list[Comparison]:
    """`compute` of rows already grouped into series (store.series_data)."""
    metric_rows = [m for key, data in series.items() for m in series_rows(key, data)]
    return compare(series, comparable(metric_rows, METHOD_VERSION))


def refresh(conn: psycopg.Connection, datasets: Iterable[str] | None = None, now: float | None = None) -> int:
    """Recompute the comparisons of every ranking of these datasets (every dataset with aggregates or
    comparisons when None), per window, one dataset at a time, each in its own transaction: readers
    see a dataset's old set or its new one. A ranking is one dataset's, so one dataset's rows at a
    time are enough, and they bound the memory: at a year's scale, 30 days of one dataset are 410,000
    rows (1.6 GB as Observations, a few hundred MB as the cells series_data.group_windows keeps), of
    every dataset 8M. Returns the comparisons written."""
    at = time.time() if now is None else now
    if datasets is None:
        chosen = sorted({d for (d,) in conn.execute("SELECT DISTINCT dataset FROM aggregates "
                                                    "UNION SELECT DISTINCT dataset FROM comparisons")})
    else:
        chosen = sorted(set(datasets))
    written = 0
    for dataset in chosen:
        written += _refresh_dataset(conn, dataset, at)
    return written


def _refresh_dataset(conn: psycopg.Connection, dataset: str, at: float) -> int:
    longest = max(WINDOWS.values())
    written = 0
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('voxwatch comparisons', 0))")
        series = group_windows(stream_observations(conn, RowFilter(since=at - longest, datasets=(dataset,))),
                               {window: at - span for window, span in WINDOWS.items()})
        conn.execute("DELETE FROM comparisons WHERE dataset = %s", (dataset,))
        for window in WINDOWS:
            found = compute_series(series.pop(window))
            if found:
                with conn.cursor() as cur:
                    cur.executemany(f"INSERT INTO comparisons (time_window, {', '.join(COLUMNS)}, computed_at) "
                                    f"VALUES ({', '.join(['%s'] * (len(COLUMNS) + 2))})",
                                    [(window, *flat(c).values(), at) for c in found])
                written += len(found)
    return written


def read(conn: psycopg.Connection, window: str, now: float | None = None) -> list[Comparison]:
    """One window's stored comparisons, in key order; none computed longer ago than the window is
    long (no tick has finished since: every row they were computed from has left the window, as
    the leaderboard hides a series whose newest row has)."""
    at = time.time() if now is None else now
    cur = conn.execute(f"SELECT {', '.join(COLUMNS)} FROM comparisons WHERE time_window = %s AND computed_at >= %s "
                       f"ORDER BY {', '.join(COLUMNS[:10])}", (window, at - WINDOWS[window]))
    return [from_flat(v) for v in cur]
