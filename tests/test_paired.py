"""Paired comparisons (METHOD "Paired comparisons", "Ranking"): two models on the same clips, what they
share cancelling, ranks from Holm's verdicts, and every reader agreeing on SQLite and Postgres."""

from __future__ import annotations

import csv
import io
import json
import time
from dataclasses import asdict, replace
from pathlib import Path

import httpx
import numpy as np
import pytest

from voxwatch.boards import leaderboard
from voxwatch.foundation.observation import Observation
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.paired import cells, holm, holm_adjusted, median_paired_difference, ratio_difference
from voxwatch.metrics.ranking import ranks
from voxwatch.store.comparisons import compute

from support.browser import browser  # noqa: F401 (a fixture)
from support.postgres import fresh_postgres
from support.processes import run_cli
from support.web_seed import serving, sqlite_store

FAST, SLOW, TWIN = "sim/fast@1", "sim/slow@1", "sim/slow-twin@1"
DATASET = "sim-paired"


def board_rows(seed: int = 7, ticks: int = 30, gap_ms: float = 25.0) -> list[Observation]:
    """Three models hearing the same 10 of 40 utterances at each tick: utterances differ a lot (sd 0.3
    in log, shared by every model), rows little (10 ms); SLOW and TWIN are FAST + gap_ms on every
    clip and make 2 more errors in 100 words there. The per-series p50 intervals overlap."""
    rng = np.random.default_rng(seed)
    utterance = np.exp(rng.normal(0, 0.3, 40)) * 450
    words = rng.integers(8, 16, 40)
    start = time.time() - ticks * 1800 - 600
    out = []
    for k in range(ticks):
        for j, u in enumerate(rng.choice(40, 10, replace=False)):
            for model, gap, extra in ((FAST, 0.0, 0.0), (SLOW, gap_ms, 0.02), (TWIN, gap_ms, 0.02)):
                value = utterance[u] + gap + rng.normal(0, 10)
                errors = int(rng.binomial(words[u], 0.05 + extra))
                out.append(Observation(
                    run_id=f"tick-{k}", model_id=model, dataset=DATASET, clip_id=f"u{u:02d}", attempt=1, board="stt",
                    vendor="sim", protocol="stt-stream", region="local", started_at=start + k * 1800 + j * 5,
                    status="ok", ttfs_ms=float(value), first_partial_ms=float(value) / 3, substitutions=errors,
                    deletions=0, insertions=0, ref_words=int(words[u]), method_version=METHOD_VERSION,
                    hypothesis="", reference="", emulator=False))
    return out


# ------------------------------------------------------------------ the definitions


def _at_5(tested):
    """A single pair's difference with its 95 % interval and its own verdict at 5 %."""
    return tested.at_level(0.05, tested.difference.p_value <= 0.05)


def test_what_two_models_share_cancels_and_a_consistent_difference_is_shown():
    rows = board_rows()
    board = leaderboard.build(rows)
    p50 = {r.model_id: r.p50_ci for r in board if r.metric == "ttfs_ms"}
    assert p50[FAST][1] > p50[SLOW][0], "the per-series intervals should overlap: the utterances' spread is shared"
    by = {m: [r for r in rows if r.model_id == m] for m in (FAST, SLOW, TWIN)}

    def side(model: str, field: str = "ttfs_ms"):
        return cells([r.clip_id for r in by[model]], [r.run_id for r in by[model]], [getattr(r, field) for r in by[model]])

    d = _at_5(median_paired_difference(side(FAST), side(SLOW)))
    assert d.cells == 300 and d.ticks == 30 and d.p_value < 1e-6
    assert d.ci[0] < 25.0 < d.ci[1] and 15 < d.estimate < 35  # the gap itself, not the utterances' spread
    assert d.ci[1] - d.ci[0] < (p50[FAST][1] - p50[FAST][0]) / 3
    same = _at_5(median_paired_difference(side(SLOW), side(TWIN)))
    assert same.p_value > 0.05 and same.ci[0] < 0 < same.ci[1]
    wer = _at_5(ratio_difference(side(FAST, "substitutions"), side(FAST, "ref_words"), side(SLOW, "substitutions"),
                                 side(SLOW, "ref_words")))
    assert wer.estimate > 0 and wer.ci[0] < wer.estimate < wer.ci[1]


def test_only_cells_both_measured_count():
    a = cells(["u1", "u2", "u3", "u4"], ["t1", "t1", "t2", "t2"], [1.0, 2.0, 3.0, None])
    b = cells(["u2", "u3", "u4", "u5"], ["t1", "t2", "t2", "t2"], [5.0, 6.0, 7.0, 8.0])
    d = median_paired_difference(a, b).difference
    assert d.cells == 2 and d.estimate is None  # u2@t1 and u3@t2 only: under the floor, so no figure
    twice = cells(["u1", "u1", "u2"], ["t1", "t1", "t1"], [1.0, 3.0, 5.0])  # a cell measured twice: its median
    assert list(twice.values) == [2.0, 5.0]


