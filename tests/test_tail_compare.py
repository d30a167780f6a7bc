"""p95 beside p50, and the comparison page ranked on p95 (issue 44; METHOD "Paired comparisons", the tail).

The paired p95 difference (metrics.paired.tail_paired_difference) is held to the percentiles of the
shared cells, tells apart two models whose tails differ on the same clips (its interval holding the
true difference) and not two that differ by noise alone, and is n/a under p95's floor. On stored
rows (SQLite) where two models share their median but one has a slow tail, the comparison page
ranks them tied on p50 and apart on p95, in its document, its CSV and its HTML.
"""

from __future__ import annotations

import csv
import io
import time

import numpy as np
import pytest
from starlette.testclient import TestClient

from voxwatch.foundation.observation import Observation
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.paired import cells, tail_paired_difference, weighted_percentile
from voxwatch.metrics.series import percentile_floor
from voxwatch.web.app import create_app

from support.web_seed import sqlite_store

UTTERANCES, TICKS = 20, 8


def _grid(rng: np.random.Generator, utterances: int = UTTERANCES, ticks: int = TICKS):
    """Values of one model on every (utterance, tick) cell: utterance and tick effects shared by every model."""
    u = np.repeat(np.arange(utterances), ticks)
    t = np.tile(np.arange(ticks), utterances)
    shared = 300 + rng.normal(0, 40, utterances)[u] + rng.normal(0, 25, ticks)[t]
    return [f"u{x}" for x in u], [f"t{x}" for x in t], shared


def test_the_weighted_percentile_is_the_percentile_of_the_repeated_values():
    rng = np.random.default_rng(3)
    for _ in range(100):
        x = np.sort(rng.normal(size=int(rng.integers(1, 40))))
        w = rng.integers(0, 4, size=x.size)
        if w.sum():
            q = float(rng.uniform(0, 100))
            assert weighted_percentile(x, w, q) == pytest.approx(np.percentile(np.repeat(x, w), q))


def test_a_slower_tail_on_the_same_clips_is_told_apart_and_noise_is_not():
    rng = np.random.default_rng(44)
    u, t, base = _grid(rng)
    a = base + rng.normal(0, 10, base.size)
    slow = base + rng.normal(0, 10, base.size) + np.where(rng.uniform(size=base.size) < 0.12, 250.0, 0.0)
    same = base + rng.normal(0, 10, base.size)
    tested = tail_paired_difference(cells(u, t, a), cells(u, t, slow))
    d = tested.difference
    assert d.estimate == pytest.approx(np.percentile(slow, 95) - np.percentile(a, 95))
    assert (d.a, d.b, d.cells) == (pytest.approx(np.percentile(a, 95)), pytest.approx(np.percentile(slow, 95)), base.size)
    assert d.p_value < 0.01 and tested.interval(0.05)[0] > 0
    null = tail_paired_difference(cells(u, t, a), cells(u, t, same))
    assert null.difference.p_value > 0.05
    low, high = null.interval(0.05)
    assert low < 0 < high


def test_the_tail_comparison_is_na_under_the_p95_floor():
    rng = np.random.default_rng(5)
    u, t, base = _grid(rng, utterances=10, ticks=9)  # 90 shared cells < 100
    assert len(u) < percentile_floor(95)
    tested = tail_paired_difference(cells(u, t, base), cells(u, t, base + 50))
    assert tested.difference.estimate is None and tested.interval is None and tested.difference.cells == 90


# ---------------------------------------------------------------- the comparison page

FAST_TAIL, SLOW_TAIL = "deepgram/nova-3", "assemblyai/universal-streaming-english"


