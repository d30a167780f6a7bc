"""What the web app reads from a store: the leaderboard, daily history, method start dates, alerts,
conversations, the newest preference fit, and the rows of a family or of some speakers' or accents'
clips (the clean-vs-degraded page and a filtered board compute from rows: no aggregate holds them).

One interface over both stores. The leaderboard comes from leaderboard.from_store, the code
`voxwatch leaderboard` runs (Postgres: the precomputed `aggregates` table; SQLite: computed from
the rows), with the registry's exclusions applied. Everything else is a read that excludes
emulator rows (and conversations held against an emulator). A store that cannot be read raises StoreUnavailable: its public text is safe to
show, its detail (for the log) has every password replaced by ***.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import Iterable, Iterator, Protocol

import psycopg
import psycopg.errors

from voxwatch.boards import comparisons as board_comparisons
from voxwatch.boards import leaderboard
from voxwatch.alerts.store import Alert
from voxwatch.store.conversation_rows import ConversationRow, TurnRow
from voxwatch.metrics.paired import Comparison
from voxwatch.metrics.series import MetricRow
from voxwatch.foundation.observation import Observation
from voxwatch.providers.registry import Registry
from voxwatch.foundation.redaction import redact_url, scrub
from voxwatch.foundation.series_key import RowsKey
from voxwatch.foundation.store_url import StoreError
from voxwatch.store import aggregates, layout, open_store
from voxwatch.store import comparisons as paired_table
from voxwatch.store.connection import connect, database_error
from voxwatch.store.conversations import ConversationReads
from voxwatch.metrics.family_lines import BOARD as FAMILY_BOARD, FamilyView, build as family_build
from voxwatch.store import compare_views, family_lines
from voxwatch.store.family_reads import FamilyRow, family_rows
from voxwatch.store.observation_reads import stalled_counts, stream_observations
from voxwatch.store.postgres import PostgresStore, read_conversations
from voxwatch.store.preference_fits import SELECT_LATEST, FitRow, read_fit
from voxwatch.store.row_filter import RowFilter
from voxwatch.foundation.store_url import SQLITE, StoreURL, parse_store_url

from voxwatch.web.daily import HEADLINE, HISTORY_SQL, Daily, daily

log = logging.getLogger("voxwatch.web")

Conversation = tuple[ConversationRow, list[TurnRow]]
"""A stored conversation with its turns, in order."""
ClipValues = dict[str, list[str]]
"""{"speakers": [...], "accents": [...]}: the per-clip metadata present, sorted."""


def clip_values(pairs: Iterable[tuple[str | None, str | None]]) -> ClipValues:
    """The distinct speakers and accents of (speaker, accent) pairs, sorted, unknown (None) left out."""
    pairs = list(pairs)
    return {"speakers": sorted({s for s, _ in pairs if s}), "accents": sorted({a for _, a in pairs if a})}


class StoreUnavailable(RuntimeError):
    """The store cannot be read. `public` is shown on pages (no URL, no secret); `detail` goes to the log."""

    def __init__(self, public: str, detail: str) -> None:
        super().__init__(public)
        self.public, self.detail = public, detail


class AlertsUnavailable(RuntimeError):
    """This store has no alerts to show (SQLite, or a Postgres schema from before the alerts migration)."""


class Source(Protocol):
    kind: str  # "postgres" | "sqlite"

    def leaderboard(self, window: str, only: RowFilter | None = None) -> list[MetricRow]:
        """The window's leaderboard; over the clips `only` selects (speakers, accents) when given."""

    def family_rows(self, family: str, since: float) -> list:
        """A dataset family's STT rows since a time, with the Observation fields the family page reads."""

    def family_view(self, family: str, window: str, since: float, region: str | None = None) -> FamilyView:
        """A family's clean-against-degraded lines over a rolling window (starting at `since`), over one region or all."""

    def comparisons(self, window: str, only: RowFilter | None = None) -> list[Comparison]:
        """The window's paired comparisons (boards.comparisons.from_store), over the clips `only` selects."""

    def compare_view(self, board: str, window: str) -> dict | None:
        """A comparison board's kept view of a window (boards.compare_lines' JSON); None: compute it from the rows."""

    def observations(self, only: RowFilter) -> list[Observation]:
        """The rows `only` selects, in time order, none measured against an emulator."""

    def clip_values(self, board: str, since: float) -> ClipValues:
        """The speakers and accents of a board's rows since `since` (what its filter form offers)."""

    def stalled(self, board: str, since: float) -> dict[str, int]:
        """Each model's rows of a board since `since` excluded as the measuring worker's stall (its notes say so)."""

    def first_seen(self, series: list[RowsKey], since: float) -> dict[RowsKey, float]:
        """When each series' first row since `since` started (what a method-version note dates its changes by)."""

    def history(self, model_id: str, since: float) -> Daily: ...

    def alerts(self, resolved_since: float) -> list[Alert]: ...

    def newest(self, board: str | None = None) -> float | None:
        """When the newest stored row or conversation (of a board) not held against an emulator started; None when none is."""

    def conversations(self, since: float | None, model_id: str | None = None) -> list[Conversation]:
        """The conversations started at or after `since` (of one model), oldest first; none held against an emulator."""

    def conversation(self, conversation_id: str) -> Conversation | None:
        """One conversation with its turns; None when unknown or held against an emulator."""

    def bakeoff_conversations(self, since: float | None) -> list[Conversation]:
        """Every conversation started at or after `since`, those held against a local address too:
        the bake-off keeps a deployed agent's (web/bakeoff_views.compared), never a vendor emulator's."""

    def preference_fit(self) -> FitRow | None:
        """The newest stored preference fit (`voxwatch preference fit`); None before the first."""

    def version(self) -> tuple:
        """A value that changes whenever what the pages show could (web/freshness.py reads it)."""

    def close(self) -> None: ...


