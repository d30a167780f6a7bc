"""A dataset family's STT rows of a window, narrow, in SQL: what its clean-vs-degraded lines read.

The lines (metrics.family_lines.build, metrics.degradation, kept per tick by store.family_lines) needs of each row only its series, dataset,
condition, utterance, tick, status, WER parts and headline latency. Reading whole observations
through the `observations` view joined six dictionaries for each row, read ~60 columns and made an
Observation of each (about 3 s at 100,000 rows); this reads the fact rows of the window's STT runs
by key (layout.series_sql's way), keeps those of the family's clips, and names the models and
datasets once, not per row. A row's tick is its run's ref: the page only needs ticks told apart.
"""

from __future__ import annotations

from collections import namedtuple

import psycopg

from voxwatch.metrics.family_lines import BOARD
from voxwatch.metrics.ranking import ranked_metric
from voxwatch.metrics.specs import METRICS
from voxwatch.store.layout import in_runs

LATENCIES = tuple(sorted({ranked_metric(p) for m in METRICS for p in m.protocols if p.startswith("stt")} - {None}
                         | {"ttfs_ms"}))
"""Every STT protocol's headline latency (the page reads its protocol's, or ttfs_ms)."""
FamilyRow = namedtuple("FamilyRow", ("family", "board", "model_id", "dataset", "region", "method_version", "protocol",
                                     "condition", "utterance_id", "run_id", "status", "substitutions", "deletions",
                                     "insertions", "ref_words", "started_at", *LATENCIES))
"""The fields of an Observation that the family page reads (run_id: the run's ref, a tick's identity)."""

_CONTEXTS = "ARRAY(SELECT ref FROM obs_contexts WHERE board = %(board)s AND emulator IS NOT TRUE)"
_RUNS = (f"ARRAY(SELECT DISTINCT run_id_ref FROM obs_spans WHERE context_ref = ANY({_CONTEXTS}) "
         "AND last_at >= %(since)s)")
FAMILY_SQL = (
    "WITH cl AS (SELECT ref, condition, utterance_id FROM obs_clips WHERE family = %(family)s AND utterance_id IS NOT NULL) "
    "SELECT %(family)s, c.board, f.model_id_ref, f.dataset_ref, c.region, c.method_version, c.protocol, cl.condition, "
    "cl.utterance_id, "
    "f.run_id_ref, f.status, f.substitutions, f.deletions, f.insertions, f.ref_words, f.started_at, "
    + ", ".join(f"f.{m}" for m in LATENCIES)
    + " FROM obs_facts f JOIN cl ON cl.ref = f.clip_ref JOIN obs_contexts c ON c.ref = f.context_ref "
    f"WHERE {in_runs(_RUNS)} AND f.context_ref = ANY({_CONTEXTS}) AND f.started_at >= %(since)s "
    "ORDER BY f.started_at, f.run_id_ref, f.model_id_ref, f.dataset_ref, f.clip_ref, f.attempt")
"""The family's real STT rows measured since %(since)s, in time order, with their model's and
dataset's refs (named once each afterwards, not joined on every row)."""


def family_rows(conn: psycopg.Connection, family: str, since: float) -> list[FamilyRow]:
    """The family's STT rows (not measured against an emulator, with an utterance) since a time."""
    with conn.transaction():
        # hash joins: the planner takes the window's runs (an array from a subquery) for a handful of rows
        # and would loop over every clip and context for each fact row (minutes at 1M rows)
        conn.execute("SET LOCAL enable_nestloop = off")
        rows = conn.execute(FAMILY_SQL, {"family": family, "since": since, "board": BOARD}).fetchall()
    refs = sorted({r[2] for r in rows} | {r[3] for r in rows})
    names = dict(conn.execute("SELECT ref, name FROM obs_names WHERE ref = ANY(%s)", (refs,)).fetchall()) if refs else {}
    return [FamilyRow(r[0], r[1], names[r[2]], names[r[3]], *r[4:]) for r in rows]
