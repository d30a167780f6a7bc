"""Losing nothing when the store is down: rows it refuses are retried, then spooled to JSONL.

A spool file has the `voxwatch export --format jsonl` layout, so `voxwatch ingest FILE` adds it
to the store later; the store's idempotency key makes a repeated ingest harmless. Every row goes
to the store through `SpoolingWriter.write`, which is where a provider's text is made safe
(voxwatch.foundation.text), so no row the runner or a worker builds can be one the store refuses. `drain`
adds spool files by itself once the store answers again (`voxwatch runs reconcile`, the
reconciler beat sends, and a distributed worker for a few seconds after storing a row). Each flush
writes a file of its own, aside, then gives it its name: a spool file is complete and never
changes once it can be seen, so drains and ingests running at once only ever add a row twice to a
store that keeps it once, and never delete a row they did not read.

A conversation the store refuses is spooled too, as one line of its own kind
(`{"record": "conversation", "conversation": {...}, "turns": [...]}`, the rows of
voxwatch.store.conversation_rows), in the same files, drained and ingested by the same paths; the store
keeps a conversation once (by its id), so it too may be added twice.

A spool folder that cannot take a file (its disk is full, it cannot be written) leaves no part
file, and the file goes to the next folder ([store] spool_fallback_dir, config.spool_dirs); rows
no folder takes are Unkept: counted and reported with every folder tried, never a traceback.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from voxwatch.store.conversation_rows import ConversationRow, TurnRow, conversation_of_record, conversation_record
from voxwatch.foundation.observation import Observation, from_record, made_safe
from voxwatch.foundation.text import one_line
from voxwatch.store import Store
from voxwatch.foundation.store_url import StoreError

SPOOLED = "unsaved-*.jsonl"
Conversation = tuple[ConversationRow, list[TurnRow]]


class RowsFileError(ValueError):
    """A line of a rows file that is not an observation; the message names the file and line."""


class Unkept(Exception):
    """Records neither the store nor any spool folder would take: how many, the store's refusal and
    each folder's reason, in one line."""

    def __init__(self, count: int, refusal: StoreError | None, tried: list[tuple[Path, str]]) -> None:
        self.count, self.refusal, self.tried = count, refusal, tried
        folders = "; ".join(f"{folder}: {why}" for folder, why in tried)
        super().__init__(one_line(f"{count} rows could not be kept: the store refused them ({refusal}) and no spool "
                                  f"folder could be written ({folders})"))


class SpoolingWriter:
    def __init__(self, store: Store, spool_dirs: Path | Sequence[Path], run_id: str) -> None:
        self.store, self.run_id = store, run_id
        self.spool_dirs = _folders(spool_dirs)
        self.pending: list[Observation] = []
        self.last_error: StoreError | None = None
        self.unkept: list[Observation] = []  # rows nothing would take (flush); gone when the process ends
        self.unkept_error: Unkept | None = None

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
        """One more try; rows the store still refuses go to a spool file, whose path is returned.
        Rows no spool folder takes either are added to `unkept` (and `unkept_error` says why); None then."""
        if not self.pending:
            return None
        try:
            self.store.add(self.pending)
            self.pending = []
            return None
        except StoreError as exc:
            self.last_error = exc
        try:
            return spool_records(self.spool_dirs, self.run_id, [asdict(row) for row in self.pending], self.last_error)
        except Unkept as exc:
            self.unkept += self.pending
            self.unkept_error = Unkept(len(self.unkept), exc.refusal, exc.tried)
            return None
        finally:
            self.pending = []


def keep_conversation(store: Store, spool_dirs: Path | Sequence[Path], row: ConversationRow,
                      turns: list[TurnRow]) -> tuple[Path | None, StoreError | None]:
    """Store a conversation with its turns, or spool it when the store refuses it: (the spool file,
    the store's refusal), both None once it is stored (or was stored before: nothing is written).
    Unkept when no spool folder takes it either."""
    try:
        store.add_conversation(row, turns)
        return None, None
    except StoreError as exc:
        return spool_records(_folders(spool_dirs), row.run_id, [conversation_record(row, turns)], exc), exc


def spool_records(spool_dirs: Sequence[Path], run_id: str, records: list[dict], refusal: StoreError | None) -> Path:
    """A spool file of these records in the first folder that takes it whole; Unkept (naming every
    folder and why it refused) when none does."""
    tried = []
    for folder in spool_dirs:
        try:
            return _spool_file(folder, run_id, records)
        except OSError as exc:
            tried.append((folder, exc.strerror or str(exc)))
    raise Unkept(len(records), refusal, tried)


