"""Rows kept off the boards are counted (issue #40): rows measured against an emulator never enter a
series (docs/METHOD.md "Aggregates"), so a reader that finds nothing else says how many there are and
why, instead of a bare "No observations": `voxwatch leaderboard --model X` for a model of emulated
rows only, an empty window that holds emulated rows, and `voxwatch run` after a tick that measured
such rows (or rows the harness could not measure), on SQLite and on Postgres alike."""

from __future__ import annotations

import time

import pytest

from voxwatch.foundation.observation import Observation
from voxwatch.metrics import METHOD_VERSION
from voxwatch.store import RowFilter, open_store

DAY = 86400.0
NOW = time.time()
EMULATED = "deepgram/nova-3"  # measured here only against its emulator
REAL = "speechmatics/standard-en"  # measured 20 days ago: on the 30d board, not the 7d one


def _row(model: str, tick: int, clip: int, started_at: float, emulator: bool, status: str = "ok") -> Observation:
    return Observation(run_id=f"{model}-t{tick}", model_id=model, dataset="stt-starter-clean", clip_id=f"c{clip}",
                       attempt=1, board="stt", vendor=model.split("/")[0], protocol="stt-stream", region="eu-west",
                       started_at=started_at + clip, status=status, method_version=METHOD_VERSION, emulator=emulator,
                       ttfs_ms=300.0 + 7 * clip + tick, substitutions=1, deletions=0, insertions=0, ref_words=10)


ROWS = ([_row(EMULATED, t, c, NOW - 3600 - 600 * t, emulator=True) for t in range(8) for c in range(10)]
        + [_row(REAL, t, c, NOW - 20 * DAY - 600 * t, emulator=False) for t in range(3) for c in range(6)])


@pytest.fixture(scope="module")
def stores(postgres_store_url: str, tmp_path_factory) -> dict[str, str]:
    urls = {"sqlite": f"sqlite:///{tmp_path_factory.mktemp('kept') / 'voxwatch.sqlite'}",
            "postgres": postgres_store_url}
    for url in urls.values():
        store = open_store(url)
        try:
            assert store.add(ROWS) == len(ROWS)
        finally:
            store.close()
    return urls


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_each_store_counts_the_emulated_rows_a_filter_selects(stores: dict[str, str], kind: str):
    store = open_store(stores[kind], create=False)
    try:
        assert store.emulated(RowFilter()) == {EMULATED: 80}
        assert store.emulated(RowFilter(since=NOW - 3600 - 600 * 3.5)) == {EMULATED: 40}  # the last 4 ticks
        assert store.emulated(RowFilter(until=NOW - DAY)) == {}
        assert store.emulated(RowFilter(models=(REAL,))) == {}
        assert store.emulated(RowFilter(since=NOW - 30 * DAY, boards=("stt",), datasets=("stt-starter-clean",),
                                        models=(EMULATED, REAL))) == {EMULATED: 80}
        assert store.emulated(RowFilter(boards=("tts",))) == {}
    finally:
        store.close()
