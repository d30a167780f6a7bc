"""A demo store: a SQLite file of rows measured against voxwatch's own loopback emulators, which
`voxwatch demo` fills so that a newcomer sees every page with many models before holding a key.

Emulated rows never enter a board of a real store (METHOD "Aggregates"). A demo store holds nothing
else: `voxwatch demo` copies its emulated rows in as board rows and marks the file, and every reader
of a marked store (each page, each API document, each CLI table) carries the watermark below, so
an emulator's number is never shown as a vendor's. A marked store refuses real measurements
(`voxwatch run`), and a row exported from it is an emulator's again.
"""

from __future__ import annotations

import sqlite3
import time

from voxwatch.foundation.store_url import SQLITE, StoreError, parse_store_url, store_kind

TABLE = "demo_store"
DEFAULT_URL = "sqlite:///var/demo.sqlite"
WATERMARK = ("EMULATED DATA, NOT VENDOR MEASUREMENTS: every cloud model's figure in this store was measured against "
             "voxwatch's loopback emulators of the vendors' protocols (`voxwatch demo`, beside this machine's local "
             "engines), not against the vendors. It shows what the product does, never how a vendor performs.")
"""The words every page, API document and CLI table of a demo store carries."""


def _sqlite(url: str):
    """The parsed URL of a demo store, which is a SQLite file; StoreError for any other store."""
    parsed = parse_store_url(url)
    if parsed.kind != SQLITE:
        raise StoreError(f"a demo store is a SQLite file ({DEFAULT_URL}), not {parsed.shown}")
    return parsed


def mark(url: str, note: str) -> None:
    """Mark a SQLite store as a demo store (what made it: `note`); a Postgres store is never one."""
    parsed = _sqlite(url)
    parsed.path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(str(parsed.path), timeout=30) as db:
        db.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (note TEXT NOT NULL, marked_at REAL NOT NULL)")
        db.execute(f"INSERT INTO {TABLE} (note, marked_at) VALUES (?, ?)", (note, time.time()))


def note(url: str) -> str | None:
    """What made the store a demo store, or None for any other store (Postgres, a missing file, an
    unmarked one). Reads without creating or locking anything."""
    if store_kind(url) != SQLITE:
        return None
    path = parse_store_url(url).path
    if not path.is_file():
        return None
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
            if not db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,)).fetchone():
                return None
            row = db.execute(f"SELECT note FROM {TABLE} ORDER BY marked_at DESC LIMIT 1").fetchone()
    except sqlite3.Error:
        return None
    return row[0] if row else None


def reset(url: str) -> None:
    """Start a demo store afresh: its file (or none) removed; a store that is not a demo store is refused."""
    parsed = _sqlite(url)
    if parsed.path.exists() and note(url) is None:
        raise StoreError(f"{parsed.shown} holds a store that is not a demo store: name another --store")
    for suffix in ("", "-wal", "-shm"):
        parsed.path.with_name(parsed.path.name + suffix).unlink(missing_ok=True)


def refuse_measuring(url: str) -> None:
    """A StoreError when `url` is a demo store: real measurements never join emulated ones."""
    if note(url) is not None:
        raise StoreError(f"{parse_store_url(url).shown} is a demo store of emulated rows (`voxwatch demo`): measure "
                         "into another store (the default: sqlite:///var/voxwatch.sqlite)")
