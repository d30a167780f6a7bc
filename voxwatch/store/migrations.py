"""The Postgres schema, versioned: each migration runs once, in a transaction, recorded in schema_migrations.

Table columns come from the dataclasses (Observation, RunRecord, metrics.series.MetricRow), the one
definition of every field. A new nullable field needs no migration: `upgrade` adds any field a
table lacks (as the SQLite store does) and redraws the `observations` view. Anything else (an index,
a type, a backfill) is a new numbered entry at the end of MIGRATIONS, SQL or a function of a cursor;
a released entry is never edited. Since migration 6 observations are stored in the narrow layout of
voxwatch.store.layout; migrations 1-5 made the wide table that migration 6 moves over and drops.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Callable, Iterator

import psycopg

from voxwatch.store.conversation_rows import CONVERSATION_KEY, TURN_KEY, ConversationRow, TurnRow
from voxwatch.metrics.deadline_wer import ERRORS_FIELDS
from voxwatch.metrics.series import MetricRow
from voxwatch.metrics.specs import METRICS
from voxwatch.foundation.observation import FIELDS, KEY, Observation, RunRecord
from voxwatch.store.comparisons import DDL as COMPARISONS_DDL
from voxwatch.store.coalesce import DDL as REFRESH_REQUESTS_DDL
from voxwatch.store.compare_views import DDL as COMPARE_VIEWS_DDL
from voxwatch.store.family_lines import DDL as FAMILY_LINES_DDL
from voxwatch.store.exclusions import DDL as EXCLUSIONS_DDL
from voxwatch.store.preference import ddl as preference_ddl
from voxwatch.store.preference_fits import ddl as preference_fits_ddl
from voxwatch.store import partitions
from voxwatch.store.layout import (CLIP_FIELDS, CONTEXT_FIELDS, DICTIONARIES, DIGEST_FUNCTION, FACT_COLUMNS, FACT_KEY, FACT_REFS,
                                   INLINE, KEY_NAMES, MEASURED_MODELS, PARTITION, derived_objects, digest_of,
                                   measured_models)

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


AGGREGATE_EXTRA = (("time_window", 'text COLLATE "C"'), ("metric_order", "integer"),
                   ("newest_at", "double precision"), ("computed_at", "double precision"))
"""What an aggregate row holds beyond a MetricRow: its window, the metric's place in the printed
order, its newest row and when it was computed."""
AGGREGATE_KEY = ("model_id", "dataset", "region", "method_version", "time_window", "board", "protocol", "instrument",
                 "metric")  # a refresh replaces one (model, dataset, region, method version): the key's prefix


HEADLINE = tuple(dict.fromkeys(m.name for m in METRICS if m.headline))
REFRESH_READS = ("board", "protocol", "instrument_id", "status", "emulator", *HEADLINE, "substitutions", "deletions",
                 "insertions", "ref_words")
"""What migration 3's series index carried (the wide table's; migration 6 replaced both)."""


def _table(name: str, cols: list[tuple[str, str]], constraint: str) -> str:
    return f"CREATE TABLE {name} ({', '.join(f'{c} {t}' for c, t in cols)}, {constraint})"


def _aggregate_columns() -> list[tuple[str, str]]:
    # `note` is the registry's exclusion reason, applied when the leaderboard is read, never stored
    cols = [(c, t) for c, t in columns(MetricRow) if c != "note"] + list(AGGREGATE_EXTRA)
    return [(c, f"{t} NOT NULL DEFAULT ''" if c == "instrument" else t) for c, t in cols]


_V6_KEY = tuple(c for c in FACT_KEY if c != PARTITION)
_V6_COLUMNS = tuple(c for c in FACT_COLUMNS if c != PARTITION)
"""The fact table as migration 6 made it, before it was partitioned (migration 15)."""


def _narrow_layout(cur: psycopg.Cursor) -> None:
    """Migration 6: the dictionaries, the fact table and the run spans (voxwatch.store.layout); the
    wide table's rows are moved over in SQL and the table dropped (the view takes its name)."""
    types = dict(columns(Observation))
    cur.execute(DIGEST_FUNCTION)
    cur.execute('CREATE TABLE obs_names (ref serial PRIMARY KEY, digest bytea NOT NULL UNIQUE, name text COLLATE "C" NOT NULL)')
    for table, cols in DICTIONARIES.items():
        cur.execute(_table(table, [("ref", "serial"), ("digest", "bytea NOT NULL UNIQUE")] + [(c, types[c]) for c in cols],
                           "PRIMARY KEY (ref)"))
    fact_types = {**types, **{c: "integer" for c in FACT_REFS}}
    cur.execute(_table("obs_facts", [(c, fact_types[c]) for c in _V6_COLUMNS], f"PRIMARY KEY ({', '.join(_V6_KEY)})"))
    cur.execute("CREATE TABLE obs_spans (run_id_ref integer, context_ref integer, first_at double precision NOT NULL, "
                "last_at double precision NOT NULL, PRIMARY KEY (run_id_ref, context_ref))")
    cur.execute("CREATE INDEX obs_spans_last ON obs_spans (last_at)")
    cur.execute("CREATE INDEX obs_spans_context ON obs_spans (context_ref, last_at)")
    for name, sql_type in columns(Observation):  # the wide table as the current fields know it
        cur.execute(f"ALTER TABLE observations ADD COLUMN IF NOT EXISTS {name} {sql_type}")
    names = " UNION ".join(f"SELECT {k} FROM observations" for k in KEY_NAMES)
    cur.execute(f"INSERT INTO obs_names (digest, name) SELECT voxwatch_digest(ARRAY[n]), n FROM ({names}) AS s(n) "
                "ON CONFLICT (digest) DO NOTHING")
    for table, cols in DICTIONARIES.items():
        listed = ", ".join(cols)
        cur.execute(f"INSERT INTO {table} (digest, {listed}) SELECT {digest_of(cols, 'o', types)}, {listed} "
                    f"FROM (SELECT DISTINCT {listed} FROM observations) AS o ON CONFLICT (digest) DO NOTHING")
    select = [f"n_{k}.ref" for k in KEY_NAMES] + ["o.attempt", "cl.ref", "cx.ref"] + [f"o.{f}" for f in INLINE if f != "attempt"]
    joins = (" ".join(f"JOIN obs_names n_{k} ON n_{k}.digest = voxwatch_digest(ARRAY[o.{k}])" for k in KEY_NAMES)
             + f" JOIN obs_clips cl ON cl.digest = {digest_of(CLIP_FIELDS, 'o', types)}"
             + f" JOIN obs_contexts cx ON cx.digest = {digest_of(CONTEXT_FIELDS, 'o', types)}")
    cur.execute(f"INSERT INTO obs_facts ({', '.join(_V6_COLUMNS)}) SELECT {', '.join(select)} FROM observations o {joins}")
    cur.execute("INSERT INTO obs_spans SELECT run_id_ref, context_ref, min(started_at), max(started_at) "
                "FROM obs_facts GROUP BY 1, 2")
    cur.execute("DROP TABLE observations")


