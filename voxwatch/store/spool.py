"""Losing nothing when the store is down: rows it refuses are retried, then spooled to JSONL.

A spool file has the `voxwatch export --format jsonl` layout, so `voxwatch ingest FILE` adds it
to the store later; the store's idempotency key makes a repeated ingest harmless. Every row goes
to the store through `SpoolingWriter.write`, which is where a provider's text is made safe
(voxwatch.text), so no row the runner or a worker builds can be one the store refuses.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from ..observation import Observation, from_record, made_safe
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
        made_safe(row)
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


def read_rows(path: Path) -> list[Observation]:
    """Every row of a JSONL export or spool file, each field's type and vocabulary checked
    (observation.from_record). All or nothing: one bad line raises RowsFileError naming the file,
    the first bad line and its field, and how many lines are bad, so nothing is half-ingested."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RowsFileError(f"{path}: cannot read ({exc.strerror})") from None
    rows, bad = [], []
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            rows.append(from_record(json.loads(raw.decode("utf-8"))))
        except UnicodeDecodeError as exc:
            bad.append(f"{path}:{n}: not UTF-8 (byte {exc.start + 1})")
        except json.JSONDecodeError as exc:
            bad.append(f"{path}:{n}: not JSON ({exc.msg} at column {exc.colno})")
        except (ValueError, RecursionError) as exc:
            bad.append(f"{path}:{n}: not an observation row: {exc}")
    if bad:
        more = f" ({len(bad)} bad lines in all)" if len(bad) > 1 else ""
        raise RowsFileError(f"{bad[0]}{more}; nothing was ingested")
    return rows
