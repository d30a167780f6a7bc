"""Losing nothing when the store is down: rows it refuses are retried, then spooled to JSONL.

A spool file has the `voxwatch export --format jsonl` layout, so `voxwatch ingest FILE` adds it
to the store later; the store's idempotency key makes a repeated ingest harmless.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Iterator

from ..observation import FIELDS, Observation
from . import Store, StoreError


class RowsFileError(ValueError):
    """A line of a rows file that is not an observation; the message names the file and line."""


class SpoolingWriter:
    def __init__(self, store: Store, spool_dir: Path, run_id: str) -> None:
        self.store, self.spool_dir, self.run_id = store, spool_dir, run_id
        self.pending: list[Observation] = []
        self.last_error: StoreError | None = None

    def write(self, row: Observation) -> None:
        """Store the row now, or hold it (with any held before) until the store answers again."""
        try:
            self.store.add([*self.pending, row])
            self.pending = []
        except StoreError as exc:
            self.pending.append(row)
            self.last_error = exc

    def flush(self) -> Path | None:
        """One more try; rows the store still refuses go to a spool file, whose path is returned."""
        if not self.pending:
            return None
        try:
            self.store.add(self.pending)
            self.pending = []
            return None
        except StoreError as exc:
            self.last_error = exc
        self.spool_dir.mkdir(parents=True, exist_ok=True)
        path = self.spool_dir / f"unsaved-{self.run_id}.jsonl"
        with path.open("a") as f:
            for row in self.pending:
                f.write(json.dumps(asdict(row), sort_keys=True) + "\n")
        self.pending = []
        return path


def read_rows(path: Path) -> Iterator[Observation]:
    """Rows from a JSONL export or spool file; a malformed line raises naming the file and line."""
    try:
        f = path.open()
    except OSError as exc:
        raise RowsFileError(f"{path}: {exc.strerror}") from None
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                yield Observation(**{k: record.get(k) for k in FIELDS if k in record})
            except (json.JSONDecodeError, TypeError) as exc:
                raise RowsFileError(f"{path}:{n}: not an observation row ({exc})") from None
