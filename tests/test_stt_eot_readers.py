"""Every reader of the STT's own end of turn agrees with metrics/ (METHOD "STT end of turn"): the series
figures (metrics.series.eot_figures) against the rows counted by hand; both stores keep eot_ms and
eot_false_cutoffs (Postgres migration 25, SQLite by its added columns) and their aggregates; the CLI board's
trade-off table, the web board's, the API's JSON, the board's CSV and the Grafana overview panel show the
numbers metrics.series gives, and a model without end-of-turn events says so."""

from __future__ import annotations

import csv
import io
import re
import time

import numpy as np
import pytest

from voxwatch.boards.end_of_turn import NO_EVENTS
from voxwatch.boards.leaderboard import build
from voxwatch.foundation.observation import Observation
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.clustered import design, quantile_interval, rate_interval
from voxwatch.metrics.series import series_rows
from voxwatch.store import open_store
from voxwatch.store.series_data import group

from support.migrated import keeps_older_rows_null
from support.postgres import fresh_postgres
from support.processes import run_cli

FLUX = "deepgram/flux-general-en"
SILENT = "soniox/stt-rt-v6"  # its registry entry: no end-of-turn events
DATASET = "stt-starter-noisegap"


def row(model: str, clip: int, tick: int, eot: float | None, cutoffs: int | None, status: str = "ok",
        attempt: int = 1) -> Observation:
    ok = status == "ok"
    return Observation(
        run_id=f"tick-{tick}", model_id=model, dataset=DATASET, clip_id=f"u{clip:03d}", attempt=attempt, board="stt",
        vendor=model.split("/")[0], protocol="stt-stream", region="local",
        started_at=time.time() - 3600 + 60 * tick + clip, status=status, reason=None if ok else "no final",
        condition="noisegap", family="stt-starter", utterance_id=f"u{clip:03d}", language="en",
        method_version=METHOD_VERSION, ttfs_ms=300.0 + clip + tick if ok else None,
        first_partial_ms=150.0 if ok else None, connect_ms=10.0 if ok else None, eot_ms=eot if ok else None,
        eot_false_cutoffs=cutoffs if ok else None, reference="a b c", hypothesis="a b c" if ok else None,
        substitutions=0 if ok else None, deletions=0 if ok else None, insertions=0 if ok else None,
        ref_words=3 if ok else None)


def rows() -> list[Observation]:
    """Flux on the pause dataset: 8 clips at 4 ticks, a cut-off on a quarter, one clip with no end of turn,
    and a timeout (unscored); Soniox beside it, with neither field."""
    out = [row(FLUX, c, t, None if (c, t) == (3, 1) else 250.0 + 11 * c + 7 * t, int((c + t) % 4 == 0) * (1 + c % 2))
           for t in range(4) for c in range(1, 9)]
    out.append(row(FLUX, 1, 0, None, None, status="timeout", attempt=2))
    out += [row(SILENT, c, t, None, None) for t in range(4) for c in range(1, 9)]
    return out


def by_hand(stored: list[Observation]) -> dict:
    scored = [r for r in stored if r.model_id == FLUX and r.status == "ok" and r.eot_false_cutoffs is not None]
    timed = [r for r in scored if r.eot_ms is not None]
    x = np.array([r.eot_ms for r in timed])
    hits = np.array([float(r.eot_false_cutoffs > 0) for r in scored])
    return {"clips": len(scored), "p50": float(np.percentile(x, 50)),
            "p50_ci": quantile_interval(x, 50, design(utterance=[r.clip_id for r in timed], tick=[r.run_id for r in timed])),
            "share": float(hits.mean()), "cutoffs": sum(r.eot_false_cutoffs for r in scored),
            "share_ci": rate_interval(hits, design(utterance=[r.clip_id for r in scored], tick=[r.run_id for r in scored]))}


def test_the_series_figures_are_the_rows_counted_by_hand():
    hand = by_hand(rows())
    assert hand["clips"] == 32 and 0 < hand["share"] < 1 and hand["cutoffs"] > hand["share"] * 32
    series = {key.model_id: series_rows(key, data)[0] for key, data in group(rows()).items()}
    flux, silent = series[FLUX], series[SILENT]
    assert (flux.eot_clips, flux.eot_false_cutoffs) == (hand["clips"], hand["cutoffs"])
    assert flux.eot_p50 == pytest.approx(hand["p50"]) and flux.eot_p50_ci == pytest.approx(hand["p50_ci"])
    assert flux.eot_false_cutoff_share == pytest.approx(hand["share"])
    assert flux.eot_false_cutoff_share_ci == pytest.approx(hand["share_ci"])
    assert flux.eot_p95 is None  # p95 needs 100 values
    assert (silent.eot_clips, silent.eot_p50, silent.eot_false_cutoff_share) == (0, None, None)


