"""How the Postgres store lays an observation out: one narrow fact row, its repeated text in dictionaries.

Most of an observation's ~1 KB is text that thousands of rows share (the model and dataset names,
every version, the clip's reference). The fact table `obs_facts` keeps only what is the row's own
(its clocks, status, hypothesis, WER parts) and small integer refs into three dictionaries:

- `obs_names`: the strings of the idempotency key (run_id, model_id, dataset, clip_id), interned
  one to one, so the key (five integers) is exactly the observation key;
- `obs_clips`: what the clip is (condition, family, utterance, reference text);
- `obs_contexts`: how and where it was measured (board, protocol, region, versions, ...).

A dictionary entry is keyed by the digest of its values (`voxwatch_digest`, computed by the server,
NULL-safe) and is never deleted, so a ref a store has seen stays valid. The fact table has one
index, its key, with the run first: rows arrive run by run, so a write extends the index at its
right edge (a time index or a series index would each cost more per row than the table itself:
benchmarks/store_scale.py). A series' rows are found through `obs_spans`, the first and last `started_at` of each
(run, context): the runs of the series' contexts in a window, then each run's rows of one model and
dataset by key. The view `observations` shows the rows with
every Observation field, as before; `observations_during(a, b)` is the same for rows measured in
[a, b], found through the spans (what Grafana's panels read).
"""

from __future__ import annotations

from voxwatch.foundation.observation import FIELDS, KEY
from voxwatch.foundation.series_key import RowsKey

KEY_NAMES = KEY[:-1]
"""The key's strings, each stored as <field>_ref into obs_names; the last key field (attempt) is the row's own."""
CLIP_FIELDS = ("condition", "family", "utterance_id", "reference")
CONTEXT_FIELDS = ("board", "vendor", "protocol", "region", "voice", "dataset_manifest_sha256", "emulator",
                  "http_version", "instrument_id", "method_version", "runner_version", "normalizer",
                  "normalizer_version", "vad", "vad_version", "vad_params", "onset_version", "quality_instrument")
DICTIONARIES = {"obs_clips": CLIP_FIELDS, "obs_contexts": CONTEXT_FIELDS}
"""Each tuple dictionary and its columns; the fact row refers to one entry of each (clip_ref, context_ref)."""
_ELSEWHERE = set(KEY_NAMES) | set(CLIP_FIELDS) | set(CONTEXT_FIELDS)
INLINE = tuple(f for f in FIELDS if f not in _ELSEWHERE)
"""The fields the fact row holds itself, in Observation order. A new Observation field lands here
unless it is added to a dictionary above: `upgrade` adds its column to obs_facts and redraws the view."""
PARTITION = "run_month"
"""The fact table's partition key: the UTC month (yyyymm) of its run's first stored row (store.partitions)."""
FACT_KEY = tuple(f"{f}_ref" for f in KEY_NAMES) + ("attempt", PARTITION)
"""The primary key: the observation's key, and the partition key (one per run, so the key stays one key)."""
FACT_REFS = tuple(f"{f}_ref" for f in KEY_NAMES) + ("clip_ref", "context_ref")
FACT_COLUMNS = FACT_KEY + ("clip_ref", "context_ref") + tuple(f for f in INLINE if f != "attempt")
"""The fact row's columns, in the order of a COPY: the key, the two dictionary refs, the row's own."""

DIGEST_FUNCTION = (
    "CREATE OR REPLACE FUNCTION voxwatch_digest(v text[]) RETURNS bytea LANGUAGE sql STABLE STRICT PARALLEL SAFE "
    "AS $$ SELECT sha256(convert_to(string_agg(CASE WHEN x IS NULL THEN '-' ELSE length(x)::text || ':' || x END, "
    "',' ORDER BY i), 'UTF8')) FROM unnest(v) WITH ORDINALITY AS t(x, i) $$")
"""A dictionary entry's identity: its values, each length-prefixed (so no two tuples share a text),
NULL kept apart from any string."""


def digest_of(columns: tuple[str, ...], alias: str, types: dict[str, str]) -> str:
    """The SQL digest of the columns of `alias` (non-text columns cast to text)."""
    parts = [f"{alias}.{c}" if types[c].startswith("text") else f"{alias}.{c}::text" for c in columns]
    return f"voxwatch_digest(ARRAY[{', '.join(parts)}])"


def _source(field: str) -> str:
    if field in KEY_NAMES:
        return f"n_{field}.name"
    if field in CLIP_FIELDS:
        return f"cl.{field}"
    if field in CONTEXT_FIELDS:
        return f"cx.{field}"
    return f"f.{field}"


SELECT_OBSERVATION = ", ".join(f"{_source(f)} AS {f}" for f in FIELDS)
FROM_OBSERVATION = ("obs_facts f "
                    + " ".join(f"JOIN obs_names n_{k} ON n_{k}.ref = f.{k}_ref" for k in KEY_NAMES)
                    + " JOIN obs_clips cl ON cl.ref = f.clip_ref JOIN obs_contexts cx ON cx.ref = f.context_ref")