def open_source(url: str, registry: Registry) -> Source:
    """The source for a store URL; nothing is connected until the first read (a down database is a 503, not a crash)."""
    store = parse_store_url(url)
    return SQLiteSource(url, registry) if store.kind == SQLITE else PostgresSource(store, registry)


def _wer_errors(r: Observation) -> int | None:
    """A row's S + D + I, None when it was not scored (as the Postgres read's sum of NULLs is)."""
    parts = (r.substitutions, r.deletions, r.insertions)
    return None if None in parts else sum(parts)


def _instrument(board: str, instrument_id: str | None) -> str | None:
    """The leaderboard's series split: TTS rows scored by different instruments are never pooled."""
    return (instrument_id or None) if board == "tts" else None


_FIRST_SEEN_SQL = layout.series_sql("f.started_at") + " LIMIT 1"
_CLIP_CONTEXTS = "ARRAY(SELECT ref FROM obs_contexts WHERE board = %(board)s AND emulator IS NOT TRUE)"
_CLIP_VALUES_SQL = ("SELECT DISTINCT f.speaker, f.accent FROM obs_facts f WHERE " + layout.in_runs(
    f"ARRAY(SELECT DISTINCT run_id_ref FROM obs_spans WHERE context_ref = ANY({_CLIP_CONTEXTS}) AND last_at >= %(since)s)")
    + f" AND f.context_ref = ANY({_CLIP_CONTEXTS}) AND f.started_at >= %(since)s")
"""The speakers and accents of a board's real rows since a time: the fact rows of the board's runs,
found through the spans as a series' are (layout.series_sql), narrow columns only."""
_NEWEST_SQL = ("SELECT max(s.last_at) FROM obs_spans s JOIN obs_contexts c ON c.ref = s.context_ref "
               "WHERE c.emulator IS NOT TRUE AND (%(board)s::text IS NULL OR c.board = %(board)s)")
"""The newest real row's start: the last row of each run and context is kept in obs_spans (small)."""
_NEWEST_CONVERSATION_SQL = "SELECT max(started_at) FROM conversations WHERE emulator IS NOT TRUE"
"""The newest real conversation's start (the S2S board's, and the site's)."""
_ALERT_COLUMNS = ", ".join(f.name for f in fields(Alert))
_ALERTS_SQL = (f"SELECT {_ALERT_COLUMNS} FROM alerts WHERE state <> 'resolved' OR resolved_at >= %s "
               "ORDER BY CASE state WHEN 'firing' THEN 0 WHEN 'pending' THEN 1 ELSE 2 END, "
               "coalesce(resolved_at, fired_at, opened_at) DESC, id DESC LIMIT 500")
CONNECT_TIMEOUT_S = 5
VERSION_TIMEOUT_MS = 2000
"""The version read's statement timeout: the health check answers even while a lock holds the table."""
_VERSION_SQL = "SELECT count(*), sum(xmin::text::bigint), max(computed_at) FROM aggregates"
_ALERTS_VERSION_SQL = "SELECT count(*), sum(xmin::text::bigint) FROM alerts"
_CONVERSATIONS_VERSION_SQL = "SELECT count(*), sum(xmin::text::bigint) FROM conversations"
_PREFERENCE_VERSION_SQL = "SELECT max(fit_id) FROM preference_fits"
_COMPARISONS_VERSION_SQL = "SELECT count(*), max(computed_at) FROM comparisons"
_FAMILY_LINES_VERSION_SQL = "SELECT count(*), max(computed_at) FROM family_lines"
_COMPARE_VIEWS_VERSION_SQL = "SELECT count(*), max(computed_at) FROM compare_views"
ALERTS_NEED_POSTGRES = "alerts need the Postgres store: the regression alerts run only in distributed mode"


