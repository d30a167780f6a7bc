"""A board's stored series of one protocol over the longest window, as columns: what a comparison
page's kept view is computed from (store.compare_views).

A comparison page pools every dataset of a use case per model (metrics.use_case), so it needs each
series' rows, not its aggregates. Read as whole observations, 30 days of a board at a year's scale
are millions of rows of ~60 fields; this reads each series the way its aggregates are read
(aggregates.FETCH_SQL: narrow, by key, run by run), names its clips and runs once (the other paths
cluster on names), and cuts every window from one read.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

import psycopg

from voxwatch.foundation.series_key import RowsKey, SeriesKey
from voxwatch.metrics.series import WINDOWS, SeriesData
from voxwatch.store.aggregates import COL_AT, COL_CLIP, COL_CONTEXT, COL_RUN, FETCH_SQL, LABELS_SQL, Label, series_parts

_SERIES = ("SELECT DISTINCT model_id, dataset, region, method_version FROM aggregates "
           "WHERE time_window = %s AND board = %s AND protocol = %s AND method_version = %s "
           "ORDER BY model_id, dataset, region, method_version")
_DATASET = ("SELECT cl.condition, f.language FROM obs_facts f JOIN obs_clips cl ON cl.ref = f.clip_ref "
            "WHERE f.run_id_ref = %(run)s AND f.clip_id_ref = %(clip)s "
            "AND f.dataset_ref = (SELECT ref FROM obs_names WHERE digest = voxwatch_digest(ARRAY[%(dataset)s::text])) "
            "LIMIT 1")
"""A dataset's condition and language, from one of its rows (by key: the run's rows only)."""


@dataclass
class BoardSeries:
    """Every stored series of a board's protocol under one method version since `since`: its rows
    (time order), their contexts' labels, the names of their clips and runs, and each dataset's
    condition and language (what names a use case)."""
    since: float
    rows: dict[RowsKey, list[tuple]] = field(default_factory=dict)
    labels: dict[int, Label] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    datasets: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)

    def series(self, since: float, protocol: str) -> dict[SeriesKey, SeriesData]:
        """The columns of each series of `protocol` over the rows since `since` (a window's start)."""
        out: dict[SeriesKey, SeriesData] = {}
        for s, rows in self.rows.items():
            recent = rows[bisect_left([r[COL_AT] for r in rows], since):]
            for key, part in series_parts(s, recent, self.labels, self.names).items():
                if key.protocol == protocol and recent:
                    out[key] = part.data
        return out


def board_series(conn: psycopg.Connection, board: str, protocol: str, method_version: str,
                 since: float) -> BoardSeries:
    """Read every series the aggregates hold for a board's protocol (the longest window's), since a time."""
    found = BoardSeries(since)
    longest = max(WINDOWS, key=WINDOWS.__getitem__)
    with conn.cursor(binary=True) as cur:
        keys = [RowsKey._make(k) for k in cur.execute(_SERIES, (longest, board, protocol, method_version))]
        for s in keys:
            rows = cur.execute(FETCH_SQL, {**s._asdict(), "since": since}).fetchall()
            if not rows:
                continue
            rows.sort(key=lambda r: r[COL_AT])
            found.rows[s] = rows
            if s.dataset not in found.datasets:
                first = {"run": rows[0][COL_RUN], "clip": rows[0][COL_CLIP], "dataset": s.dataset}
                found.datasets[s.dataset] = tuple(cur.execute(_DATASET, first).fetchone())
        contexts = list({r[COL_CONTEXT] for rows in found.rows.values() for r in rows} - set(found.labels))
        found.labels.update({ref: tuple(label) for ref, *label in cur.execute(LABELS_SQL, (contexts,))})
        refs = list({r[i] for rows in found.rows.values() for r in rows for i in (COL_CLIP, COL_RUN)})
        found.names.update(cur.execute("SELECT ref, name FROM obs_names WHERE ref = ANY(%s)", (refs,)).fetchall())
    return found