def _stored(url: str) -> list[Observation]:
    store = open_store(url)
    try:
        store.add(rows())
        return list(store.observations())
    finally:
        store.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.e2e)])
def store_of(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'voxwatch.sqlite'}"
        yield url, _stored(url)
    else:
        with fresh_postgres() as url:
            run_cli("db", "upgrade", "--store", url)
            yield url, _stored(url)


def test_every_reader_shows_the_stored_rows_end_of_turn(store_of, cli):
    from starlette.testclient import TestClient

    from voxwatch.metrics.published import rounded
    from voxwatch.web.app import create_app

    url, stored = store_of
    key = lambda r: (r.run_id, r.model_id, r.clip_id, r.attempt)  # noqa: E731
    assert {key(r): (r.eot_ms, r.eot_false_cutoffs) for r in stored} == \
        {key(r): (r.eot_ms, r.eot_false_cutoffs) for r in rows()}  # both fields, their nulls too
    hand = by_hand(stored)
    [expected] = [r for r in build(rows()) if r.model_id == FLUX and r.metric == "ttfs_ms"]

    code, board, err = cli("leaderboard", "--board", "stt", "--store", url)
    assert code == 0, err
    table = board[board.index("end of turn (streaming)"):]
    flux_line = next(line for line in table.splitlines() if FLUX in line)
    low, high = hand["share_ci"]
    assert f"{100 * hand['share']:.1f}% [{100 * low:.1f}, {100 * high:.1f}]" in flux_line, flux_line
    assert f"{hand['p50']:.0f} [{hand['p50_ci'][0]:.0f}, {hand['p50_ci'][1]:.0f}]" in flux_line
    assert NO_EVENTS in next(line for line in table.splitlines() if SILENT in line)

    with TestClient(create_app(url)) as client:
        api = client.get("/api/v1/leaderboard", params={"board": "stt"}).json()["rows"]
        board_csv = list(csv.DictReader(io.StringIO(client.get("/board/stt", params={"format": "csv"}).text)))
        page = client.get("/board/stt").text
    mine = [r for r in api if r["model_id"] == FLUX]
    assert mine and all(r["eot_clips"] == hand["clips"] and r["eot_p50"] == rounded(hand["p50"], "ms")
                        and r["eot_false_cutoff_share"] == rounded(hand["share"], "fraction") for r in mine)
    assert all(r["eot_clips"] == 0 and r["eot_p50"] is None for r in api if r["model_id"] == SILENT)
    for r in (r for r in board_csv if r["model_id"] == FLUX):
        assert float(r["eot_false_cutoff_share"]) == pytest.approx(hand["share"])
        assert float(r["eot_p50_ci_low"]) == pytest.approx(expected.eot_p50_ci[0])
        assert int(r["eot_false_cutoffs"]) == hand["cutoffs"]
    section = re.search(r'data-field="end-of-turn".*?</table>', page, re.S).group(0)
    assert re.search(rf'data-eot-model="{re.escape(FLUX)}".*?{100 * hand["share"]:.1f}%', section, re.S)
    assert re.search(rf'data-eot-model="{re.escape(SILENT)}".*?data-field="no-eot">{NO_EVENTS}', section, re.S)


@pytest.mark.e2e
def test_the_grafana_panel_reads_the_figures_metrics_gives():
    import json
    from pathlib import Path

    from support.grafana_panels import run_panel, variables_of

    overview = json.loads((Path(__file__).resolve().parents[1] / "dashboards" / "overview.json").read_text())
    title = next(p["title"] for p in overview["panels"] if p["id"] == 5)
    hand = by_hand(rows())
    with fresh_postgres() as url:
        run_cli("db", "upgrade", "--store", url)
        _stored(url)
        store = open_store(url)
        try:
            conn = store.connection()
            got = {r["model"]: r for r in run_panel(conn, overview, title,
                                                    variables_of(conn, overview).scoped("window", "30d"))}
        finally:
            store.close()
    flux, silent = got[FLUX], got[SILENT]
    assert flux["eot_clips"] == hand["clips"] and flux["eot_false_cutoffs"] == hand["cutoffs"]
    assert flux["eot_false_cutoff_share"] == pytest.approx(hand["share"])
    assert (flux["eot_false_cutoff_share_ci_low"], flux["eot_false_cutoff_share_ci_high"]) == \
        pytest.approx(hand["share_ci"])
    assert flux["eot_p50"] == pytest.approx(hand["p50"]) and flux["note"] is None
    assert silent["eot_clips"] == 0 and silent["note"] == NO_EVENTS


def test_migration_25_adds_the_columns_and_keeps_older_rows_null():
    keeps_older_rows_null(25, ("eot_ms", "eot_false_cutoffs"), rows()[:3], lambda r: (r.eot_ms, r.eot_false_cutoffs),
                          (None, None))
