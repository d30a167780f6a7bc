"""Postgres backend: the distributed store; rows are COPYed in and each series' aggregates kept current.

Same contract as the SQLite store (idempotent add on the observation key, runs upserted). Rows are
stored as narrow fact rows (voxwatch.store.layout) and read back through the `observations` view.
After a write, the series it touched get their rolling aggregates recomputed
(voxwatch.store.aggregates), so the leaderboard is a read of a small table instead of a pass over
every row.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from operator import attrgetter
from typing import Callable, Iterable, Iterator, Sequence

import psycopg

from voxwatch.store.conversation_rows import CONVERSATION_FIELDS, TURN_FIELDS, ConversationRow, TurnRow
from voxwatch.metrics.paired import Comparison
from voxwatch.metrics.series import MetricRow
from voxwatch.foundation.observation import RUN_FIELDS, Observation, RunRecord
from voxwatch.foundation.series_key import RowsKey
from voxwatch.providers.registry import Registry
from voxwatch.foundation.store_url import StoreError
from voxwatch.metrics.family_lines import BOARD as FAMILY_BOARD
from voxwatch.store import (aggregates, coalesce, compare_views, comparisons, exclusions, family_lines, migrations,
                            partitions)
from voxwatch.store.board_series import BoardSeries, board_series
from voxwatch.store import conversations as conv
from voxwatch.store import preference, preference_fits
from voxwatch.store.connection import connect, database_error
from voxwatch.store.interning import Dictionaries, Spans
from voxwatch.store.layout import FACT_COLUMNS, FACT_REFS, PARTITION
from voxwatch.store.observation_reads import emulated_counts, stalled_counts, stream_observations
from voxwatch.store.row_filter import RowFilter
from voxwatch.store.runs import unrecorded_run
from voxwatch.foundation.store_url import StoreURL, parse_store_url

SMALL_BATCH = 16
"""Up to this many rows go in by executemany (one prepared INSERT, pipelined); more are COPYed.
benchmarks/store_scale.py measures both by batch size."""

_FIELD_TYPES = {name: sql_type.split(" COLLATE")[0] for name, sql_type in migrations.columns(Observation)}
_FACT_TYPES = [("integer" if c in FACT_REFS or c == PARTITION else _FIELD_TYPES[c]) for c in FACT_COLUMNS]
_FACTS = ", ".join(FACT_COLUMNS)
_INSERT = f"INSERT INTO obs_facts ({_FACTS}) VALUES ({', '.join(['%s'] * len(FACT_COLUMNS))}) ON CONFLICT DO NOTHING"
_COPY = f"COPY {{}} ({_FACTS}) FROM STDIN (FORMAT BINARY)"  # binary: about twice as fast as text for these rows
_SPANS = ("INSERT INTO obs_spans AS s SELECT * FROM unnest(%s::integer[], %s::integer[], %s::float8[], %s::float8[]) "
          "ON CONFLICT (run_id_ref, context_ref) DO UPDATE SET first_at = least(s.first_at, EXCLUDED.first_at), "
          "last_at = greatest(s.last_at, EXCLUDED.last_at) "
          "WHERE s.first_at > EXCLUDED.first_at OR s.last_at < EXCLUDED.last_at")
_series = attrgetter(*aggregates.SERIES)  # a row's RowsKey values: the series whose aggregates its write changes
_RUN_COLS = ", ".join(RUN_FIELDS)
# rows of runs that have no record, measured since %s: the runs of the recent spans, then their rows by key
_UNRECORDED = ("SELECT n.name, min(f.started_at), min(c.region), min(f.seed) "
               "FROM (SELECT DISTINCT run_id_ref FROM obs_spans WHERE last_at >= %s) AS s "
               "JOIN obs_names n ON n.ref = s.run_id_ref JOIN obs_facts f ON f.run_id_ref = s.run_id_ref "
               "JOIN obs_contexts c ON c.ref = f.context_ref "
               "WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = n.name) GROUP BY n.name")
# each run's rows, found by the key's first column
_RUN_COUNTS = ("SELECT n.name, count(*), count(*) FILTER (WHERE f.status IS DISTINCT FROM 'ok') "
               "FROM obs_names n JOIN obs_facts f ON f.run_id_ref = n.ref "
               "WHERE n.digest = ANY(ARRAY(SELECT voxwatch_digest(ARRAY[x]) FROM unnest(%s::text[]) AS u(x))) "
               "GROUP BY n.name")


# the datasets a run measured, by the key's first column (what a finished tick's comparisons are refreshed for)
_RUN_FAMILIES = ("SELECT DISTINCT cl.family FROM obs_names n JOIN obs_facts f ON f.run_id_ref = n.ref "
                 "JOIN obs_clips cl ON cl.ref = f.clip_ref JOIN obs_contexts c ON c.ref = f.context_ref "
                 "WHERE n.digest = voxwatch_digest(ARRAY[%s::text]) AND c.board = %s AND cl.family IS NOT NULL "
                 "AND cl.utterance_id IS NOT NULL")
_RUN_DATASETS = ("SELECT DISTINCT d.name FROM obs_names n JOIN obs_facts f ON f.run_id_ref = n.ref "
                 "JOIN obs_names d ON d.ref = f.dataset_ref WHERE n.digest = voxwatch_digest(ARRAY[%s::text])")


log = logging.getLogger(__name__)


class PostgresStore(conv.ConversationReads, preference.PreferenceRows, preference_fits.PreferenceFits):
    MARK = "%s"  # psycopg's placeholder

    def __init__(self, url: str | StoreURL) -> None:
        self._store = url if isinstance(url, StoreURL) else parse_store_url(url)
        self.url = self._store.shown
        self._db: psycopg.Connection | None = None
        self._staging: psycopg.Connection | None = None  # the connection whose session has the staging table
        self._lookups: psycopg.Connection | None = None  # the dictionaries' own (interning.Dictionaries)
        self._dictionaries = Dictionaries(_FIELD_TYPES, self._lookup_connection)
        try:
            self.migrated = self.upgrade()  # the versions this open applied
        except StoreError:
            self.close()
            raise

    def upgrade(self) -> list[int]:
        """Apply any schema migration this database lacks (run on every open), then bring the registry's
        exclusions table up to date (the dashboards read it); returns the migrations applied."""
        try:
            applied = migrations.upgrade(self._connect())
            exclusions.sync(self._connect(), Registry.default())
            return applied
        except psycopg.Error as exc:
            raise self.error("cannot migrate", exc) from None

    def error(self, what: str, exc: Exception) -> StoreError:
        """A database error as a StoreError naming the store and what failed, every password hidden."""
        return database_error(self._store, what, exc)

    def connection(self) -> psycopg.Connection:
        """The store's autocommit connection (opened, migrated, reopened when broken), for readers that
        run their own SQL on it (the regression alerts); a database error there goes through `error`."""
        return self._connect()

    def _connect(self) -> psycopg.Connection:
        if self._db is None or self._db.closed or self._db.broken:
            self._db = self._open()
        return self._db

    def _open(self) -> psycopg.Connection:
        return connect(self._store)

    def _lookup_connection(self) -> psycopg.Connection:
        if self._lookups is None or self._lookups.closed or self._lookups.broken:
            self._lookups = self._open()
        return self._lookups

    @contextmanager
    def _cursor(self, what: str) -> Iterator[psycopg.Cursor]:
        """A cursor in a transaction; a database error becomes a StoreError saying what failed."""
        conn = self._connect()
        try:
            with conn.transaction(), conn.cursor() as cur:
                yield cur
        except psycopg.Error as exc:
            raise self.error(f"cannot {what}", exc) from None

    def add(self, rows: Iterable[Observation], refresh: bool = True) -> int:
        """Insert rows, skipping keys already stored; then, unless refresh is False, recompute the
        aggregates of every series the batch touched. Returns rows added."""
        rows = list(rows)
        if not rows:
            return 0
        try:
            added = self._insert(rows) if len(rows) <= SMALL_BATCH else self._copy(rows)
        except psycopg.Error as exc:
            raise self.error("cannot write observations to", exc) from None
        if refresh:  # even when nothing was new: a retry after a failed refresh must still refresh
            self.refresh({RowsKey._make(_series(r)) for r in rows if not r.emulator})
        return added

    def _insert(self, rows: list[Observation]) -> int:
        spans = Spans()
        facts = list(self._dictionaries.facts(rows, spans))
        conn = self._connect()
        with conn.transaction(), conn.cursor() as cur:
            cur.executemany(_INSERT, facts)  # rowcount is the sum over the rows
            added = cur.rowcount
            cur.execute(_SPANS, spans.arrays())
        return added

    def _copy(self, rows: list[Observation]) -> int:
        """COPY straight into the fact table, each row as it is converted (the server inserts while the
        client converts the next); a key stored before (a redelivered or repeated write) aborts that,
        and the rows go through a staging table that skips the stored keys."""
        conn, spans = self._connect(), Spans()
        try:
            facts = self._dictionaries.facts(rows, spans)  # the keys, and their partitions, before the COPY
            with conn.transaction(), conn.cursor() as cur:
                with cur.copy(_COPY.format("obs_facts")) as copy:
                    copy.set_types(_FACT_TYPES)
                    for f in facts:
                        copy.write_row(f)
                cur.execute(_SPANS, spans.arrays())
                return len(rows)
        except (psycopg.errors.UniqueViolation, psycopg.errors.DeadlockDetected):  # another writer has some of the keys
            pass
        self._stage()
        with conn.transaction(), conn.cursor() as cur:
            with cur.copy(_COPY.format("obs_staging")) as copy:
                copy.set_types(_FACT_TYPES)
                for f in self._dictionaries.facts(rows, spans):  # the refs are cached now: a second pass is cheap
                    copy.write_row(f)
            cur.execute(f"INSERT INTO obs_facts ({_FACTS}) SELECT {_FACTS} FROM obs_staging ON CONFLICT DO NOTHING")
            added = cur.rowcount
            cur.execute(_SPANS, spans.arrays())
        return added

    def _stage(self) -> None:
        """The session's staging table (temporary: no WAL, no index; emptied at each commit), made once."""
        conn = self._connect()
        if self._staging is not conn:
            try:
                conn.execute("CREATE TEMP TABLE IF NOT EXISTS obs_staging (LIKE obs_facts) ON COMMIT DELETE ROWS")
            except psycopg.Error as exc:
                raise self.error("cannot write observations to", exc) from None
            self._staging = conn

    def refresh(self, series: Iterable[RowsKey] | None = None,
                progress: Callable[[int, int], None] | None = None) -> int:
        """Recompute the rolling aggregates of these series (model, dataset, region, method version),
        or of every series when None. Returns the series refreshed; `progress` hears each done."""
        conn = self._connect()
        try:
            return aggregates.refresh(conn, None if series is None else list(series), progress=progress)
        except psycopg.Error as exc:
            raise self.error("cannot refresh the aggregates of", exc) from None

    def aggregates(self, window: str, since: float, boards: tuple[str, ...] = (), datasets: tuple[str, ...] = (),
                   models: tuple[str, ...] = ()) -> list[MetricRow]:
        """The precomputed leaderboard rows of one window, of these boards, datasets and models when
        given (exclusions are the reader's job)."""
        try:
            return aggregates.read(self._connect(), window, since, boards, datasets, models)
        except psycopg.Error as exc:
            raise self.error("cannot read the aggregates of", exc) from None

    def detach_before(self, month: int) -> list[str]:
        """Detach the fact partitions of every month before `month` (yyyymm), keeping their tables for
        archiving (store.partitions); returns their names."""
        try:
            return partitions.detach_before(self._connect(), month)
        except psycopg.Error as exc:
            raise self.error("cannot detach old months of", exc) from None

    def start_run(self, run: RunRecord) -> None:
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in RUN_FIELDS if c != "run_id")
        with self._cursor("record the run in") as cur:
            cur.execute(f"INSERT INTO runs ({', '.join(RUN_FIELDS)}) VALUES ({', '.join(['%s'] * len(RUN_FIELDS))}) "
                        f"ON CONFLICT (run_id) DO UPDATE SET {updates}", attrgetter(*RUN_FIELDS)(run))

    def finish_run(self, run: RunRecord) -> None:
        """Record the run's end, then recompute the paired comparisons of the datasets it measured
        (store.comparisons) and the clean-against-degraded lines of its STT families
        (store.family_lines): each compares many series at once, so they follow ticks, not each
        row's write."""
        self.start_run(run)
        if run.status == "running":
            return
        try:  # the record is written: tables that fail to refresh are caught up by the next tick
            with self._cursor("refresh the comparisons of") as cur:
                datasets = [d for (d,) in cur.execute(_RUN_DATASETS, (run.run_id,))]
                families = [f for (f,) in cur.execute(_RUN_FAMILIES, (run.run_id, FAMILY_BOARD))]
            for dataset in datasets:  # every region's run of a slot asks at once: one refresh answers them all
                self.coalesced(f"comparisons {dataset}", lambda d=dataset: self.refresh_comparisons([d]))
            for family in families:
                self.coalesced(f"family lines {family}", lambda f=family: self.refresh_families([f]))
        except StoreError as exc:
            log.warning("run %s is recorded, but its paired comparisons or family lines were not refreshed (%s): the "
                        "next finished tick or `voxwatch db refresh` recomputes them", run.run_id, exc)

    def refresh_comparisons(self, datasets: Iterable[str] | None = None) -> int:
        """Recompute the paired comparisons of these datasets' rankings (every dataset when None)."""
        try:
            return comparisons.refresh(self._connect(), datasets)
        except psycopg.Error as exc:
            raise self.error("cannot refresh the comparisons of", exc) from None

    def refresh_families(self, families: Iterable[str] | None = None) -> int:
        """Recompute the clean-against-degraded lines of these families (every family when None)."""
        if families is not None and not set(families):
            return 0
        try:
            return family_lines.refresh(self._connect(), families)
        except psycopg.Error as exc:
            raise self.error("cannot refresh the family lines of", exc) from None

    def coalesced(self, name: str, refresh: Callable[[], int]) -> int | None:
        """Ask for a named refresh and run it unless another process is (store.coalesce): None then."""
        try:
            return coalesce.coalesced(self._connect(), name, refresh)
        except psycopg.Error as exc:
            raise self.error(f"cannot refresh ({name}) in", exc) from None

    def board_series(self, board: str, protocol: str, method_version: str, since: float) -> BoardSeries:
        """Every stored series of a board's protocol since a time, as columns (store.board_series)."""
        try:
            return board_series(self._connect(), board, protocol, method_version, since)
        except psycopg.Error as exc:
            raise self.error("cannot read the series of a board from", exc) from None

    def keep_compare_views(self, board: str, views: Sequence[tuple[str, dict]], at: float) -> int:
        """Replace a comparison board's kept views, one per window (store.compare_views)."""
        try:
            return compare_views.write(self._connect(), board, views, at)
        except psycopg.Error as exc:
            raise self.error("cannot keep the comparison views in", exc) from None

    def comparisons(self, window: str) -> list[Comparison]:
        """One window's stored comparisons (what boards.comparisons reads for a rolling window)."""
        try:
            return comparisons.read(self._connect(), window)
        except psycopg.Error as exc:
            raise self.error("cannot read the comparisons of", exc) from None

    def runs(self) -> list[RunRecord]:
        with self._cursor("read the runs from") as cur:
            return [RunRecord(*row) for row in cur.execute(f"SELECT {', '.join(RUN_FIELDS)} FROM runs ORDER BY started_at")]

    def run(self, run_id: str) -> RunRecord | None:
        with self._cursor("read the runs from") as cur:
            row = cur.execute(f"SELECT {_RUN_COLS} FROM runs WHERE run_id = %s", (run_id,)).fetchone()
        return RunRecord(*row) if row else None

    def runs_since(self, since: float) -> list[RunRecord]:
        with self._cursor("read the runs from") as cur:
            recorded = [RunRecord(*row) for row in cur.execute(
                f"SELECT {_RUN_COLS} FROM runs WHERE started_at >= %s OR status = 'running' ORDER BY started_at", (since,))]
            unrecorded = cur.execute(_UNRECORDED, (since,)).fetchall()
        return recorded + [unrecorded_run(*row) for row in unrecorded]

    def run_counts(self, run_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        with self._cursor("count the rows of") as cur:
            counts = {run_id: (rows, failed) for run_id, rows, failed in cur.execute(_RUN_COUNTS, (list(run_ids),))}
            return conv.with_turn_counts(counts, cur.execute(conv.select_turn_counts("= ANY(%s)"),
                                                             (list(run_ids),)).fetchall())

    def observations(self, since: float | None = None, only: RowFilter | None = None) -> Iterator[Observation]:
        try:
            yield from stream_observations(self._connect(), only or RowFilter(since=since))
        except psycopg.Error as exc:
            raise self.error("cannot read observations from", exc) from None

    def emulated(self, only: RowFilter) -> dict[str, int]:
        try:
            return emulated_counts(self._connect(), only)
        except psycopg.Error as exc:
            raise self.error("cannot count the emulated rows of", exc) from None

    def stalled(self, only: RowFilter) -> dict[str, int]:
        try:
            return stalled_counts(self._connect(), only)
        except psycopg.Error as exc:
            raise self.error("cannot count the stalled rows of", exc) from None

    def add_conversation(self, row: ConversationRow, turns: Sequence[TurnRow]) -> bool:
        """Store a conversation with its turns; False (nothing written) when it is already stored."""
        with self._cursor("write a conversation to") as cur:
            cur.execute(conv.insert(conv.CONVERSATIONS, self.MARK), attrgetter(*CONVERSATION_FIELDS)(row))
            if cur.rowcount == 0:
                return False
            cur.executemany(conv.insert(conv.TURNS, self.MARK), [attrgetter(*TURN_FIELDS)(t) for t in turns])
            return True

    def _conversations(self, sql: str, args: list) -> list[tuple[ConversationRow, list[TurnRow]]]:
        with self._cursor("read the conversations of") as cur:
            return read_conversations(cur, sql, args)

    def close(self) -> None:
        for conn in (self._db, self._lookups):
            if conn is not None:
                conn.close()


def read_conversations(cur: psycopg.Cursor, sql: str, args: list) -> list[tuple[ConversationRow, list[TurnRow]]]:
    """The conversations `sql` selects, each with its turns, on a cursor: the store's, or the web
    app's own read-only connection (which must not open a PostgresStore: that migrates)."""
    rows = [ConversationRow(*r) for r in cur.execute(sql, args)]
    turns: dict[str, list[TurnRow]] = {r.conversation_id: [] for r in rows}
    if turns:
        for t in cur.execute(conv.select_turns("= ANY(%s)"), (list(turns),)):
            turn = TurnRow(*t)
            turns[turn.conversation_id].append(turn)
    return [(r, turns[r.conversation_id]) for r in rows]