def _spool_file(spool_dir: Path, run_id: str, records: list[dict]) -> Path:
    """A spool file of these records, written aside and then named: whole once it can be seen, and
    the part file removed when it cannot be written whole."""
    spool_dir.mkdir(parents=True, exist_ok=True)
    path = spool_dir / f"unsaved-{run_id}-{uuid.uuid4().hex[:8]}.jsonl"
    aside = path.with_name(f".{path.name}.part")  # not a spool file until it is whole
    try:
        with aside.open("w") as f:
            for record in records:
                f.write(json.dumps(record, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(aside, path)
    except BaseException:
        aside.unlink(missing_ok=True)
        raise
    return path


def _folders(spool_dirs: Path | Sequence[Path]) -> tuple[Path, ...]:
    return (spool_dirs,) if isinstance(spool_dirs, Path) else tuple(spool_dirs)


@dataclass
class Drained:
    """What a drain did: the rows (observations, or conversation turns) it stored per run (new or
    stored before), the files it ingested,
    those it could not read, and the store's refusal when it stopped on one (that file and the
    rest stay for the next drain)."""
    rows: dict[str, int] = field(default_factory=dict)
    files: int = 0
    unreadable: list[str] = field(default_factory=list)
    error: StoreError | None = None


def spooled_files(spool_dirs: Path | Sequence[Path]) -> list[Path]:
    """The spool files waiting in these folders (config.spool_dirs: spool_dir and its fallback)."""
    return [p for folder in _folders(spool_dirs) if folder.is_dir() for p in sorted(folder.glob(SPOOLED))]


def drain(store: Store, spool_dirs: Path | Sequence[Path], until: float | None = None) -> Drained:
    """Add every spool file in the spool folders to the store, deleting each once its rows are stored;
    with `until` (time.monotonic()), start no file after it (the rest wait for the next drain)."""
    result = Drained()
    for path in spooled_files(spool_dirs):
        if until is not None and time.monotonic() >= until:
            break
        try:
            rows, conversations = read_spool(path)
        except RowsFileError as exc:
            if path.exists():  # else another drain took it; a file that is not rows is set aside, kept
                with contextlib.suppress(OSError):
                    path.rename(path.with_name(path.name + ".unreadable"))
                result.unreadable.append(f"{exc} (kept as {path.name}.unreadable)")
            continue
        try:
            add_spooled(store, rows, conversations)
        except StoreError as exc:
            result.error = exc
            break
        path.unlink(missing_ok=True)
        result.files += 1
        for run_id in [row.run_id for row in rows] + [c.run_id for c, turns in conversations for _ in turns]:
            result.rows[run_id] = result.rows.get(run_id, 0) + 1
    return result


def add_spooled(store: Store, rows: list[Observation], conversations: list[Conversation]) -> int:
    """Add a file's observations and conversations to the store; returns how many of each were new."""
    added = store.add(rows) if rows else 0
    return added + sum(store.add_conversation(row, turns) for row, turns in conversations)


def read_rows(path: Path) -> list[Observation]:
    """Every observation of a JSONL export or spool file (read_spool), refusing a file that holds
    conversations too."""
    rows, conversations = read_spool(path)
    if conversations:
        raise RowsFileError(f"{path}: holds {len(conversations)} conversations besides observations (read_spool)")
    return rows


def read_spool(path: Path, progress: Callable[[int, int], None] | None = None) -> tuple[list[Observation], list[Conversation]]:
    """Every row of a JSONL export or spool file: its observations, each field's type and vocabulary
    checked (observation.from_record), and its conversations with their turns (one line each). All or
    nothing: one bad line raises RowsFileError naming the file, the first bad line and its field,
    and how many lines are bad, so nothing is half-ingested. `progress` hears (lines checked, lines)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RowsFileError(f"{path}: cannot read ({exc.strerror})") from None
    rows, conversations, bad = [], [], []
    lines = data.split(b"\n")
    for n, raw in enumerate(lines, 1):
        if progress is not None and (n % 1000 == 0 or n == len(lines)):
            progress(n, len(lines))
        if not raw.strip():
            continue
        kind = "an observation"
        try:
            record = json.loads(raw.decode("utf-8"))
            if isinstance(record, dict) and "record" in record:
                kind = "a conversation"
                conversations.append(conversation_of_record(record))
            else:
                rows.append(from_record(record))
        except UnicodeDecodeError as exc:
            bad.append(f"{path}:{n}: not UTF-8 (byte {exc.start + 1})")
        except json.JSONDecodeError as exc:
            bad.append(f"{path}:{n}: not JSON ({exc.msg} at column {exc.colno})")
        except (ValueError, RecursionError) as exc:
            bad.append(f"{path}:{n}: not {kind} row: {exc}")
    if bad:
        more = f" ({len(bad)} bad lines in all)" if len(bad) > 1 else ""
        raise RowsFileError(f"{bad[0]}{more}; nothing was ingested")
    return rows, conversations
