"""SQLite backend: the embedded default, one file, tables built from the Observation dataclass."""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from dataclasses import astuple, fields
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from voxwatch.store.conversation_rows import ConversationRow, TurnRow, booleans
from voxwatch.foundation.observation import FIELDS, KEY, RUN_FIELDS, Observation, RunRecord
from voxwatch.foundation.store_url import StoreError
from voxwatch.store import conversations as conv
from voxwatch.store import preference, preference_fits
from voxwatch.store.row_filter import RowFilter
from voxwatch.metrics.witness import STALLED
from voxwatch.store.runs import unrecorded_run


def _column(f) -> str:
    base = f.type.split("|")[0].strip() if isinstance(f.type, str) else f.type.__name__
    return f"{f.name} " + {"int": "INTEGER", "float": "REAL", "bool": "INTEGER"}.get(base, "TEXT")


SCHEMA_VERSION = 10  # 4: the conversation tables; 5: the preference board's (voxwatch.store.preference);
# 6: its fitted snapshots (voxwatch.store.preference_fits); 7: conversation turns' speech quality (the
# columns _table adds to an older store's conversation_turns, its turns' null); 8: observations'
# answer_correct (added by _migrate to an older store's observations, its rows' null); 9: the clock
# witness (clock_uncertainty_ms, arrival_stamp), added the same way; 10: TTS playback stalls
# (stall_count, stall_ms), and hallucination on non-speech (invented_words, invented_audio_ms), added the
# same way; the end of turn's eot_ms and eot_false_cutoffs, and the word errors at the deadlines
# (errors_at_<D>ms), are added the same way too (no version of their own: _migrate adds any missing field)