class PostgresSource:
    """One autocommit connection shared by the request threads (psycopg serializes its use), and one
    for the version reads, so they never wait behind a page's; each reopened when it breaks.
    Read-only: it never migrates, so a read-only role is enough."""

    kind = "postgres"

    def __init__(self, store: StoreURL, registry: Registry) -> None:
        self._store, self._registry = store, registry
        self._locks = {"pages": threading.Lock(), "version": threading.Lock()}  # a slow connect holds up only its own
        self._dbs: dict[str, psycopg.Connection] = {}

    def _conn(self, role: str = "pages") -> psycopg.Connection:
        with self._locks[role]:
            db = self._dbs.get(role)
            if db is None or db.closed or db.broken:
                db = self._dbs[role] = connect(self._store, timeout_s=CONNECT_TIMEOUT_S)
                if role == "version":
                    db.execute(f"SET statement_timeout = {VERSION_TIMEOUT_MS}")
            return db

    @contextmanager
    def _reading(self, what: str, role: str = "pages") -> Iterator[psycopg.Connection]:
        try:
            yield self._conn(role)
        except StoreError as exc:  # the connection failed: connect() worded it
            raise StoreUnavailable("The store cannot be reached right now.", f"cannot read {what}: {exc}") from None
        except psycopg.errors.UndefinedTable as exc:
            raise StoreUnavailable("The store's schema is not set up yet: run `voxwatch db upgrade`.",
                                   self._detail(what, exc)) from None
        except psycopg.Error as exc:
            raise StoreUnavailable("The store cannot be reached right now.", self._detail(what, exc)) from None

    def _detail(self, what: str, exc: Exception) -> str:
        return str(database_error(self._store, f"cannot read {what} from", exc))

    def aggregates(self, window: str, since: float, boards: tuple[str, ...] = (), datasets: tuple[str, ...] = (),
                   models: tuple[str, ...] = ()) -> list[MetricRow]:
        """What leaderboard.from_store reads from a store that keeps its aggregates current."""
        return aggregates.read(self._conn(), window, since, boards, datasets, models)

    def leaderboard(self, window: str, only: RowFilter | None = None) -> list[MetricRow]:
        with self._reading("the leaderboard"):
            return leaderboard.from_store(self, window, self._registry, only)

    def comparisons(self, window: str, only: RowFilter | None = None) -> list[Comparison]:
        with self._reading("the paired comparisons") as conn:
            if only is None or not (only.since or only.until or only.by_clip):
                return paired_table.read(conn, window)
            return board_comparisons.from_store(self, window, only)

    def observations(self, only: RowFilter) -> list[Observation]:
        """What leaderboard.from_store reads for a board over some clips, and the family page's rows."""
        with self._reading("the observations") as conn:
            return [r for r in stream_observations(conn, only) if not r.emulator]

    def family_rows(self, family: str, since: float) -> list[FamilyRow]:
        """The family page's rows: narrow, in SQL (store.family_reads)."""
        with self._reading("a family's rows") as conn:
            return family_rows(conn, family, since)

    def family_view(self, family: str, window: str, since: float, region: str | None = None) -> FamilyView:
        """The lines kept as the last tick finished (store.family_lines); computed from the rows when
        none are (a store no tick has finished in since its upgrade, a family no refresh has seen)."""
        with self._reading("a family's lines") as conn:
            kept = family_lines.read(conn, family, window, region)
        return kept if kept is not None else family_build(self.family_rows(family, since), family, window, region)

    def compare_view(self, board: str, window: str) -> dict | None:
        """The view kept as the last tick finished (store.compare_views); None when none is fresh."""
        with self._reading("a comparison board's view") as conn:
            return compare_views.read(conn, board, window, time.time())

    def clip_values(self, board: str, since: float) -> ClipValues:
        with self._reading("the speakers and accents") as conn:
            return clip_values(conn.execute(_CLIP_VALUES_SQL, {"since": since, "board": board}).fetchall())

    def stalled(self, board: str, since: float) -> dict[str, int]:
        with self._reading("the stalled rows") as conn:
            return stalled_counts(conn, RowFilter(boards=(board,), since=since))

    def first_seen(self, series: list[RowsKey], since: float) -> dict[RowsKey, float]:
        out = {}
        with self._reading("method start dates") as conn:
            for s in series:
                first = conn.execute(_FIRST_SEEN_SQL, {**dict(zip(layout.SERIES, s)), "since": since}).fetchone()
                if first is not None:
                    out[s] = first[0]
        return out

    def newest(self, board: str | None = None) -> float | None:
        with self._reading("the newest row") as conn:
            found = [conn.execute(_NEWEST_SQL, {"board": board}).fetchone()[0]]
            if board in (None, "s2s"):
                found.append(conn.execute(_NEWEST_CONVERSATION_SQL).fetchone()[0])
        return max((t for t in found if t is not None), default=None)

    def history(self, model_id: str, since: float) -> Daily:
        with self._reading("a model's history") as conn:
            return daily(conn.execute(HISTORY_SQL, {"model_id": model_id, "since": since}))

    def alerts(self, resolved_since: float) -> list[Alert]:
        with self._reading("the alerts") as conn:
            try:
                rows = conn.execute(_ALERTS_SQL, (resolved_since,)).fetchall()
            except psycopg.errors.UndefinedTable:
                raise AlertsUnavailable("this store has no alerts table yet: run `voxwatch db upgrade`") from None
        return [Alert(*row) for row in rows]

    def conversations(self, since: float | None, model_id: str | None = None) -> list[Conversation]:
        with self._reading("the conversations") as conn:
            return _shown(_ConversationsOn(conn).conversations(since, model_id))

    def conversation(self, conversation_id: str) -> Conversation | None:
        with self._reading("a conversation") as conn:
            return _one(_ConversationsOn(conn).conversation(conversation_id))

    def bakeoff_conversations(self, since: float | None) -> list[Conversation]:
        with self._reading("the conversations") as conn:
            return _ConversationsOn(conn).conversations(since, None)

    def preference_fit(self) -> FitRow | None:
        with self._reading("the preference board") as conn:
            found = _optional(conn, SELECT_LATEST)
        return read_fit(found)

    def version(self) -> tuple:
        """Every write rewrites the aggregate rows of the series it touches (new row versions, so a new
        xmin sum), every change of an alert its row, a stored conversation adds its row (they touch
        no aggregate), and so does a preference fit (fits are only ever added), and a finished tick's
        comparisons, family lines and comparison views (rewritten with a new computed_at): small scans."""
        with self._reading("the store's version", "version") as conn:
            seen = conn.execute(_VERSION_SQL).fetchone()
            alerts, conversations, fits, compared, lined, viewed = (_optional(conn, sql) for sql in (
                _ALERTS_VERSION_SQL, _CONVERSATIONS_VERSION_SQL, _PREFERENCE_VERSION_SQL, _COMPARISONS_VERSION_SQL,
                _FAMILY_LINES_VERSION_SQL, _COMPARE_VIEWS_VERSION_SQL))
        return (*seen, alerts, conversations, fits, compared, lined, viewed)

    def close(self) -> None:
        for role, lock in self._locks.items():
            with lock:
                if role in self._dbs:
                    self._dbs[role].close()


