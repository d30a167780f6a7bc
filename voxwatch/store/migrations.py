"""The Postgres schema, versioned: each migration runs once, in a transaction, recorded in schema_migrations.

Table columns come from the dataclasses (Observation, RunRecord, leaderboard.MetricRow), the one
definition of every field. A new nullable field needs no migration: `upgrade` adds any field a
table lacks (as the SQLite store does). Anything else (an index, a type, a backfill) is a new
numbered entry at the end of MIGRATIONS; a released entry is never edited.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Iterator

import psycopg

from ..leaderboard import MetricRow
from ..metrics.specs import METRICS
from ..observation import KEY, Observation, RunRecord

_TYPES = {"int": "bigint", "float": "double precision", "bool": "boolean", "str": 'text COLLATE "C"'}
_LOCK = 0x766F7877  # pg_advisory_xact_lock key: one migrator at a time ("voxw")


def _sql_type(annotation: str) -> str:
    return _TYPES.get(annotation.split("|")[0].split("[")[0].strip(), "text")


def columns(cls) -> Iterator[tuple[str, str]]:
    """(name, SQL type) for each dataclass field; an interval field becomes <name>_low and <name>_high."""
    for f in fields(cls):
        if str(f.type).startswith("tuple"):
            yield f"{f.name}_low", "double precision"
            yield f"{f.name}_high", "double precision"
        else:
            yield f.name, _sql_type(str(f.type))


AGGREGATE_EXTRA = (("time_window", 'text COLLATE "C"'), ("protocol", 'text COLLATE "C"'), ("metric_order", "integer"),
                   ("newest_at", "double precision"), ("computed_at", "double precision"))
"""What an aggregate row holds beyond a MetricRow: its window, its protocol (part of the series), the
metric's place in the printed order, its newest row and when it was computed."""
AGGREGATE_KEY = ("model_id", "dataset", "region", "method_version", "time_window", "board", "protocol", "instrument",
                 "metric")  # a refresh replaces one (model, dataset, region, method version): the key's prefix


HEADLINE = tuple(dict.fromkeys(m.name for m in METRICS if m.headline))
REFRESH_READS = ("board", "protocol", "instrument_id", "status", "emulator", *HEADLINE, "substitutions", "deletions",
                 "insertions", "ref_words")
"""The columns a refresh of the aggregates reads. The series index carries them, so a refresh is an
index-only scan of one contiguous range: at 10M rows a series' 21,000 rows are ~470 index pages
instead of ~4,300 scattered table pages (benchmarks/store_scale.py: 330 ms -> 9 ms uncached)."""


def _table(name: str, cols: list[tuple[str, str]], constraint: str) -> str:
    return f"CREATE TABLE {name} ({', '.join(f'{c} {t}' for c, t in cols)}, {constraint})"


def _aggregate_columns() -> list[tuple[str, str]]:
    # `note` is the registry's exclusion reason, applied when the leaderboard is read, never stored
    cols = [(c, t) for c, t in columns(MetricRow) if c != "note"] + list(AGGREGATE_EXTRA)
    return [(c, f"{t} NOT NULL DEFAULT ''" if c == "instrument" else t) for c, t in cols]


MIGRATIONS: list[tuple[int, str]] = [
    (1, ";\n".join([
        _table("observations", list(columns(Observation)), f"PRIMARY KEY ({', '.join(KEY)})"),
        # rows arrive in time order, so a BRIN index finds a time range at a tiny fraction of a B-tree's size
        "CREATE INDEX observations_time ON observations USING brin (started_at)",
        "CREATE INDEX observations_series ON observations (model_id, dataset, region, method_version, started_at)",
        _table("runs", list(columns(RunRecord)), "PRIMARY KEY (run_id)"),
    ])),
    (2, _table("aggregates", _aggregate_columns(), f"PRIMARY KEY ({', '.join(AGGREGATE_KEY)})")),
    # the series index carries what a refresh reads (REFRESH_READS); writes wait while it is rebuilt
    (3, "DROP INDEX observations_series;\n"
        "CREATE INDEX observations_series ON observations (model_id, dataset, region, method_version, started_at) "
        f"INCLUDE ({', '.join(REFRESH_READS)})"),
    # regression alerts (voxwatch.alerts, docs/ALERTS.md): one row per alert, one per delivery attempt
    (4, "CREATE TABLE alerts ("
        "id bigserial PRIMARY KEY, key text COLLATE \"C\" NOT NULL, kind text NOT NULL, board text NOT NULL, "
        "model_id text NOT NULL, metric text NOT NULL, dataset text NOT NULL, region text NOT NULL, "
        "method_version text NOT NULL, "
        "state text NOT NULL CHECK (state IN ('pending', 'firing', 'resolved')), "
        "opened_at double precision NOT NULL, fired_at double precision, resolved_at double precision, "
        "last_evaluated_at double precision NOT NULL, recent_value double precision, "
        "baseline_value double precision, p_value double precision, n_recent integer, n_baseline integer, "
        "summary text NOT NULL);\n"
        "CREATE UNIQUE INDEX alerts_open ON alerts (key) WHERE state <> 'resolved';\n"
        "CREATE INDEX alerts_opened ON alerts (opened_at);\n"
        "CREATE TABLE alert_deliveries ("
        "id bigserial PRIMARY KEY, alert_id bigint NOT NULL REFERENCES alerts (id), event text NOT NULL, "
        "target text NOT NULL, attempt integer NOT NULL, at double precision NOT NULL, ok boolean NOT NULL, "
        "status_code integer, error text)"),
    # how many successive evaluations have pointed to an open alert's next transition (pending: the
    # condition held; firing: it was clear), so fire_after / resolve_after count evaluations
    (5, "ALTER TABLE alerts ADD COLUMN streak integer NOT NULL DEFAULT 1"),
]


def upgrade(conn: psycopg.Connection) -> list[int]:
    """Apply the migrations this database lacks, then add any dataclass field a table lacks.

    One transaction under an advisory lock, so workers opening the store at once migrate it once.
    Returns the versions applied.
    """
    applied: list[int] = []
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        cur.execute("CREATE TABLE IF NOT EXISTS schema_migrations "
                    "(version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        have = {v for (v,) in cur.execute("SELECT version FROM schema_migrations")}
        for version, sql in MIGRATIONS:
            if version not in have:
                for statement in sql.split(";\n"):
                    cur.execute(statement)
                cur.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
                applied.append(version)
        for table, cols in (("observations", columns(Observation)), ("runs", columns(RunRecord)),
                            ("aggregates", _aggregate_columns())):
            # only a missing field takes the table lock (ALTER waits behind any long read)
            have = {c for (c,) in cur.execute("SELECT column_name FROM information_schema.columns "
                                              "WHERE table_schema = current_schema() AND table_name = %s", (table,))}
            for name, sql_type in cols:
                if name not in have:
                    cur.execute(f"ALTER TABLE {table} ADD COLUMN {name} {sql_type}")
    return applied