def runs_during(low: str, high: str) -> str:
    """The refs of the runs with a row measured in [low, high] (SQL expressions)."""
    return f"ARRAY(SELECT DISTINCT run_id_ref FROM obs_spans WHERE last_at >= {low} AND first_at <= {high})"


def in_runs(runs: str, alias: str = "f", months: bool = True) -> str:
    """The fact rows of these runs (an SQL array of run refs): by key, in only their months' partitions
    (the span of their months comes from subqueries, so Postgres prunes the partitions outside it as
    the query starts; it cannot prune on `= ANY` of a subquery's array).
    months=False: the key alone (the table before it was partitioned, for migration 7's SQL)."""
    if not months:
        return f"{alias}.run_id_ref = ANY({runs})"
    months_of = f"FROM obs_runs WHERE run_ref = ANY({runs})"
    return (f"{alias}.run_id_ref = ANY({runs}) AND {alias}.{PARTITION} BETWEEN (SELECT min(month) {months_of}) "
            f"AND (SELECT max(month) {months_of})")


def derived_objects() -> list[str]:
    """The view and function drawn from the tables (redrawn by `upgrade` whenever a field is added)."""
    return [
        f"CREATE VIEW observations AS SELECT {SELECT_OBSERVATION} FROM {FROM_OBSERVATION}",
        "CREATE FUNCTION observations_during(low double precision, high double precision) RETURNS SETOF observations "
        f"LANGUAGE sql STABLE AS $$ SELECT {SELECT_OBSERVATION} FROM {FROM_OBSERVATION} "
        f"WHERE {in_runs(runs_during('low', 'high'))} AND f.started_at BETWEEN low AND high $$",
    ]


def _name(param: str) -> str:
    return f"(SELECT ref FROM obs_names WHERE digest = voxwatch_digest(ARRAY[%({param})s::text]))"


SERIES = RowsKey._fields
"""The columns a series' rows are read and refreshed by (model_id, dataset, region, method_version): RowsKey's
fields, in its order, so a RowsKey zips onto them."""


def series_sql(select: str, keys: tuple[str, ...] = SERIES, until: bool = False, emulator: bool = False,
               where: str = "", ordered: bool = True, months: bool = True) -> str:
    """The rows of one series (or of a model: keys=("model_id",)) measured since %(since)s, and before
    %(until)s when until=True, in time order, read by key run by run. `select` may use the fact row `f`,
    its context `c` and its dataset's name `d.name`. Parameters: each of `keys`, since, until.
    Emulator rows are left out unless emulator=True; `where` adds a condition of its own; ordered=False
    leaves the order to the caller (run by run, about time order). `c` and `d` are left joins, which
    the planner drops when `select` uses neither (every fact row has both)."""
    contexts = " AND ".join([f"{k} = %({k})s" for k in ("region", "method_version") if k in keys]
                            + ([] if emulator else ["emulator IS NOT TRUE"])) or "TRUE"
    contexts = f"ARRAY(SELECT ref FROM obs_contexts WHERE {contexts})"
    spans = (f"SELECT DISTINCT run_id_ref FROM obs_spans WHERE context_ref = ANY({contexts}) AND last_at >= %(since)s"
             + (" AND first_at < %(until)s" if until else ""))
    conditions = [in_runs(f"ARRAY({spans})", months=months)]
    conditions += [f"f.{k}_ref = {_name(k)}" for k in ("model_id", "dataset") if k in keys]
    conditions += ["f.started_at >= %(since)s"] + (["f.started_at < %(until)s"] if until else [])
    conditions.append(f"f.context_ref = ANY({contexts})")
    return (f"SELECT {select} FROM obs_facts f LEFT JOIN obs_contexts c ON c.ref = f.context_ref "
            f"LEFT JOIN obs_names d ON d.ref = f.dataset_ref WHERE {' AND '.join(conditions + ([where] if where else []))}"
            + (" ORDER BY f.started_at" if ordered else ""))


def measured_models(months: bool = True) -> str:
    """Those of these models that have a row not measured against an emulator (MEASURED_MODELS);
    months=False: as migration 7 drew it, before the fact table was partitioned."""
    return ("CREATE OR REPLACE FUNCTION measured_models(models text[]) RETURNS SETOF text LANGUAGE sql STABLE AS $$ "
            "SELECT u.m FROM unnest(models) AS u(m) WHERE EXISTS ("
            + series_sql("1", keys=("model_id",), ordered=False, months=months) % {"model_id": "u.m", "since": "'-infinity'"}
            + ") $$")


MEASURED_MODELS = measured_models()
"""Those of these models that have a row not measured against an emulator (what the alert-history
dashboard asks of its alerts' models): each model's rows read as a series is (series_sql: the runs
of real contexts, found once, then one probe of the key per run), instead of a filter on
`observations` that passes over every row (3.6-3.8 s a query at 10M rows, 17-22 ms this way)."""
