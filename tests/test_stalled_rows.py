"""Rows the clock witness excluded (METHOD "Clock witness") are counted where a reader looks: the run's
summary line, each store's count, and the notes of the board they would have been on (the CLI's
leaderboard and the web board), on SQLite and on Postgres alike."""

from __future__ import annotations

import time

import pytest

from support.both_stores import seeded
from support.processes import run_cli
from voxwatch.boards import kept_off
from voxwatch.foundation.observation import Observation
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.witness import STALLED, Witness, stalled_row
from voxwatch.store import RowFilter, open_store

NOW = time.time()
MODEL = "speechmatics/standard-en"
STALL = Witness(37.4, "kernel").reason


def _row(tick: int, clip: int, status: str = "ok", reason: str | None = None, emulator: bool = False) -> Observation:
    return Observation(run_id=f"t{tick}", model_id=MODEL, dataset="stt-starter-clean", clip_id=f"c{clip}", attempt=1,
                       board="stt", vendor="speechmatics", protocol="stt-stream", region="eu-west",
                       started_at=NOW - 3600 - 600 * tick + clip, status=status, reason=reason,
                       method_version=METHOD_VERSION, emulator=emulator, clock_uncertainty_ms=37.4 if reason else 0.2,
                       arrival_stamp="kernel", ttfs_ms=None if reason else 300.0 + 7 * clip + tick, substitutions=1,
                       deletions=0, insertions=0, ref_words=10)


ROWS = ([_row(t, c) for t in range(6) for c in range(8)]
        + [_row(t, 8, "excluded", STALL) for t in range(3)]
        + [_row(9, 8, "excluded", STALL, emulator=True)]  # an emulator's: never a board's, counted as emulated
        + [_row(t, 9, "excluded", "the adapter cannot send mu-law") for t in range(2)])


def test_the_witness_reason_is_the_one_the_stores_count():
    assert STALL.startswith(STALLED) and "37 ms" in STALL
    assert stalled_row("excluded", STALL) and not stalled_row("ok", STALL)
    assert not stalled_row("excluded", "the adapter cannot send mu-law")


def test_a_runs_line_counts_its_stalled_rows_apart():
    line = kept_off.run_line(ROWS)
    assert line.startswith(f"6 of {len(ROWS)} observations are kept off the boards")
    assert "3 excluded because the measuring worker stalled" in line
    assert "2 the harness could not measure" in line and "1 measured against an emulator" in line


@pytest.fixture(scope="module")
def stores(postgres_store_url: str, tmp_path_factory) -> dict[str, str]:
    return seeded(ROWS, postgres_store_url, tmp_path_factory.mktemp("stalled"))


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_each_store_counts_the_stalled_rows_and_the_board_says_so(stores: dict[str, str], kind: str):
    store = open_store(stores[kind], create=False)
    try:
        assert store.stalled(RowFilter()) == {MODEL: 3}
        assert store.stalled(RowFilter(since=NOW - 3600 - 600 * 1.5)) == {MODEL: 2}  # ticks 0 and 1
        assert store.stalled(RowFilter(boards=("tts",))) == {}
        stored = {(r.clip_id, r.run_id): r for r in store.observations()}
        assert stored[("c8", "t0")].clock_uncertainty_ms == 37.4 and stored[("c8", "t0")].arrival_stamp == "kernel"
    finally:
        store.close()
    out = run_cli("leaderboard", "--store", stores[kind], "--window", "7d")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "Not on the board in the last 7d: 3 excluded because the measuring worker stalled" in text, out.stdout
    assert f"({MODEL} 3)" in text


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_the_web_board_notes_the_stalled_rows(stores: dict[str, str], kind: str):
    from starlette.testclient import TestClient

    from voxwatch.web.app import create_app

    with TestClient(create_app(stores[kind])) as client:
        page = client.get("/board/stt", params={"window": "7d"})
    assert page.status_code == 200
    assert 'data-field="stalled"' in page.text
    assert "3 excluded because the measuring worker stalled" in page.text and f"{MODEL} 3" in page.text


def test_an_ingested_record_carries_the_witness_and_refuses_a_bad_one():
    from dataclasses import asdict

    from voxwatch.foundation.observation import from_record

    record = asdict(ROWS[-3])
    assert from_record(record).clock_uncertainty_ms == 37.4 and from_record(record).arrival_stamp == "kernel"
    with pytest.raises(ValueError, match="arrival_stamp: expected one of 'kernel', 'user'"):
        from_record({**record, "arrival_stamp": "guessed"})
    with pytest.raises(ValueError, match="clock_uncertainty_ms: expected at least 0"):
        from_record({**record, "clock_uncertainty_ms": -1.0})
