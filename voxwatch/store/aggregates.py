"""Rolling aggregates kept in Postgres: a series' rows are re-read and its statistics recomputed when a
write touches it, so reading the leaderboard is a read of one small table.

The numbers come from metrics.series.series_rows, the code the SQLite path runs on the same columns,
so both stores print the same leaderboard. Each series is recomputed in its own short transaction
(serialized per series by an advisory lock); readers are never blocked and see either the old or
the new rows of a series, never a mix. Windows are anchored at the refresh: a series that stops
receiving rows keeps its last aggregates until `refresh()` (`voxwatch db refresh`) re-anchors it,
and the leaderboard hides it once its newest row has left the window.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields
from operator import itemgetter
from typing import Callable, Mapping, NamedTuple

import psycopg

from voxwatch.foundation.series_key import RowsKey, SeriesKey
from voxwatch.metrics.deadline_wer import ERRORS_FIELDS
from voxwatch.metrics.series import WINDOWS, MetricRow, SeriesData, flat, series_rows
from voxwatch.metrics.specs import for_protocol
from voxwatch.store.layout import SERIES, series_sql
from voxwatch.store.migrations import AGGREGATE_EXTRA, HEADLINE, columns

Label = tuple[str, str, str]
"""A context's board, protocol and instrument ('' unless TTS): what a series' rows are grouped by."""

COL_CONTEXT, COL_STATUS, COL_AT, COL_CLIP, COL_RUN = range(5)
"""Where a fetched row (FETCH_SQL's) holds these; then the headline metrics, then the _PER_ROW columns.
Public: store.board_series reads a board's series the same narrow way."""
_COLUMN = {name: 5 + i for i, name in enumerate(HEADLINE)}  # where each headline metric sits in a fetched row
_PER_ROW = {"errors": "f.substitutions + f.deletions + f.insertions", "words": "f.ref_words",
            "entities_missed": "f.entities_missed", "entities_total": "f.entities_total", "quality": "f.quality_mos",
            "answers": "f.answer_correct", "stalls": "f.stall_ms", **{name: f"f.{name}" for name in ERRORS_FIELDS},
            "eot": "f.eot_ms", "cutoffs": "f.eot_false_cutoffs", "invented_words": "f.invented_words",
            "invented_audio_ms": "f.invented_audio_ms",
            "heard_s": "CASE WHEN f.invented_words IS NOT NULL THEN f.audio_duration_s END"}
"""The SeriesData columns a fetched row ends with (after the headline metrics), and the SQL of each."""
_PER_ROW_AT = {name: 5 + len(HEADLINE) + i for i, name in enumerate(_PER_ROW)}
_LONGEST = max(WINDOWS.values())
FETCH_SQL = series_sql(f"f.context_ref, f.status, f.started_at, f.clip_id_ref, f.run_id_ref, {', '.join('f.' + m for m in HEADLINE)}, "
                       + ", ".join(_PER_ROW.values()), ordered=False)
"""A series' rows as narrow as they come (its contexts' labels are read apart, once per context),
left unsorted: compute sorts them, cheaply, as they come run by run, about in time order."""
LABELS_SQL = ("SELECT ref, board, protocol, CASE WHEN board = 'tts' THEN coalesce(instrument_id, '') ELSE '' END "
              "FROM obs_contexts WHERE ref = ANY(%s)")
_WHERE_SERIES = " AND ".join(f"{c} = %s" for c in SERIES)
_ROW_COLS = [c for c, _ in columns(MetricRow) if c != "note"]
_WRITE_COLS = _ROW_COLS + [c for c, _ in AGGREGATE_EXTRA]


def refresh(conn: psycopg.Connection, series: list[RowsKey] | None = None, now: float | None = None,
            progress: Callable[[int, int], None] | None = None) -> int:
    """Recompute the aggregates of these series (what a refresh is keyed on: their board, protocol and
    instrument are split out of their rows in Python), or of every series (a full rebuild) when None;
    `progress` hears (series done, series) after each."""
    if series is None:
        series = [RowsKey._make(s) for s in conn.execute(
            f"SELECT {', '.join(SERIES)} FROM observations_during(%s, 'Infinity') WHERE emulator IS NOT TRUE "
            f"UNION SELECT {', '.join(SERIES)} FROM aggregates", ((now or time.time()) - _LONGEST,))]
    for done, s in enumerate(series, 1):
        with conn.transaction(), conn.cursor(binary=True) as cur:  # binary: ~15 % faster to load 20,000 rows
            cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", ("\x1f".join(s),))
            at = time.time() if now is None else now  # after the lock: the windows end when the rows are read
            rows = cur.execute(FETCH_SQL, {**dict(zip(SERIES, s)), "since": at - _LONGEST}).fetchall()
            labels = {ref: tuple(label) for ref, *label in cur.execute(LABELS_SQL, (list({r[COL_CONTEXT] for r in rows}),))}
            out = compute(s, rows, labels, at)
            cur.execute(f"DELETE FROM aggregates WHERE {_WHERE_SERIES}", s)
            if out:
                marks = ", ".join(["(" + ", ".join(["%s"] * len(_WRITE_COLS)) + ")"] * len(out))
                cur.execute(f"INSERT INTO aggregates ({', '.join(_WRITE_COLS)}) VALUES {marks}",
                            [v for row in out for v in row])
        if progress is not None:
            progress(done, len(series))
    return len(series)


def compute(s: RowsKey, rows: list[tuple], labels: dict[int, Label], now: float) -> list[tuple]:
    """Aggregate rows (in _WRITE_COLS order) for every window of one series, from its fetched rows
    and the (board, protocol, instrument) of each of their contexts. The windows are computed at
    once, one thread each: their statistics are numpy's sorts and sums, which run without the GIL."""
    rows = sorted(rows, key=lambda r: r[COL_AT])
    times = [r[COL_AT] for r in rows]
    windows = [(window, rows[bisect_left(times, now - span):]) for window, span in WINDOWS.items()]
    with ThreadPoolExecutor(len(windows)) as pool:  # made per call: safe in a forked worker
        done = list(pool.map(lambda w: _window(s, w[0], w[1], labels, now), windows))
    return [row for rows_of_window in done for row in rows_of_window]


def _window(s: RowsKey, window: str, rows: list[tuple], labels: dict[int, Label], now: float) -> list[tuple]:
    out = []
    for key, part in series_parts(s, rows, labels).items():
        for order, row in enumerate(series_rows(key, part.data)):
            out.append((*_flatten(row), window, order, part.last_at, now))
    return out


class SeriesPart(NamedTuple):
    """A series' rows as columns, and when its newest row started."""
    data: SeriesData
    last_at: float


def series_parts(s: RowsKey, rows: list[tuple], labels: dict[int, Label],
                 names: Mapping[int, str] | None = None) -> dict[SeriesKey, SeriesPart]:
    """The fetched rows of one stored series (FETCH_SQL's, in time order) split by their contexts' board,
    protocol and instrument, each part as the columns series_rows reads, with its newest row's time.
    With `names`, clips and runs are named (as whole observations name them) rather than left refs."""
    groups: dict[Label, list[tuple]] = {}
    for r in rows:
        groups.setdefault(labels[r[COL_CONTEXT]], []).append(r)
    out = {}
    for (board, protocol, instrument), members in sorted(groups.items()):
        columns = list(zip(*members))  # a failed row's clocks and WER parts are NULL, as series_rows expects
        clips, runs = columns[COL_CLIP], columns[COL_RUN]
        if names is not None:
            clips, runs = [names[c] for c in clips], [names[t] for t in runs]
        out[s.series(board, protocol, instrument)] = SeriesPart(SeriesData(
            statuses=columns[COL_STATUS], utterances=clips, ticks=runs,
            values={spec.name: columns[_COLUMN[spec.name]] for spec in for_protocol(protocol, headline_only=True)},
            **{name: columns[i] for name, i in _PER_ROW_AT.items()}), members[-1][COL_AT])
    return out


def _flatten(row: MetricRow) -> list:
    record = flat(row)
    record["instrument"] = record["instrument"] or ""  # part of the key, so never NULL
    return [record[c] for c in _ROW_COLS]


def read(conn: psycopg.Connection, window: str, since: float, boards: tuple[str, ...] = (), datasets: tuple[str, ...] = (),
         models: tuple[str, ...] = ()) -> list[MetricRow]:
    """One window's rows in the leaderboard's order, leaving out series with no row since `since`
    (and, when given, those of other boards, datasets or models: a board's page reads its own rows)."""
    where, args = ["time_window = %s", "newest_at >= %s"], [window, since]
    for column, values in (("board", boards), ("dataset", datasets), ("model_id", models)):
        if values:
            where.append(f"{column} = ANY(%s)")
            args.append(list(values))
    with conn.cursor(binary=True) as cur:  # floats as they are stored, not parsed from text: about half the read
        cur.execute(f"SELECT {_READ} FROM aggregates WHERE {' AND '.join(where)} "
                    f"ORDER BY board, model_id, dataset, region, method_version, protocol, instrument, metric_order", args)
        return [_ROW(v) for v in cur]


def _plan() -> tuple[str, list]:
    """The SELECT list and, per MetricRow field, the column index (or the pair of an interval) it comes from."""
    select, plan = [], []
    for f in fields(MetricRow):
        if f.name.endswith("_ci"):
            plan.append((len(select), len(select) + 1))
            select += [f"{f.name}_low", f"{f.name}_high"]
        else:
            plan.append(len(select))
            select.append({"instrument": "NULLIF(instrument, '')", "note": "NULL::text"}.get(f.name, f.name))
    return ", ".join(select), plan


def _row_maker(plan: list) -> Callable[[tuple], MetricRow]:
    """A MetricRow from a fetched row, its fields set straight into the instance: a frozen dataclass's
    __init__ sets each of its ~40 fields through object.__setattr__, which made most of a 16,500-row
    leaderboard's read (this takes 40 % less). The values are the store's own, written by series_rows."""
    names = [f.name for f in fields(MetricRow)]
    singles = [(name, i) for name, i in zip(names, plan) if type(i) is int]
    pairs = [(name, i) for name, i in zip(names, plan) if type(i) is not int]
    single_names, get = [name for name, _ in singles], itemgetter(*(i for _, i in singles))
    new, cls = object.__new__, MetricRow

    def make(v: tuple) -> MetricRow:
        row = new(cls)
        d = row.__dict__
        d.update(zip(single_names, get(v)))
        for name, (low, high) in pairs:
            d[name] = None if v[low] is None else (v[low], v[high])
        return row
    return make


_READ, _PLAN = _plan()
_ROW = _row_maker(_PLAN)