def _by_month(cur: psycopg.Cursor) -> None:
    """Migration 15: obs_facts partitioned by RANGE on run_month (voxwatch.store.partitions). Each
    run's month is the month of its first row; the rows move into the partitioned table in SQL, in
    this one transaction (a failure leaves the old table as it was), and the old table is dropped."""
    cur.execute(partitions.RUNS_DDL)
    cur.execute("INSERT INTO obs_runs SELECT run_id_ref, (extract(year FROM t) * 100 + extract(month FROM t))::integer "
                "FROM (SELECT run_id_ref, to_timestamp(min(started_at)) AT TIME ZONE 'UTC' AS t "
                "FROM obs_facts GROUP BY run_id_ref) AS r")
    cur.execute("DROP VIEW IF EXISTS observations CASCADE")  # upgrade draws it again over the new table
    cur.execute("ALTER TABLE obs_facts RENAME TO obs_facts_unpartitioned")
    cur.execute("ALTER INDEX obs_facts_pkey RENAME TO obs_facts_unpartitioned_pkey")
    types = {**dict(columns(Observation)), **{c: "integer" for c in FACT_REFS}, PARTITION: "integer"}
    cur.execute(_table("obs_facts", [(c, types[c]) for c in FACT_COLUMNS], f"PRIMARY KEY ({', '.join(FACT_KEY)})")
                + f" PARTITION BY RANGE ({PARTITION})")
    partitions.ensure(cur, [m for (m,) in cur.execute("SELECT DISTINCT month FROM obs_runs")])
    partitions.ahead(cur)
    have = {c for (c,) in cur.execute("SELECT column_name FROM information_schema.columns "
                                      "WHERE table_schema = current_schema() AND table_name = 'obs_facts_unpartitioned'")}
    moved = [c for c in FACT_COLUMNS if c in have]  # a field the old table lacks stays NULL, as upgrade would add it
    cur.execute(f"INSERT INTO obs_facts ({', '.join(moved)}, {PARTITION}) SELECT {', '.join('o.' + c for c in moved)}, r.month "
                "FROM obs_facts_unpartitioned o JOIN obs_runs r ON r.run_ref = o.run_id_ref")
    cur.execute("DROP TABLE obs_facts_unpartitioned")
    cur.execute(MEASURED_MODELS)  # its runs' rows now in their months' partitions


