"""The time series store: one interface, opened from a URL (SQLite is the embedded default)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator, Protocol

from ..observation import Observation, RunRecord


class StoreError(RuntimeError):
    """The store cannot be reached or written; the message says which and never holds a secret."""


class Store(Protocol):
    def add(self, rows: Iterable[Observation]) -> int:
        """Insert rows; a row whose key is already stored is skipped (idempotent). Returns rows added."""

    def start_run(self, run: RunRecord) -> None: ...

    def finish_run(self, run: RunRecord) -> None: ...

    def runs(self) -> list[RunRecord]: ...

    def observations(self, since: float | None = None) -> Iterator[Observation]: ...

    def close(self) -> None: ...


def open_store(url: str) -> Store:
    if url.startswith("sqlite:///"):
        from .sqlite import SQLiteStore

        return SQLiteStore(Path(url[len("sqlite:///"):]))
    raise StoreError(f"unsupported store URL scheme in {url.split(':', 1)[0]!r}; use sqlite:///path")
