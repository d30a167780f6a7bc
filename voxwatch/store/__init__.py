"""The time series store: one interface, opened from a URL (SQLite is the embedded default)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

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


def open_store(url: str, create: bool = True) -> Store:
    """The store at url. create=False (the read-only commands: leaderboard, export, serve) refuses a
    SQLite file that does not exist instead of making it and its folders (a mistyped path)."""
    if url.startswith("sqlite:///"):
        from .sqlite import SQLiteStore

        return SQLiteStore(Path(url[len("sqlite:///"):]), create=create)
    if url.startswith(("postgresql://", "postgres://")):
        from .postgres import PostgresStore

        return PostgresStore(url)
    raise StoreError(f"unsupported store URL scheme in {url.split(':', 1)[0]!r}; "
                     "use sqlite:///path or postgresql://user@host:port/database")


def redact(url: str) -> str:
    """The URL with its password (in the user part or a password= parameter) shown as ***, for messages."""
    try:
        parts = urlsplit(url)
        if parts.password is None and "password" not in dict(parse_qsl(parts.query)):
            return url
        netloc = parts.netloc
        if parts.password is not None:
            netloc = f"{parts.username or ''}:***@{netloc.rsplit('@', 1)[1]}"
        query = urlencode([(k, "***" if k == "password" else v) for k, v in parse_qsl(parts.query)], safe="*")
        return urlunsplit(parts._replace(netloc=netloc, query=query))
    except ValueError:  # not parseable as a URL: say nothing about it rather than risk a secret
        return f"{url.split(':', 1)[0]}://(unparseable URL)"