def _speech_quality(cur: psycopg.Cursor) -> None:
    """Migration 16: a row's speech quality score (obs_facts.quality_mos) and its instrument, a context
    field (obs_contexts.quality_instrument). A context's digest covers every context field, so each
    stored context's digest is recomputed with the new one (NULL) and the contexts measured before keep
    their entry; one whose recomputed digest another entry already has keeps its old digest (a context
    then has two refs, both valid)."""
    types = dict(columns(Observation))
    cur.execute(f"ALTER TABLE obs_facts ADD COLUMN IF NOT EXISTS quality_mos {types['quality_mos']}")
    cur.execute(f"ALTER TABLE obs_contexts ADD COLUMN IF NOT EXISTS quality_instrument {types['quality_instrument']}")
    fresh = digest_of(CONTEXT_FIELDS, "o", types)
    cur.execute(f"UPDATE obs_contexts AS c SET digest = n.fresh FROM ("
                f"SELECT DISTINCT ON (fresh) ref, fresh FROM (SELECT o.ref, {fresh} AS fresh FROM obs_contexts o) AS d "
                "ORDER BY fresh, ref) AS n WHERE c.ref = n.ref AND c.digest <> n.fresh "
                "AND NOT EXISTS (SELECT 1 FROM obs_contexts t WHERE t.digest = n.fresh)")


def _turn_quality(cur: psycopg.Cursor) -> None:
    """Migration 20: a conversation turn's speech quality (conversation_turns.quality_mos), the
    instrument that scored it and why it gave none; the turns stored before keep them null."""
    types = dict(columns(TurnRow))
    for name in ("quality_mos", "quality_instrument", "instrument_error"):
        cur.execute(f"ALTER TABLE conversation_turns ADD COLUMN IF NOT EXISTS {name} {types[name]}")


def _answer_correct(cur: psycopg.Cursor) -> None:
    """Migration 21: whether an S2S reply said its spoken question's answer (obs_facts.answer_correct); the
    rows stored before keep it null (not scored). The view gains it when `upgrade` redraws it."""
    cur.execute(f"ALTER TABLE obs_facts ADD COLUMN IF NOT EXISTS answer_correct {dict(columns(Observation))['answer_correct']}")


def _facts(*names: str) -> Callable[[psycopg.Cursor], None]:
    """A migration adding Observation fields to obs_facts; the rows stored before keep them null (not
    measured), and the view gains them when `upgrade` redraws it."""
    def add(cur: psycopg.Cursor) -> None:
        types = dict(columns(Observation))
        for name in names:
            cur.execute(f"ALTER TABLE obs_facts ADD COLUMN IF NOT EXISTS {name} {types[name]}")
    return add