def test_holm_steps_down_and_stops_at_the_first_failure():
    p = [0.01, 0.04, 0.03, None, 0.005]
    assert holm_adjusted(p) == pytest.approx([0.03, 0.06, 0.06, None, 0.02])
    assert holm(p) == [True, False, False, False, True]
    assert holm([0.049]) == [True] and holm([0.051]) == [False]


def test_ranks_follow_shown_differences_only():
    rows = board_rows()
    board = leaderboard.build(rows)
    compared = compute(rows)
    ranked = {k.model_id: str(v) for k, v in ranks(board, METHOD_VERSION, compared).items()}
    assert ranked == {FAST: "1", SLOW: "2-3", TWIN: "2-3"}  # the twins' difference is not shown: either could be 2nd
    pair = {(c.a.model_id, c.b.model_id, c.statistic): c for c in compared}
    assert pair[(FAST, SLOW, "ttfs_ms")].shown and not pair[(TWIN, SLOW, "ttfs_ms")].shown  # pairs in key order
    assert {c.statistic for c in compared} == {"ttfs_ms", "first_partial_ms", "pooled_wer"}  # no connect_ms measured
    no_pairs = ranks(board, METHOD_VERSION, [])
    assert {str(v) for v in no_pairs.values()} == {"1-3"}  # without comparisons nothing is shown: any place


def test_a_model_of_another_method_version_or_region_is_never_compared():
    rows = board_rows(ticks=6)
    moved = [replace(r, region="elsewhere") if r.model_id == TWIN else r for r in rows]
    compared = compute(moved)
    assert compared and all(TWIN not in (c.a.model_id, c.b.model_id) for c in compared)
    old = [replace(r, method_version="1") if r.model_id == TWIN else r for r in rows]
    assert all(TWIN not in (c.a.model_id, c.b.model_id) for c in compute(old))


# ------------------------------------------------------------------ every reader, both stores


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, str]:
    """The same rows in a SQLite store (added directly) and in a Postgres store (added by `voxwatch
    ingest`, which refreshes its comparisons table as a finished tick does)."""
    folder = tmp_path_factory.mktemp("paired")
    rows = board_rows()
    export = folder / "rows.jsonl"
    export.write_text("".join(json.dumps(asdict(r)) + "\n" for r in rows))
    sqlite = sqlite_store(folder, rows)
    with fresh_postgres() as pg:
        run_cli("db", "upgrade", "--store", pg)
        run_cli("ingest", str(export), "--store", pg)
        yield {"sqlite": sqlite, "postgres": pg, "folder": str(folder)}


def _expected(full: bool = False) -> list[dict]:
    """metrics/ and boards/ on the same rows: at the JSON's published precision (metrics.published),
    or at full precision (the CSV's)."""
    from voxwatch.boards.comparisons import published, records

    return (records if full else published)(compute(board_rows()))


