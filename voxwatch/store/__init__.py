"""The time series store: one interface, opened from a URL (SQLite is the embedded default)."""

from __future__ import annotations

from typing import Iterable, Iterator, Protocol, Sequence

from voxwatch.store.conversation_rows import ConversationRow, TurnRow
from voxwatch.foundation.observation import Observation, RunRecord
from voxwatch.foundation.redaction import redact_url as redact  # how a store URL is shown in messages (the one scrubber's)
from voxwatch.store.row_filter import RowFilter


class Store(Protocol):
    def add(self, rows: Iterable[Observation]) -> int:
        """Insert rows; a row whose key is already stored is skipped (idempotent). Returns rows added."""

    def start_run(self, run: RunRecord) -> None: ...

    def finish_run(self, run: RunRecord) -> None: ...

    def runs(self) -> list[RunRecord]: ...

    def run(self, run_id: str) -> RunRecord | None: ...

    def runs_since(self, since: float) -> list[RunRecord]:
        """Runs started at or after `since` or still running, then runs with rows measured since then
        but no record (voxwatch.store.runs): what the reconciler looks at."""

    def run_counts(self, run_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        """(stored rows, rows not ok) per run; a run with no stored row is left out."""

    def observations(self, since: float | None = None, only: RowFilter | None = None) -> Iterator[Observation]:
        """The rows started at or after `since`, oldest first; or the rows `only` selects (its span and
        sets in the store's SQL: a filtered read never reads the rest)."""

    def emulated(self, only: RowFilter) -> dict[str, int]:
        """How many of the rows `only` selects each model has that were measured against an emulator:
        rows no board shows (store.series_data), counted so a reader can say where they went."""

    def stalled(self, only: RowFilter) -> dict[str, int]:
        """How many of the rows `only` selects each model has that were excluded as the measuring worker's
        stall (metrics.witness): rows no board counts, counted so a board's notes can say so."""

    def add_conversation(self, row: ConversationRow, turns: Sequence[TurnRow]) -> bool:
        """Store a conversation with its turns in one transaction; False when its id is already
        stored (idempotent: nothing is written)."""

    def conversations(self, since: float | None = None,
                      model_id: str | None = None) -> list[tuple[ConversationRow, list[TurnRow]]]:
        """The conversations started at or after `since` (of one model), oldest first, each with its turns."""

    def conversation(self, conversation_id: str) -> tuple[ConversationRow, list[TurnRow]] | None: ...

    def close(self) -> None: ...


def open_store(url: str, create: bool = True) -> Store:
    """The store a URL names (the one reading of it: `url.parse_store_url`). create=False (the
    read-only commands: leaderboard, export, serve) refuses a SQLite file that does not exist
    instead of making it and its folders (a mistyped path)."""
    from voxwatch.foundation.store_url import SQLITE, parse_store_url

    parsed = parse_store_url(url)
    if parsed.kind == SQLITE:
        from voxwatch.store.sqlite import SQLiteStore

        return SQLiteStore(parsed.path, create=create)
    from voxwatch.store.postgres import PostgresStore

    return PostgresStore(parsed)
