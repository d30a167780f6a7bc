"""Hostile ratings files for `voxwatch preference ratings import` (docs/PREFERENCE.md, issue #30 P1-P5):
each refused with one line naming the file's line and the field, exit 2, no traceback, an error
that echoes a bounded part of a huge value, memory bounded by a line's limit rather than the file,
and nothing stored (the good line before the bad one included: an import is all or none). A CSV a
spreadsheet saved with a byte-order mark imports.

The store is a real SQLite one seeded with tests/support/preference_seed.py's study; the files
start from a line of the CLI's own export format.
"""

from __future__ import annotations

import csv
import io
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from voxwatch.foundation.rubrics import RatingError
from voxwatch.preference.ratings_io import FIELDS, import_file
from voxwatch.store import open_store

from support.preference_seed import seed_store
from support.processes import run_cli

pytestmark = pytest.mark.e2e


@pytest.fixture
def study(store_url: str) -> tuple[str, dict[str, Any]]:
    """The seeded store's URL and a rating it does not hold yet (rater 1, an unrated pair, overall)."""
    store = open_store(store_url)
    try:
        seed_store(store)
        rated = {r.pair_id for r in store.preference_ratings(rater_id=1)}
        pair = next(p for p in store.preference_pairs() if p.pair_id not in rated)
    finally:
        store.close()
    record = {"rating_id": "", "rater_id": 1, "pair_id": pair.pair_id, "prompt_set": pair.prompt_set,
              "prompt_id": pair.prompt_id, "config_a": pair.config_a, "config_b": pair.config_b, "gold": pair.gold,
              "rubric": "overall", "cmos": 1, "answered_at": 1_700_000_000.0, "shown_first": pair.shown_first}
    return store_url, record


def _count(url: str) -> int:
    store = open_store(url, create=False)
    try:
        return len(store.preference_ratings())
    finally:
        store.close()


def _csv_text(records: list[dict[str, Any]], fields: tuple[str, ...] = FIELDS) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return out.getvalue()


def _jsonl_text(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def _refused(url: str, path: Path, line: int | None, field: str) -> str:
    """Import `path` with the CLI: exit 2, one short line naming path:line (None: some line) and
    `field`, nothing stored."""
    before = _count(url)
    proc = run_cli("preference", "ratings", "import", str(path), "--store", url, check=False)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr[-2000:]
    assert len(proc.stderr) < 400, f"{len(proc.stderr)} characters: {proc.stderr[:400]}"
    assert f"{path}:{'' if line is None else line}" in proc.stderr and field in proc.stderr, proc.stderr
    assert _count(url) == before  # the good first line was not stored either
    return proc.stderr


BIG = 2**70
HUGE_FIELD = 50 * 2**20


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_rater_id_past_the_stores_integers_is_a_field_error(study, tmp_path, fmt):  # P1
    url, good = study
    path = tmp_path / f"ratings.{fmt}"
    rows = [good, {**good, "rater_id": BIG, "rubric": "prosody"}]
    path.write_text(_csv_text(rows) if fmt == "csv" else _jsonl_text(rows))
    assert "rater_id" in _refused(url, path, 3 if fmt == "csv" else 2, "rater_id")


def test_deeply_nested_json_is_refused_naming_its_line(study, tmp_path):  # P2
    url, good = study
    path = tmp_path / "ratings.jsonl"
    path.write_text(_jsonl_text([good]) + "[" * 30_000 + "]" * 30_000 + "\n")  # under the line limit
    assert "nested too deep" in _refused(url, path, 2, "JSON")
    path.write_text(_jsonl_text([good]) + "[" * 100_000 + "\n")  # the probe's line: longer than any rating's
    _refused(url, path, 2, "longer than")


def test_a_csv_field_past_the_csv_modules_limit_is_refused_naming_its_line(study, tmp_path):  # P3
    url, good = study
    path = tmp_path / "ratings.csv"
    header, line = _csv_text([good]).splitlines()
    spread = '"' + ("a" * 1000 + "\n") * 200 + '"'  # one quoted field over 200 short lines: 200,200 characters
    path.write_text(f"{header}\n{line}\n{line.replace(',overall,', ',' + spread + ',')}\n")
    assert "not CSV" in _refused(url, path, None, "field")  # the line the csv module gave up on
    path.write_text(f"{header}\n{line}\n{line.replace(',overall,', ',' + 'x' * 140_000 + ',')}\n")
    _refused(url, path, 3, "longer than")


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_huge_field_is_refused_with_a_short_echo_and_bounded_memory(study, tmp_path, fmt):  # P4
    url, good = study
    path = tmp_path / f"ratings.{fmt}"
    rows = [good, {**good, "rubric": "r" * HUGE_FIELD}]
    path.write_text(_csv_text(rows) if fmt == "csv" else _jsonl_text(rows))
    _refused(url, path, 3 if fmt == "csv" else 2, "longer than")
    store = open_store(url, create=False)
    tracemalloc.start()
    try:
        with pytest.raises(RatingError):
            import_file(store, path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        store.close()
    assert peak < 4 * 2**20, f"{peak:,} bytes held to refuse a {HUGE_FIELD:,}-character field"
    line = tmp_path / f"short.{fmt}"
    rows = [good, {**good, "rubric": "r" * 5000}]  # under the line's limit: the field's own limit refuses it
    line.write_text(_csv_text(rows) if fmt == "csv" else _jsonl_text(rows))
    assert "5,000 characters" in _refused(url, line, 3 if fmt == "csv" else 2, "rubric")


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize("when", ["inf", "-1e300", "nan", "-1", "1e12"])
def test_an_answer_time_that_is_no_time_is_a_field_error(study, tmp_path, fmt, when):  # P5
    url, good = study
    path = tmp_path / f"ratings.{fmt}"
    bad = {**good, "rubric": "prosody", "answered_at": when}
    if fmt == "csv":
        path.write_text(_csv_text([good, bad]))
    else:  # the JSON number (Python's json reads Infinity and NaN too, as the probe's export wrote them)
        literal = {"inf": "Infinity", "nan": "NaN"}.get(when, when)
        path.write_text(_jsonl_text([good]) + json.dumps({**bad, "answered_at": 0}).replace(
            '"answered_at": 0', f'"answered_at": {literal}') + "\n")
    _refused(url, path, 3 if fmt == "csv" else 2, "answered_at")


def test_a_csv_with_a_byte_order_mark_imports(study, tmp_path):
    url, good = study
    path = tmp_path / "ratings.csv"
    first = ("rater_id", *(f for f in FIELDS if f != "rater_id"))  # the BOM sticks to a required column's name
    path.write_bytes(b"\xef\xbb\xbf" + _csv_text([good], first).encode())
    before = _count(url)
    proc = run_cli("preference", "ratings", "import", str(path), "--store", url)
    assert "imported 1 ratings" in proc.stdout, proc.stdout
    assert _count(url) == before + 1