class SQLiteStore(conv.ConversationReads, preference.PreferenceRows, preference_fits.PreferenceFits):
    def __init__(self, path: Path, create: bool = True) -> None:
        self.path = path
        if not create and not path.is_file():
            raise StoreError(f"no SQLite store at {path} (a mistyped path? `voxwatch run` or `voxwatch db upgrade` "
                             "creates one)")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(path), timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._migrate()
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the SQLite store at {path}: {exc}") from None

    def _migrate(self) -> None:
        cols = ", ".join(_column(f) for f in fields(Observation))
        run_cols = ", ".join(_column(f) for f in fields(RunRecord))
        with self._db:
            self._db.execute(f"CREATE TABLE IF NOT EXISTS observations ({cols}, UNIQUE ({', '.join(KEY)}))")
            have = {r[1] for r in self._db.execute("PRAGMA table_info(observations)")}
            for f in fields(Observation):
                if f.name not in have:  # a store made by an older voxwatch gains the new field
                    self._db.execute(f"ALTER TABLE observations ADD COLUMN {_column(f)}")
            self._db.execute("CREATE INDEX IF NOT EXISTS observations_time ON observations (started_at)")
            self._db.execute(f"CREATE TABLE IF NOT EXISTS runs ({run_cols}, PRIMARY KEY (run_id))")
            have = {r[1] for r in self._db.execute("PRAGMA table_info(runs)")}
            for f in fields(RunRecord):
                if f.name not in have:
                    self._db.execute(f"ALTER TABLE runs ADD COLUMN {_column(f)}")
            self._db.execute("CREATE INDEX IF NOT EXISTS runs_started ON runs (started_at)")
            self._db.execute("CREATE INDEX IF NOT EXISTS runs_running ON runs (started_at) WHERE status = 'running'")
            for table, cls in ((conv.CONVERSATIONS, ConversationRow), (conv.TURNS, TurnRow)):
                self._table(table, cls, conv.PRIMARY_KEYS[table])
            self._db.execute(f"CREATE INDEX IF NOT EXISTS conversations_time ON {conv.CONVERSATIONS} (started_at)")
            self._db.execute(f"CREATE INDEX IF NOT EXISTS conversations_run ON {conv.CONVERSATIONS} (run_id)")
            for statement in preference.ddl("sqlite") + preference_fits.ddl("sqlite"):
                self._db.execute(statement)
            if self._db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:  # a reader never writes
                self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _table(self, name: str, cls, key: tuple[str, ...]) -> None:
        """A table built from a dataclass; one made by an older voxwatch gains the fields it lacks."""
        self._db.execute(f"CREATE TABLE IF NOT EXISTS {name} ({', '.join(_column(f) for f in fields(cls))}, "
                         f"PRIMARY KEY ({', '.join(key)}))")
        have = {r[1] for r in self._db.execute(f"PRAGMA table_info({name})")}
        for f in fields(cls):
            if f.name not in have:
                self._db.execute(f"ALTER TABLE {name} ADD COLUMN {_column(f)}")

    @contextmanager
    def _cursor(self, what: str):
        """A cursor in one transaction (rolled back on any error); a database error is a StoreError."""
        try:
            with self._db:
                cur = self._db.cursor()
                try:
                    yield cur
                finally:
                    cur.close()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot {what} {self.path}: {exc}") from None

    def add(self, rows: Iterable[Observation]) -> int:
        marks = ", ".join("?" for _ in FIELDS)
        sql = f"INSERT INTO observations ({', '.join(FIELDS)}) VALUES ({marks}) ON CONFLICT DO NOTHING"
        try:
            with self._db:
                before = self._db.total_changes
                self._db.executemany(sql, [astuple(r) for r in rows])
                return self._db.total_changes - before
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write observations to {self.path}: {exc}") from None

    def start_run(self, run: RunRecord) -> None:
        with self._db:
            self._db.execute(f"INSERT OR REPLACE INTO runs ({', '.join(RUN_FIELDS)}) VALUES "
                             f"({', '.join('?' for _ in RUN_FIELDS)})", astuple(run))

    finish_run = start_run

    def runs(self) -> list[RunRecord]:
        cur = self._db.execute(f"SELECT {', '.join(RUN_FIELDS)} FROM runs ORDER BY started_at")
        return [RunRecord(*row) for row in cur]

    def run(self, run_id: str) -> RunRecord | None:
        row = self._db.execute(f"SELECT {', '.join(RUN_FIELDS)} FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return RunRecord(*row) if row else None

    def runs_since(self, since: float) -> list[RunRecord]:
        try:
            recorded = [RunRecord(*row) for row in self._db.execute(
                f"SELECT {', '.join(RUN_FIELDS)} FROM runs WHERE started_at >= ? OR status = 'running' ORDER BY started_at", (since,))]
            unrecorded = self._db.execute(
                "SELECT run_id, min(started_at), min(region), min(seed) FROM observations WHERE started_at >= ? "
                "AND run_id NOT IN (SELECT run_id FROM runs) GROUP BY run_id", (since,)).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the runs of {self.path}: {exc}") from None
        return recorded + [unrecorded_run(*row) for row in unrecorded]

    def run_counts(self, run_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        ids, counts = list(run_ids), {}
        try:
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                for run_id, rows, failed in self._db.execute(
                        "SELECT run_id, count(*), sum(status IS NOT 'ok') FROM observations "
                        f"WHERE run_id IN ({', '.join('?' for _ in chunk)}) GROUP BY run_id", chunk):
                    counts[run_id] = (rows, failed)
                conv.with_turn_counts(counts, self._db.execute(
                    conv.select_turn_counts(f"IN ({', '.join('?' for _ in chunk)})"), chunk))
        except sqlite3.Error as exc:
            raise StoreError(f"cannot count the rows of {self.path}: {exc}") from None
        return counts

    def observations(self, since: float | None = None, only: RowFilter | None = None) -> Iterator[Observation]:
        where, args = (only or RowFilter(since=since)).where("?")
        sql = f"SELECT {', '.join(FIELDS)} FROM observations" + where
        bools = {f.name for f in fields(Observation) if str(f.type).startswith("bool")}
        for row in self._db.execute(sql + " ORDER BY started_at, rowid", args):
            record = dict(zip(FIELDS, row))
            for name in bools:
                if record[name] is not None:
                    record[name] = bool(record[name])
            yield Observation(**record)

    def emulated(self, only: RowFilter) -> dict[str, int]:
        return self._counts(only, "coalesce(emulator, 0) = 1", "emulated")

    def stalled(self, only: RowFilter) -> dict[str, int]:
        return self._counts(only, f"coalesce(emulator, 0) = 0 AND status = 'excluded' AND reason LIKE '{STALLED}%'",
                            "stalled")

    def _counts(self, only: RowFilter, condition: str, what: str) -> dict[str, int]:
        where, args = only.where("?")
        sql = f"SELECT model_id, count(*) FROM observations{where}{' AND' if where else ' WHERE'} {condition} GROUP BY model_id"
        try:
            return dict(self._db.execute(sql, args).fetchall())
        except sqlite3.Error as exc:
            raise StoreError(f"cannot count the {what} rows of {self.path}: {exc}") from None

    def clip_values(self, board: str, since: float) -> list[tuple[str | None, str | None]]:
        """The distinct (speaker, accent) of a board's real rows since a time: two narrow columns, not
        whole rows (what the board's filter form offers)."""
        sql = ("SELECT DISTINCT speaker, accent FROM observations "
               "WHERE board = ? AND started_at >= ? AND coalesce(emulator, 0) = 0")
        try:
            return self._db.execute(sql, (board, since)).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the speakers and accents of {self.path}: {exc}") from None

    def newest_started_at(self, board: str | None = None) -> float | None:
        """When the newest row or conversation not held against an emulator started (of one board;
        conversations are the S2S board's): what the pages' "newest measurement" line shows."""
        sql = "SELECT max(started_at) FROM observations WHERE coalesce(emulator, 0) = 0"
        try:
            found = [self._db.execute(sql + (" AND board = ?" if board else ""), (board,) if board else ()).fetchone()[0]]
            if board in (None, "s2s"):
                found.append(self._db.execute(
                    "SELECT max(started_at) FROM conversations WHERE coalesce(emulator, 0) = 0").fetchone()[0])
            return max((t for t in found if t is not None), default=None)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the newest row of {self.path}: {exc}") from None

    def add_conversation(self, row: ConversationRow, turns: Sequence[TurnRow]) -> bool:
        """Store a conversation with its turns; False (nothing written) when it is already stored."""
        try:
            with self._db:
                if self._db.execute(conv.insert(conv.CONVERSATIONS, self.MARK), astuple(row)).rowcount == 0:
                    return False
                self._db.executemany(conv.insert(conv.TURNS, self.MARK), [astuple(t) for t in turns])
                return True
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write a conversation to {self.path}: {exc}") from None

    def _conversations(self, sql: str, args: list) -> list[tuple[ConversationRow, list[TurnRow]]]:
        try:
            rows = [ConversationRow(**booleans(conv.CONVERSATION_FIELDS, r)) for r in self._db.execute(sql, args)]
            turns: dict[str, list[TurnRow]] = {r.conversation_id: [] for r in rows}
            ids = list(turns)
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                for t in self._db.execute(conv.select_turns(f"IN ({', '.join('?' for _ in chunk)})"), chunk):
                    turn = TurnRow(**booleans(conv.TURN_FIELDS, t))
                    turns[turn.conversation_id].append(turn)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the conversations of {self.path}: {exc}") from None
        return [(r, turns[r.conversation_id]) for r in rows]

    def close(self) -> None:
        self._db.close()
