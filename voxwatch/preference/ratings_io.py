"""`voxwatch preference ratings export|import`: every rating as CSV or JSONL, and back.

An exported line is one rating with what it rates (the pair's set, prompt, configurations and gold
kind), so the file stands on its own for analysis elsewhere. Importing reads every line first (a
bad line is refused naming its line and field), checks each against the store (the pair exists
and is the one the line describes, the rater exists, the rubric is asked there, the CMOS in range:
store.add_ratings) and stores them all in one transaction, or none. A line already stored with the
same answer is skipped, so exporting and importing into the same store changes nothing.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, Iterable

from voxwatch.store.preference_rows import RatingRow
from voxwatch.foundation.rubrics import RatingError

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


def _int(value: Any, name: str, where: str) -> int:
    if isinstance(value, bool):
        raise RatingError(f"{where}: {name} must be an integer, got {value!r}")
    try:
        number = int(value) if isinstance(value, int) else int(str(value).strip())
    except ValueError:
        raise RatingError(f"{where}: {name} must be an integer, got {value!r}") from None
    return number


def parse(text: str, fmt: str, source: str) -> list[tuple[str, dict[str, Any]]]:
    """(where, record) for each line; a line that is not a record raises naming it."""
    if fmt == "csv":
        reader = csv.DictReader(io.StringIO(text))
        missing = [f for f in REQUIRED if f not in (reader.fieldnames or [])]
        if missing:
            raise RatingError(f"{source}: the header lacks {', '.join(missing)}")
        return [(f"{source}:{n}", dict(row)) for n, row in enumerate(reader, 2)]
    records = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise RatingError(f"{source}:{n}: not JSON ({exc})") from None
        if not isinstance(record, dict):
            raise RatingError(f"{source}:{n}: expected a JSON object")
        records.append((f"{source}:{n}", record))
    return records


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
                raise RatingError(f"{where}: {name} {r[name]!r} is not pair {pair_id}'s ({getattr(pair, name)!r})")
        try:
            answered = float(r["answered_at"])
        except (TypeError, ValueError):
            raise RatingError(f"{where}: answered_at must be unix seconds, got {r['answered_at']!r}") from None
        rows.append(RatingRow(None, _int(r["rater_id"], "rater_id", where), pair_id, str(r["rubric"]),
                              _int(r["cmos"], "cmos", where), answered, str(r["shown_first"])))
    return rows


def import_file(store, path: Path, fmt: str | None = None) -> tuple[int, int]:
    """(added, already stored) after importing every line of the file, or nothing."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RatingError(f"{path}: cannot read ({exc})") from None
    records = parse(text, format_of(path, fmt), str(path))
    rows = to_rows(store, records)
    added = store.add_ratings(rows, [where for where, _ in records])
    return added, len(rows) - added
