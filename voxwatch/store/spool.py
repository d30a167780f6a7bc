"""Losing nothing when the store is down: rows it refuses are retried, then spooled to JSONL.

A spool file has the `voxwatch export --format jsonl` layout, so `voxwatch ingest FILE` adds it
to the store later; the store's idempotency key makes a repeated ingest harmless. Every row goes
to the store through `SpoolingWriter.write`, which is where a provider's text is made safe
(voxwatch.text), so no row the runner or a worker builds can be one the store refuses. `drain`
adds spool files by itself once the store answers again (`voxwatch runs reconcile`, the
reconciler beat sends, and a distributed worker for a few seconds after storing a row). Each flush
writes a file of its own, aside, then gives it its name: a spool file is complete and never
changes once it can be seen, so drains and ingests running at once only ever add a row twice to a
store that keeps it once, and never delete a row they did not read.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..observation import Observation, from_record, made_safe
from . import Store, StoreError

SPOOLED = "unsaved-*.jsonl"


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
        path = self.spool_dir / f"unsaved-{self.run_id}-{uuid.uuid4().hex[:8]}.jsonl"
        aside = path.with_name(f".{path.name}.part")  # not a spool file until it is whole
        with aside.open("w") as f:
            for row in self.pending:
                f.write(json.dumps(asdict(row), sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(aside, path)
        self.pending = []
        return path


@dataclass
class Drained:
    """What a drain did: the rows it stored per run (new or stored before), the files it ingested,
    those it could not read, and the store's refusal when it stopped on one (that file and the
    rest stay for the next drain)."""
    rows: dict[str, int] = field(default_factory=dict)
    files: int = 0
    unreadable: list[str] = field(default_factory=list)
    error: StoreError | None = None


def drain(store: Store, spool_dir: Path, until: float | None = None) -> Drained:
    """Add every spool file in spool_dir to the store, deleting each once its rows are stored; with
    `until` (time.monotonic()), start no file after it (the rest wait for the next drain)."""
    result = Drained()
    for path in sorted(spool_dir.glob(SPOOLED)) if spool_dir.is_dir() else []:
        if until is not None and time.monotonic() >= until:
            break
        try:
            rows = read_rows(path)
        except RowsFileError as exc:
            if path.exists():  # else another drain took it; a file that is not rows is set aside, kept
                with contextlib.suppress(OSError):
                    path.rename(path.with_name(path.name + ".unreadable"))
                result.unreadable.append(f"{exc} (kept as {path.name}.unreadable)")
            continue
        try:
            store.add(rows)
        except StoreError as exc:
            result.error = exc
            break
        path.unlink(missing_ok=True)
        result.files += 1
        for row in rows:
            result.rows[row.run_id] = result.rows.get(row.run_id, 0) + 1
    return result


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