def _same(got: list[dict], want: list[dict]) -> None:
    key = list(want[0])[:10] if want else []
    assert [tuple(g[k] for k in key) for g in got] == [tuple(w[k] for k in key) for w in want] and want
    for g, w in zip(got, want):
        for k, v in w.items():
            if isinstance(v, float):
                assert g[k] == pytest.approx(v, rel=1e-9, abs=1e-12), k
            else:
                assert g[k] == v, k


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_the_cli_prints_the_comparisons_and_ranks_metrics_defines(stores, kind):
    url = stores[kind]
    doc = json.loads(run_cli("compare", "--format", "json", "--store", url).stdout)
    _same(doc["comparisons"], _expected())
    assert "same clips" in doc["about"]
    table = run_cli("compare", "--store", url).stdout  # fitted: the verdict names the column of the one ahead
    line = next(ln for ln in table.splitlines() if ln.startswith("ttfs_ms") and FAST in ln and SLOW in ln)
    assert line.endswith("a ahead" if line.index(FAST) < line.index(SLOW) else "b ahead")
    wide = run_cli("compare", "--wide", "--store", url).stdout
    assert f"{FAST} ahead of {SLOW}" in wide and "no difference shown" in table and "no difference shown" in wide
    board = json.loads(run_cli("leaderboard", "--format", "json", "--store", url).stdout)
    ranked = {r["model_id"]: (r["rank"], r["rank_best"], r["rank_worst"]) for r in board["rows"] if r["metric"] == "ttfs_ms"}
    assert ranked == {FAST: ("1", 1, 1), SLOW: ("2-3", 2, 3), TWIN: ("2-3", 2, 3)}
    assert "same clips" in board["intervals"]["comparisons"] and "this dataset" in board["intervals"]["series"]
    text = run_cli("leaderboard", "--store", url).stdout
    lines = {ln.split()[1]: ln.split()[0] for ln in text.splitlines() if "ttfs_ms" in ln and ln.split()[0][0].isdigit()}
    assert lines == {FAST: "1", SLOW: "2-3", TWIN: "2-3"}
    rows = list(csv.DictReader(io.StringIO(run_cli("compare", "--format", "csv", "--store", url).stdout)))
    assert len(rows) == len(_expected()) and {r["shown"] for r in rows} == {"True", "False"}
    for r, w in zip(rows, _expected(full=True)):  # the CSV keeps full precision
        assert [float(r[k]) for k, v in w.items() if isinstance(v, float)] == pytest.approx(
            [v for v in w.values() if isinstance(v, float)], rel=1e-9, abs=1e-12)
    assert any(len(r["estimate"].split(".")[-1]) > 4 for r in rows)  # finer than the JSON's 0.1 ms


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_the_api_and_the_web_page_rank_the_faster_model_ahead(stores, kind, browser):  # noqa: F811
    with serving(stores[kind], Path(stores["folder"]) / f"serve-{kind}.log") as base:
        doc = httpx.get(f"{base}/api/v1/comparisons").json()
        _same(doc["comparisons"], _expected())
        only = httpx.get(f"{base}/api/v1/comparisons", params={"model": TWIN}).json()["comparisons"]
        assert only and all(TWIN in (c["model_a"], c["model_b"]) for c in only)
        got = httpx.get(f"{base}/api/v1/comparisons", params={"format": "csv"})
        assert got.headers["content-type"].startswith("text/csv") and len(got.text.splitlines()) == len(_expected()) + 1
        board = httpx.get(f"{base}/api/v1/leaderboard", params={"board": "stt"}).json()
        assert {r["model_id"]: r["rank"] for r in board["rows"] if r["metric"] == "ttfs_ms"} == {FAST: "1", SLOW: "2-3",
                                                                                                TWIN: "2-3"}
        spec = httpx.get(f"{base}/api/v1/openapi.json").json()
        assert "/api/v1/comparisons" in spec["paths"] and "Comparison" in spec["components"]["schemas"]
        browser.get(f"{base}/board/stt")
        shown = browser.execute_script("""
            const t = document.querySelector('table.ranked[data-dataset="sim-paired"]');
            return {ranks: Array.from(t.querySelectorAll('tbody tr')).map(tr => [tr.dataset.model,
                      tr.querySelector('td[data-field=rank]').innerText.trim()]),
                    pairs: Array.from(document.querySelectorAll('table.comparisons tbody tr')).map(tr =>
                      [tr.dataset.modelA, tr.dataset.modelB, tr.dataset.shown,
                       tr.querySelector('td[data-field=verdict]').textContent.trim()]),
                    about: document.querySelector('p.interval-about').innerText};""")
        assert dict(shown["ranks"]) == {FAST: "1", SLOW: "2-3", TWIN: "2-3"}
        assert shown["ranks"][0][0] == FAST  # ranked ahead: first in the table
        assert [FAST, SLOW, "true", f"{FAST} ahead of {SLOW}"] in shown["pairs"]
        assert [TWIN, SLOW, "false", "no difference shown"] in shown["pairs"]
        assert "speech like this dataset" in shown["about"]


def test_postgres_refreshes_a_rankings_comparisons_when_its_tick_finishes():
    """Rows alone leave the comparisons table as it was; the tick's finished run record recomputes the
    comparisons of the datasets it measured, and a running record does not."""
    from voxwatch.foundation.observation import RunRecord
    from voxwatch.store import comparisons as table
    from voxwatch.store import open_store

    rows = board_rows(ticks=8)
    with fresh_postgres() as url:
        store = open_store(url)
        try:
            store.add(rows)
            assert store.comparisons("30d") == []
            last = rows[-1].run_id
            store.finish_run(RunRecord(last, rows[-1].started_at, "local", 1, status="running"))
            assert store.comparisons("30d") == []
            store.finish_run(RunRecord(last, rows[-1].started_at, "local", 1, status="succeeded",
                                       finished_at=time.time(), rows=30, failed_rows=0))
            stored = store.comparisons("30d")
            later = time.time() + 2 * 86400  # no tick for two days: the 24 h comparisons are of rows gone from it
            assert table.read(store.connection(), "24h", now=later) == [] and table.read(store.connection(), "24h")
            assert len(table.read(store.connection(), "30d", now=later)) == len(stored)
        finally:
            store.close()
    expected = compute(rows)
    assert [(c.a, c.b, c.statistic) for c in stored] == [(c.a, c.b, c.statistic) for c in expected] and expected
    assert [c.difference.estimate for c in stored] == pytest.approx([c.difference.estimate for c in expected])