MIGRATIONS: list[tuple[int, str | Callable[[psycopg.Cursor], None]]] = [
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
    # observations as narrow fact rows with their repeated text in dictionaries (voxwatch.store.layout)
    (6, _narrow_layout),
    # measured_models(models): those with a row not measured against an emulator (the alert-history dashboard)
    (7, measured_models(months=False)),
    # the reconciler reads the runs started in its look-back every minute (voxwatch.workers.reconcile)
    # (the recent ones, and those still running, whatever their age)
    (8, "CREATE INDEX runs_started ON runs (started_at);\n"
        "CREATE INDEX runs_running ON runs (started_at) WHERE status = 'running'"),
    # multi-turn conversations (voxwatch.store.conversation_rows): one row per conversation, one per turn
    (9, ";\n".join([
        _table("conversations", list(columns(ConversationRow)), f"PRIMARY KEY ({', '.join(CONVERSATION_KEY)})"),
        "CREATE INDEX conversations_time ON conversations (started_at)",
        _table("conversation_turns", list(columns(TurnRow)), f"PRIMARY KEY ({', '.join(TURN_KEY)})"),
    ])),
    # the reconciler counts a conversation run's turns by its run id (voxwatch.store.conversations)
    (10, "CREATE INDEX conversations_run ON conversations (run_id)"),
    # the human-preference board (voxwatch.store.preference): prompts, outputs, pairs, raters, ratings
    (11, ";\n".join(preference_ddl("postgres"))),
    # the preference board's fitted snapshots (voxwatch.store.preference_fits), written by `preference fit`
    (12, ";\n".join(preference_fits_ddl("postgres"))),
    # the registry's exclusions, kept in sync on every open (voxwatch.store.exclusions): the dashboards JOIN them
    (13, EXCLUSIONS_DDL),
    # every ranking's paired comparisons per window (voxwatch.store.comparisons), refreshed as ticks finish
    (14, COMPARISONS_DDL),
    # the fact table partitioned by month, each run's month in obs_runs (voxwatch.store.partitions)
    (15, _by_month),
    # speech quality: a row's DNSMOS score and its instrument, a context field (_speech_quality)
    (16, _speech_quality),
    # each dataset family's clean-against-degraded lines per window and region (voxwatch.store.family_lines)
    (17, FAMILY_LINES_DDL),
    # a board's page reads its window's rows of one board (and dataset) of the aggregates: by index, not a
    # pass over every series' rows (49,500 rows at a year of 50 models x 20 datasets x 5 regions: 23 ms)
    (18, "CREATE INDEX aggregates_board ON aggregates (time_window, board, dataset)"),
    # each series comparison board's views per window (voxwatch.store.compare_views), and the refreshes
    # finishing runs ask for, run once however many ask at once (voxwatch.store.coalesce)
    (19, COMPARE_VIEWS_DDL + ";\n" + REFRESH_REQUESTS_DDL),
    # speech quality of a conversation's replies: each turn's DNSMOS score, its instrument and its error
    (20, _turn_quality),
    # answer accuracy: whether an S2S single turn's reply said its question's answer (_answer_correct)
    (21, _answer_correct),
    # WER at the agent's deadline: a streaming STT row's word errors at each deadline after the end of speech
    # (obs_facts.errors_at_<D>ms, METHOD "WER at the deadline")
    (22, _facts(*ERRORS_FIELDS)),
    # hallucination on non-speech: invented words on a clip without speech, audible audio on an empty prompt
    # (obs_facts.invented_words, invented_audio_ms; METHOD "Hallucination on non-speech")
    (23, _facts("invented_words", "invented_audio_ms")),
    # TTS playback stalls: each row's count of stalls after the audible onset and their total (METHOD "TTS:
    # playback stalls")
    (24, _facts("stall_count", "stall_ms")),
    # a streaming STT's own end of turn: its latency after the end of speech and its false cut-offs (METHOD
    # "STT end of turn")
    (25, _facts("eot_ms", "eot_false_cutoffs")),
    # TTS fed streamed text: TTFA from the first and the last text piece's write, and the cancel latency once
    # audible (METHOD "TTS: streamed text and cancel")
    (27, _facts("ttfa_first_text_ms", "ttfa_last_text_ms", "cancel_ms", "cancel_end")),
]


def upgrade(conn: psycopg.Connection) -> list[int]:
    """Apply the migrations this database lacks, then add any dataclass field a table lacks.

    One transaction under an advisory lock, so workers opening the store at once migrate it once.
    Returns the versions applied.
    """
    applied: list[int] = []
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        # checked first: CREATE ... IF NOT EXISTS needs CREATE on the schema even when the table is there,
        # and the web's role (docker/postgres-roles.sh) opens an up-to-date store without it
        if cur.execute("SELECT to_regclass('schema_migrations')").fetchone()[0] is None:
            cur.execute("CREATE TABLE schema_migrations "
                        "(version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        have = {v for (v,) in cur.execute("SELECT version FROM schema_migrations")}
        for version, step in MIGRATIONS:
            if version not in have:
                if callable(step):
                    step(cur)
                else:
                    for statement in step.split(";\n"):
                        cur.execute(statement)
                cur.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
                applied.append(version)
        if have & {15} or 15 in applied:  # partitioned: this month's and the next's, so that writes rarely make one
            partitions.ahead(cur)
        types = dict(columns(Observation))
        for table, cols in (("obs_facts", [(f, types[f]) for f in INLINE]),
                            *((t, [(f, types[f]) for f in fs]) for t, fs in DICTIONARIES.items()),
                            ("runs", columns(RunRecord)), ("aggregates", _aggregate_columns()),
                            ("conversations", columns(ConversationRow)), ("conversation_turns", columns(TurnRow))):
            # only a missing field takes the table lock (ALTER waits behind any long read)
            have = {c for (c,) in cur.execute("SELECT column_name FROM information_schema.columns "
                                              "WHERE table_schema = current_schema() AND table_name = %s", (table,))}
            for name, sql_type in cols:
                if name not in have:
                    cur.execute(f"ALTER TABLE {table} ADD COLUMN {name} {sql_type}")
        shown = [c for (c,) in cur.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = "
                                           "current_schema() AND table_name = 'observations' ORDER BY ordinal_position")]
        if shown != list(FIELDS):  # a field was added (or the view is new): draw it again
            cur.execute("DROP VIEW IF EXISTS observations CASCADE")
            for statement in derived_objects():
                cur.execute(statement)
    return applied
