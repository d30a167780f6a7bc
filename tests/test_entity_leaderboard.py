"""The entity error rate from the measurement to the board: scored where WER is, stored per row, and
published by the leaderboard (SQLite and Postgres alike) as missed over tagged entities of the rows."""

import asyncio
import re
import time
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from voxwatch.metrics.published import rounded
from voxwatch.boards import comparisons as board_comparisons
from voxwatch.boards import leaderboard
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.metrics.series import MIN_N
from voxwatch.foundation.observation import Observation
from voxwatch.foundation.events import FINAL, REQUEST_SENT, RESPONSE
from voxwatch.providers.registry import Registry
from voxwatch.store import open_store
from voxwatch.harness.measure import MeasureContext, measure_item

from support.web_seed import seeded_store, serving

pytestmark = pytest.mark.e2e

BATCH = Registry.default().resolve("faster-whisper/tiny.en@1.2.1")


class SaysDigits:
    """A batch STT that answers with a fixed transcript (the issue's example: digits, not words)."""

    def __init__(self, text: str) -> None:
        self.text = text

    async def connect(self, timeline):
        return self

    async def transcribe(self, pcm16: bytes, timeline) -> None:
        timeline.mark(REQUEST_SENT)
        timeline.mark(RESPONSE)
        timeline.mark(FINAL, text=self.text)

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize("said, missed", [("My order number is 4 5 2 7 1.", 0), ("My order number is 4 5 2 7 7.", 1)])
def test_the_measurement_stores_the_clips_entity_counts(said: str, missed: int):
    ds = Catalog([bundled_root()]).load("stt-starter-clean")
    clip = next(c for c in ds.clips if c.id == "u001")
    ctx = MeasureContext(run_id="r", seed=1, region="test", timeout_s=5.0)
    row = asyncio.run(measure_item(BATCH, SaysDigits(said), ds, clip, ctx))
    assert row.status == "ok" and row.ref_words == 5 and row.substitutions + row.deletions + row.insertions >= 1
    assert (row.entities_total, row.entities_missed) == (1, missed)
    untagged = next(c for c in ds.clips if not c.entities)
    row = asyncio.run(measure_item(BATCH, SaysDigits(untagged.text), ds, untagged, ctx))
    assert (row.entities_total, row.entities_missed) == (None, None)


def _rows() -> list[Observation]:
    now = time.time()
    out = []
    for i in range(12):
        tagged = i % 4 != 3  # every fourth clip has no tags: it counts for WER, not for entities
        out.append(Observation(
            run_id=f"r{i % 3}", model_id="pocketsphinx/en-us@5.1.1", dataset="stt-starter-clean", clip_id=f"c{i % 6}",
            attempt=1 + i // 6, board="stt", vendor="pocketsphinx", protocol="stt-stream", region="local",
            started_at=now - 60 * i, status="ok", ttfs_ms=100.0 + i, first_partial_ms=50.0, substitutions=i % 2,
            deletions=0, insertions=0, ref_words=8, method_version="2", hypothesis="h", reference="r",
            entities_total=(1 + i % 3) if tagged else None, entities_missed=(i % 2) if tagged else None))
    out.append(replace(out[0], clip_id="t", status="timeout", ttfs_ms=None, first_partial_ms=None, substitutions=None,
                       ref_words=None, entities_total=None, entities_missed=None))
    return out


def _direct(rows: list[Observation]) -> float:
    """Missed over tagged entities, straight from the stored rows that are ok and tagged."""
    counted = [r for r in rows if r.status == "ok" and r.entities_total]
    assert len(counted) >= MIN_N
    return sum(r.entities_missed for r in counted) / sum(r.entities_total for r in counted)


def _check(store) -> None:
    stored = list(store.observations())
    board = leaderboard.from_store(store, "30d")
    assert board and all(r.entity_error_rate == pytest.approx(_direct(stored)) for r in board)
    assert all(r.entities == sum(o.entities_total or 0 for o in stored if o.status == "ok") for r in board)
    low, high = board[0].entity_error_rate_ci
    assert low <= board[0].entity_error_rate <= high
    assert "entity errors [95% CI]" in leaderboard.format_table(board, "30d", comparisons=board_comparisons.from_store(store, "30d"))
    assert "entity_error_rate" in leaderboard.format_csv(board).splitlines()[0]


def test_the_leaderboard_entity_error_rate_is_the_stored_rows_sqlite(store_url: str):
    rows = _rows()
    assert _direct(rows) == pytest.approx(3 / 18)  # hand count: 9 tagged clips (i % 4 != 3), 18 entities, 3 missed
    store = open_store(store_url)
    store.add(rows)
    _check(store)
    store.close()


def test_the_leaderboard_entity_error_rate_is_the_stored_rows_postgres(postgres_store_url: str):
    store = open_store(postgres_store_url)
    store.add(_rows())
    _check(store)
    store.close()


def test_few_tagged_clips_give_no_entity_error_rate(tmp_path: Path, store_url: str):
    rows = [replace(r, entities_total=None, entities_missed=None) if i >= MIN_N - 1 else r
            for i, r in enumerate(_rows())]
    store = open_store(store_url)
    store.add(rows)
    board = leaderboard.from_store(store, "30d")
    assert board and all(r.entity_error_rate is None and r.entity_error_rate_ci is None for r in board)
    assert "pooled" in leaderboard.format_table(board, "30d", comparisons=board_comparisons.from_store(store, "30d"))
    store.close()


def test_the_api_and_the_web_board_show_the_same_entity_error_rate(tmp_path: Path):
    rows = _rows()
    with seeded_store(rows) as url, serving(url, tmp_path / "serve.log") as base:
        api = httpx.get(f"{base}/api/v1/leaderboard", params={"board": "stt"}).json()["rows"]
        page = httpx.get(f"{base}/board/stt").text
    assert api and all(r["entity_error_rate"] == rounded(_direct(rows), "fraction") and r["entities"] == 18
                       for r in api)  # the API at its published precision, the page's data-value at full
    shown = re.findall(r'data-field="entity_error_rate" data-value="([^"]+)">entities missed: ([\d.]+)% of 18<', page)
    assert len(shown) == 1 and float(shown[0][0]) == pytest.approx(_direct(rows))
    assert float(shown[0][1]) == pytest.approx(100 * _direct(rows), abs=0.1)