def _rows() -> list[Observation]:
    """Two STT models on the same clips at the same ticks: level medians, one with a slow tail (12 % of cells
    +400 ms, as many 15 ms faster)."""
    rng = np.random.default_rng(4401)
    u, t, base = _grid(rng, utterances=24, ticks=10)
    now = time.time()
    out = []
    for model in (FAST_TAIL, SLOW_TAIL):
        draw = rng.uniform(size=base.size)  # as many cells a little faster as much slower: the medians stay level
        tail = np.select([draw < 0.12, draw > 0.88], [400.0, -15.0], 0.0) if model == SLOW_TAIL else 0.0
        values = base + rng.normal(0, 8, base.size) + tail
        for i, (clip, tick, v) in enumerate(zip(u, t, values)):
            out.append(Observation(
                run_id=tick, model_id=model, dataset="stt-starter-clean", clip_id=clip, attempt=1, board="stt",
                vendor=model.split("/")[0], protocol="stt-stream", region="us-east",
                started_at=now - 86400 + 3600 * int(tick[1:]) + i % 60, status="ok", condition="clean",
                method_version=METHOD_VERSION, emulator=False, ttfs_ms=float(v), first_partial_ms=float(v) / 2,
                substitutions=1, deletions=0, insertions=0, ref_words=10))
    return out


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> TestClient:
    return TestClient(create_app(sqlite_store(tmp_path_factory.mktemp("tail"), _rows())))


def _doc(client: TestClient, **params: str) -> dict:
    response = client.get("/api/v1/compare/stt-stream", params={"window": "7d", **params})
    assert response.status_code == 200, response.text
    return response.json()


def test_the_comparison_ranks_on_p50_by_default_and_on_p95_when_asked(client):
    median, tail = _doc(client), _doc(client, statistic="p95")
    assert (median["latency"]["statistic"], tail["latency"]["statistic"]) == ("p50", "p95")
    assert "p95" in tail["ranks"] and "p95" not in median["ranks"]
    by_median = {r["model_id"]: r for r in median["rows"]}
    by_tail = {r["model_id"]: r for r in tail["rows"]}
    assert {m: r["rank"] for m, r in by_median.items()} == {FAST_TAIL: "1-2", SLOW_TAIL: "1-2"}  # medians tied
    assert {m: r["rank"] for m, r in by_tail.items()} == {FAST_TAIL: "1", SLOW_TAIL: "2"}  # tails told apart
    assert [r["model_id"] for r in tail["rows"]] == [FAST_TAIL, SLOW_TAIL]
    for m in (FAST_TAIL, SLOW_TAIL):  # p95 beside p50 in both, the same figures whatever ranks
        assert by_median[m]["latency_p95"] == by_tail[m]["latency_p95"] is not None
        assert by_median[m]["latency_p50"] == by_tail[m]["latency_p50"]
        low, high = by_tail[m]["latency_p95_ci"]
        assert low <= by_tail[m]["latency_p95"] <= high
    assert by_tail[SLOW_TAIL]["latency_p95"] > by_tail[FAST_TAIL]["latency_p95"] + 200
    assert not by_tail[SLOW_TAIL]["on_frontier"] or by_tail[SLOW_TAIL]["accuracy"] < by_tail[FAST_TAIL]["accuracy"]


def test_the_csv_and_the_page_follow_the_chosen_statistic(client):
    lines = list(csv.DictReader(io.StringIO(client.get("/api/v1/compare/stt-stream?window=7d&statistic=p95&format=csv").text)))
    doc = _doc(client, statistic="p95")
    assert [x["latency_statistic"] for x in lines] == ["p95", "p95"]
    for line, row in zip(lines, doc["rows"]):
        assert line["model_id"] == row["model_id"] and line["rank"] == row["rank"]
        assert float(line["latency_p95"]) == row["latency_p95"] and float(line["latency_p95_low"]) == row["latency_p95_ci"][0]
    page = client.get("/compare/stt-stream?window=7d&statistic=p95").text
    assert 'data-field="latency_p95" class="headline"' in page and 'data-field="latency_p50"' in page
    assert '<option selected>p95</option>' in page
    assert client.get("/compare/stt-stream?statistic=p99").status_code == 400
    said = client.get("/api/v1/compare/s2s-conversations?statistic=p95")
    assert said.status_code == 400 and "p50" in said.json()["error"]
