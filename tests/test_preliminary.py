"""Preliminary series and baselines as every reader shows them (metrics/preliminary.py; the registry's
`baseline`): a series measured at one tick says "preliminary" with its reason on the board pages, the
model page, the API and the CLI's table, a settled series does not, and the scripted baseline is
labelled a baseline on the home page, its board, the API's rows and models, and the CLI. SQLite and
Postgres alike."""

from __future__ import annotations

import contextlib
import time
from typing import Iterator

import pytest
from starlette.testclient import TestClient

from voxwatch.foundation.observation import Observation
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.preliminary import SETTLED_CLUSTERS, row_reason, series_reason
from voxwatch.metrics.series import MIN_N, MetricRow
from voxwatch.store import open_store
from voxwatch.web.app import create_app

from support.postgres import fresh_postgres
from support.processes import run_cli

SETTLED, EARLY, BASELINE = "deepgram/nova-3", "pocketsphinx/en-us@5.1.1", "local/cascade-scripted-baseline"
ONE_TICK = f"measured at only 1 tick so far: its intervals stay wide until {SETTLED_CLUSTERS} ticks"


def test_the_reasons_in_words():
    assert series_reason(MIN_N - 1, 9, 9) == f"only {MIN_N - 1} values so far (figures need {MIN_N})"
    assert series_reason(40, 9, 1) == ONE_TICK
    assert series_reason(40, 2, 9) == f"only 2 utterances measured so far: its intervals stay wide until {SETTLED_CLUSTERS}"
    assert series_reason(40, SETTLED_CLUSTERS, SETTLED_CLUSTERS) is None
    excluded = MetricRow("stt", EARLY, "d", "r", "10", "ttfs_ms", 0, *[None] * 6, 0, None, None, None, 0, note="x")
    assert row_reason(excluded) is None  # an excluded metric shows its exclusion, nothing to call early


def _rows() -> list[Observation]:
    """SETTLED over 6 ticks of 6 clips; EARLY and the BASELINE at one tick of 6 clips."""
    now, out = time.time(), []

    def add(model: str, board: str, protocol: str, tick: int, clip: int, **figures) -> None:
        out.append(Observation(run_id=f"{model}-r{tick}", model_id=model, dataset="stt-starter-clean",
                               clip_id=f"c{clip}", attempt=1, board=board, vendor=model.split("/")[0],
                               protocol=protocol, region="local", started_at=now - 3600 * (tick + 1) - clip,
                               status="ok", method_version=METHOD_VERSION, connect_ms=20.0 + clip, **figures))

    for tick in range(6):
        for clip in range(6):
            add(SETTLED, "stt", "stt-stream", tick, clip, ttfs_ms=300.0 + 7 * clip + tick,
                ttfs_peer_ms=170.0 + 7 * clip + tick, first_partial_ms=90.0 + clip)
    for clip in range(6):
        add(EARLY, "stt", "stt-stream", 0, clip, ttfs_ms=500.0 + clip, ttfs_peer_ms=370.0 + clip,
            first_partial_ms=150.0 + clip)
        add(BASELINE, "s2s", "s2s", 0, clip, v2v_ms=900.0 + clip)
    return out


@contextlib.contextmanager
def _stored(kind: str, tmp_path) -> Iterator[str]:
    if kind == "sqlite":
        url = f"sqlite:///{tmp_path / 'voxwatch.sqlite'}"
        s = open_store(url)
        s.add(_rows())
        s.close()
        yield url
        return
    with fresh_postgres() as url:
        run_cli("db", "upgrade", "--store", url)
        s = open_store(url)
        s.add(_rows())
        s.refresh_comparisons()
        s.close()
        yield url


def _model_cell(page: str, model: str) -> str:
    """The model cell of the first line of `model` on a page (a ranked table's or the full table's)."""
    start = page.index(f'data-model="{model}"')
    return page[start:].split('data-field="model"', 1)[1].split("</td>", 1)[0]


@pytest.mark.e2e  # the CLI in a subprocess, as a user runs it
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_every_reader_says_preliminary_and_baseline(kind: str, tmp_path):
    with _stored(kind, tmp_path) as url:
        with TestClient(create_app(url)) as client:
            home, stt, s2s = client.get("/").text, client.get("/board/stt").text, client.get("/board/s2s").text
            model = client.get(f"/model/{EARLY}").text
            rows = client.get("/api/v1/leaderboard").json()["rows"]
            models = client.get("/api/v1/models").json()["models"]
        table = run_cli("leaderboard", "--store", url).stdout
    assert f"preliminary: {ONE_TICK}" in _model_cell(home, EARLY) and "preliminary" not in _model_cell(home, SETTLED)
    assert f"preliminary: {ONE_TICK}" in _model_cell(stt, EARLY) and "preliminary" not in _model_cell(stt, SETTLED)
    full = stt.split('id="all-metrics"', 1)[1]  # the full table's series cell too
    assert f"preliminary: {ONE_TICK}" in _model_cell(full, EARLY) and "preliminary" not in _model_cell(full, SETTLED)
    assert model.count(f"preliminary: {ONE_TICK}") >= 1 and 'data-field="baseline"' not in model
    for page in (home, s2s):
        assert 'data-field="baseline"' in _model_cell(page, BASELINE)
        assert 'data-field="baseline"' not in _model_cell(home, SETTLED)
    by_model = {}
    for r in rows:
        by_model.setdefault(r["model_id"], []).append(r)
    assert all(r["preliminary"] and r["preliminary_reason"] == ONE_TICK for r in by_model[EARLY])
    assert all(not r["preliminary"] and r["preliminary_reason"] is None for r in by_model[SETTLED])
    assert [r["baseline"] for r in by_model[BASELINE]] == [True] * len(by_model[BASELINE])
    assert not any(r["baseline"] for r in by_model[SETTLED] + by_model[EARLY])
    assert {m["model_id"]: m["baseline"] for m in models} == {SETTLED: False, EARLY: False, BASELINE: True}
    assert f"  preliminary: {EARLY} on stt-starter-clean (local, v{METHOD_VERSION}): {ONE_TICK}" in table
    assert f"preliminary: {SETTLED}" not in table
    assert f"  baseline: {BASELINE} is a script, not a model" in table

