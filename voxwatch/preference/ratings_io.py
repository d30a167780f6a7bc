"""`voxwatch preference ratings export|import`: every rating as CSV or JSONL, and back.

An exported line is one rating with what it rates (the pair's set, prompt, configurations and gold
kind), so the file stands on its own for analysis elsewhere. Importing reads every line first (a
bad line is refused naming its line and field, echoing at most ECHO characters of a bad value;
lines and fields longer than any rating's are refused unread, so memory stays bounded), checks each against the store (the pair exists
and is the one the line describes, the rater exists, the rubric is asked there, the CMOS in range:
store.add_ratings) and stores them all in one transaction, or none. A line already stored with the
same answer is skipped, so exporting and importing into the same store changes nothing.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
from pathlib import Path
from typing import Any, Iterable, Iterator, TextIO

from voxwatch.store.preference_rows import MAX_ID, RatingRow
from voxwatch.foundation.rubrics import LATEST_ANSWER, RatingError, check_answered_at

FIELDS = ("rating_id", "rater_id", "pair_id", "prompt_set", "prompt_id", "config_a", "config_b", "gold", "rubric",
          "cmos", "answered_at", "shown_first")
REQUIRED = ("rater_id", "pair_id", "rubric", "cmos", "answered_at", "shown_first")
FORMATS = ("csv", "jsonl")
_DESCRIBES = ("prompt_set", "prompt_id", "config_a", "config_b")


def export_records(store) -> list[dict[str, Any]]:
    pairs = {p.pair_id: p for p in store.preference_pairs()}
    out = []
    for r in store.preference_ratings():
        p = pairs[r.pair_id]
        out.append({"rating_id": r.rating_id, "rater_id": r.rater_id, "pair_id": r.pair_id,
                    "prompt_set": p.prompt_set, "prompt_id": p.prompt_id, "config_a": p.config_a,
                    "config_b": p.config_b, "gold": p.gold, "rubric": r.rubric, "cmos": r.cmos,
                    "answered_at": r.answered_at, "shown_first": r.shown_first})
    return out


def dumps(records: Iterable[dict[str, Any]], fmt: str) -> str:
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return buffer.getvalue()


def format_of(path: Path, given: str | None) -> str:
    fmt = given or path.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise RatingError(f"{path}: say --format csv or jsonl (the file's extension names neither)")
    return fmt


MAX_LINE = 65_536
"""Characters a line may hold: a rating's line is a few hundred; a longer one is refused unread."""
MAX_FIELD = 200
"""Characters a field may hold: the longest is a configuration id, well under this."""
ECHO = 80
"""Characters of a refused value an error shows: enough to recognise it, never the whole of a huge one."""


def shown(value: Any) -> str:
    """A refused value as an error shows it: its repr, cut to ECHO characters with its length said."""
    text = repr(value)
    return text if len(text) <= ECHO else f"{text[:ECHO]}... ({len(str(value)):,} characters)"


def _int(value: Any, name: str, where: str) -> int:
    """An id or CMOS: an integer a store's key holds (a larger one names nothing and overflows SQLite)."""
    number = None
    if not isinstance(value, bool):
        try:
            number = value if isinstance(value, int) else int(str(value).strip())
        except ValueError:
            pass
    if number is None or not -MAX_ID - 1 <= number <= MAX_ID:
        raise RatingError(f"{where}: {name} must be an integer up to {MAX_ID}, got {shown(value)}")
    return number


def _lines(file: TextIO, source: str) -> Iterator[str]:
    """The file's lines, each read at most MAX_LINE characters: memory stays bounded whatever it holds."""
    for n in itertools.count(1):
        line = file.readline(MAX_LINE + 1)
        if not line:
            return
        if len(line) > MAX_LINE:
            raise RatingError(f"{source}:{n}: a line longer than {MAX_LINE:,} characters (a rating is a few hundred)")
        yield line


def _csv_records(lines: Iterator[str], source: str) -> Iterator[tuple[str, dict[str, Any]]]:
    reader = csv.DictReader(lines)
    try:
        missing = [f for f in REQUIRED if f not in (reader.fieldnames or [])]
        if missing:
            raise RatingError(f"{source}: the header lacks {', '.join(missing)}")
        for row in reader:
            yield f"{source}:{reader.line_num}", dict(row)
    except csv.Error as exc:  # a field past csv.field_size_limit, a NUL, an unclosed quote
        raise RatingError(f"{source}:{reader.line_num}: not CSV ({exc})") from None


def _jsonl_records(lines: Iterator[str], source: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise RatingError(f"{source}:{n}: not JSON ({exc})") from None
        except RecursionError:
            raise RatingError(f"{source}:{n}: not a rating (JSON nested too deep)") from None
        if not isinstance(record, dict):
            raise RatingError(f"{source}:{n}: expected a JSON object")
        yield f"{source}:{n}", record


def _checked(where: str, record: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The record, unless a field is longer than any rating's (then refused, echoing a bounded part)."""
    for name, value in record.items():
        if len(text := str(value)) > MAX_FIELD:
            raise RatingError(f"{where}: {shown(name)} is {len(text):,} characters long, a field at most "
                              f"{MAX_FIELD}: {shown(value)}")
    return where, record


def parse(file: TextIO, fmt: str, source: str) -> list[tuple[str, dict[str, Any]]]:
    """(where, record) for each line; a line that is not a record raises naming it."""
    records = (_csv_records if fmt == "csv" else _jsonl_records)(_lines(file, source), source)
    return [_checked(where, record) for where, record in records]


def _answered_at(value: Any, where: str) -> float:
    try:
        answered = float(value)
        check_answered_at(answered)
    except (TypeError, ValueError, OverflowError):
        raise RatingError(f"{where}: answered_at must be unix seconds from 0 to {LATEST_ANSWER:.0f}, "
                          f"got {shown(value)}") from None
    return answered


def to_rows(store, records: list[tuple[str, dict[str, Any]]]) -> list[RatingRow]:
    pairs = {p.pair_id: p for p in store.preference_pairs()}
    rows = []
    for where, r in records:
        missing = [f for f in REQUIRED if r.get(f) in (None, "")]
        if missing:
            raise RatingError(f"{where}: missing {', '.join(missing)}")
        pair_id = _int(r["pair_id"], "pair_id", where)
        pair = pairs.get(pair_id)
        if pair is None:
            raise RatingError(f"{where}: no pair {pair_id} in the store")
        for name in _DESCRIBES:
            if r.get(name) not in (None, "") and str(r[name]) != str(getattr(pair, name)):
                raise RatingError(f"{where}: {name} {shown(r[name])} is not pair {pair_id}'s ({getattr(pair, name)!r})")
        rows.append(RatingRow(None, _int(r["rater_id"], "rater_id", where), pair_id, str(r["rubric"]),
                              _int(r["cmos"], "cmos", where), _answered_at(r["answered_at"], where),
                              str(r["shown_first"])))
    return rows


def import_file(store, path: Path, fmt: str | None = None) -> tuple[int, int]:
    """(added, already stored) after importing every line of the file, or nothing."""
    fmt = format_of(path, fmt)
    try:  # utf-8-sig: a spreadsheet's CSV may begin with a byte-order mark
        with path.open(encoding="utf-8-sig", newline="") as file:
            records = parse(file, fmt, str(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise RatingError(f"{path}: cannot read ({exc})") from None
    rows = to_rows(store, records)
    added = store.add_ratings(rows, [where for where, _ in records])
    return added, len(rows) - added