def _optional(conn: psycopg.Connection, sql: str) -> tuple | None:
    """A read of a table a schema from before its migration lacks (None then)."""
    try:
        return conn.execute(sql).fetchone()
    except psycopg.errors.UndefinedTable:
        return None


class _ConversationsOn(ConversationReads):
    """The store's conversation reads (its SQL and row reading) on the source's own connection."""

    MARK = PostgresStore.MARK

    def __init__(self, conn: psycopg.Connection) -> None:
        self._conn = conn

    def _conversations(self, sql: str, args: list) -> list[Conversation]:
        with self._conn.transaction(), self._conn.cursor() as cur:  # the conversations and turns of one snapshot
            return read_conversations(cur, sql, args)


def _shown(found: list[Conversation]) -> list[Conversation]:
    """What the site shows: never a conversation held against an emulator."""
    return [c for c in found if not c[0].emulator]


def _one(found: Conversation | None) -> Conversation | None:
    return found if found is not None and not found[0].emulator else None


class SQLiteSource:
    """The embedded store, opened per read: a sqlite3 connection belongs to the thread that made it,
    and requests run on a pool of threads. The version reads keep one connection of their own."""

    kind = "sqlite"

    def __init__(self, url: str, registry: Registry) -> None:
        self._url, self._registry = url, registry
        self._lock = threading.Lock()
        self._path: Path | None = None  # known from the first read
        self._watch: tuple[tuple[int, int], sqlite3.Connection] | None = None  # (file identity, connection)

    @contextmanager
    def _store(self, what: str):
        try:
            store = open_store(self._url, create=False)  # the web app never writes: no file, no store
        except StoreError as exc:
            raise StoreUnavailable("The store cannot be opened right now.", f"cannot read {what}: {exc}") from None
        try:
            yield store
        except (sqlite3.Error, StoreError) as exc:
            raise StoreUnavailable("The store cannot be read right now.",
                                   scrub(f"cannot read {what} from {self._url}: {exc}", urls=[self._url])) from None
        finally:
            store.close()

    def leaderboard(self, window: str, only: RowFilter | None = None) -> list[MetricRow]:
        with self._store("the leaderboard") as store:
            return leaderboard.from_store(store, window, self._registry, only)

    def comparisons(self, window: str, only: RowFilter | None = None) -> list[Comparison]:
        with self._store("the paired comparisons") as store:
            return board_comparisons.from_store(store, window, only)

    def observations(self, only: RowFilter) -> list[Observation]:
        with self._store("the observations") as store:
            return [r for r in store.observations(only=only) if not r.emulator]

    def family_rows(self, family: str, since: float) -> list[Observation]:
        """The family page's rows: the family's STT observations of the window."""
        return self.observations(RowFilter(since=since, boards=(FAMILY_BOARD,), families=(family,)))

    def family_view(self, family: str, window: str, since: float, region: str | None = None) -> FamilyView:
        """Computed from the window's rows on each read (an embedded store is small)."""
        return family_build(self.family_rows(family, since), family, window, region)

    def compare_view(self, board: str, window: str) -> dict | None:
        """None: an embedded store computes each page from its rows."""
        return None

    def clip_values(self, board: str, since: float) -> ClipValues:
        with self._store("the speakers and accents") as store:
            return clip_values(store.clip_values(board, since))

    def stalled(self, board: str, since: float) -> dict[str, int]:
        with self._store("the stalled rows") as store:
            return store.stalled(RowFilter(boards=(board,), since=since))

    def first_seen(self, series: list[RowsKey], since: float) -> dict[RowsKey, float]:
        wanted, out = set(series), {}
        with self._store("method start dates") as store:
            for r in store.observations(since=since):
                s = RowsKey(r.model_id, r.dataset, r.region, r.method_version)
                if not r.emulator and s in wanted and s not in out:  # rows come in time order
                    out[s] = r.started_at
        return out

    def newest(self, board: str | None = None) -> float | None:
        with self._store("the newest row") as store:
            return store.newest_started_at(board)

    def history(self, model_id: str, since: float) -> Daily:
        with self._store("a model's history") as store:
            return daily(
                (r.dataset, r.region, r.method_version, r.protocol, _instrument(r.board, r.instrument_id) or "",
                 int(r.started_at // 86400), r.status, _wer_errors(r), r.ref_words, *(getattr(r, m) for m in HEADLINE))
                for r in store.observations(since=since) if r.model_id == model_id and not r.emulator)

    def alerts(self, resolved_since: float) -> list[Alert]:
        raise AlertsUnavailable(ALERTS_NEED_POSTGRES)

    def conversations(self, since: float | None, model_id: str | None = None) -> list[Conversation]:
        with self._store("the conversations") as store:
            return _shown(store.conversations(since, model_id))

    def conversation(self, conversation_id: str) -> Conversation | None:
        with self._store("a conversation") as store:
            return _one(store.conversation(conversation_id))

    def bakeoff_conversations(self, since: float | None) -> list[Conversation]:
        with self._store("the conversations") as store:
            return list(store.conversations(since, None))

    def preference_fit(self) -> FitRow | None:
        with self._store("the preference board") as store:
            return store.latest_preference_fit()

    def version(self) -> tuple:
        """The file's identity and SQLite's data_version, which changes whenever another connection
        commits; read on a connection kept open for it (reopened when the file is replaced)."""
        with self._lock:
            if self._path is None:
                with self._store("the store's version") as store:  # creates it, as the first page would
                    self._path = store.path
            try:
                st = os.stat(self._path)
                identity = (st.st_dev, st.st_ino)
                if self._watch is None or self._watch[0] != identity:
                    self.close()
                    self._watch = identity, sqlite3.connect(self._path, check_same_thread=False)
                return (*identity, self._watch[1].execute("PRAGMA data_version").fetchone()[0])
            except (OSError, sqlite3.Error) as exc:
                raise StoreUnavailable("The store cannot be read right now.",
                                       f"cannot read the store's version from {redact_url(self._url)}: {exc}") from None

    def close(self) -> None:
        """Only the version reads' connection stays open between reads."""
        if self._watch is not None:
            self._watch[1].close()
            self._watch = None
