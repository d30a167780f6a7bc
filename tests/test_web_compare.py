"""The comparison pages (/compare/<board>) and their API (/api/v1/compare/<board>), issue #31 part 1:
every model of a board over a use case, latency against accuracy with the Pareto frontier.

Served from real SQLite and Postgres stores seeded by tests/support/compare_seed.py (four or more
models per board, two datasets, four models' conversations, an emulator's rows, a superseded
method's, a model missing a dataset). The API's numbers are held to the figures computed from the
rows alone, the page's table, chart and CSV to the API's; in headless Chromium at 390 and 1366 px
the pages do not scroll sideways, a phone's first screen holds a model with its latency and its
accuracy, and the chart draws the frontier and dims the models off it. Screenshots:
var/test-artifacts/compare-<board>-<width>.png.
"""

from __future__ import annotations

import contextlib
import csv
import io
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Iterator

import jsonschema
import pytest
from starlette.testclient import TestClient

from voxwatch.boards import compare_refresh
from voxwatch.boards.use_cases import COMPARE_BOARDS, accuracy_of
from voxwatch.conversations.records import score_of
from voxwatch.foundation.store_url import POSTGRES, store_kind
from voxwatch.metrics.conversation_aggregate import instruction_adherence, speech_quality, v2v_per_turn
from voxwatch.metrics.published import rounded
from voxwatch.metrics.series import WINDOWS
from voxwatch.metrics.specs import METRICS
from voxwatch.providers.registry import Registry
from voxwatch.store import open_store
from voxwatch.web.app import create_app
from voxwatch.web.source import open_source

from support.browser import browser  # noqa: F401 (a fixture)
from support.compare_seed import (BOARDS, CONVERSATION_MODELS, EMULATOR_MS, HALF_MEASURED, ROWS, add_conversations,
                                  conversations, expected, expected_ranks)
from support.processes import REPO
from support.web_seed import seeded_store, serving, sqlite_store

pytestmark = pytest.mark.e2e

ARTIFACTS = REPO / "var" / "test-artifacts"
SIZES = {390: 844, 1366: 900}
SERIES_BOARDS = tuple(BOARDS)


@contextlib.contextmanager
def _store(kind: str, folder: Path) -> Iterator[str]:
    if kind == "sqlite":
        url = sqlite_store(folder, ROWS)
        add_conversations(url)
        yield url
        return
    with seeded_store(ROWS) as url:
        add_conversations(url)
        yield url


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def store(request, tmp_path_factory) -> Iterator[str]:
    with _store(request.param, tmp_path_factory.mktemp(request.param)) as url:
        yield url


@pytest.fixture(scope="module")
def client(store: str) -> TestClient:
    return TestClient(create_app(store))


def _doc(client: TestClient, board: str, **params: str) -> dict:
    response = client.get(f"/api/v1/compare/{board}", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def _rows(doc: dict) -> dict[str, dict]:
    return {r["model_id"]: r for r in doc["rows"]}


# --- the API against the rows ----------------------------------------------------------------------


@pytest.mark.parametrize("board", SERIES_BOARDS)
def test_every_use_case_holds_the_pooled_figures_of_the_rows(client, board):
    first = _doc(client, board)
    assert first["use_cases"] and first["use_case"] == first["use_cases"][0]
    for case in first["use_cases"]:
        doc = _doc(client, board, use_case=case["id"])
        want = expected(board, tuple(case["datasets"]), case["id"])
        got = _rows(doc)
        assert set(got) == set(want) and len(got) >= 4, (case, sorted(got))
        for model, row in want.items():
            r = got[model]
            assert r["latency_n"] == row.n and r["latency_p50"] == rounded(row.p50, "ms")
            assert r["latency_p50_ci"] == rounded(list(row.p50_ci), "ms")
            figure, interval, counted = accuracy_of(row, COMPARE_BOARDS[board])  # WER, answer accuracy, WER at a deadline
            assert r["accuracy"] == rounded(figure, "fraction") and r["accuracy_ci"] == rounded(list(interval), "fraction")
            assert r["accuracy_n"] == counted > 0
            if board in ("tts", "s2s"):  # speech quality beside a voice's intelligibility, a reply's answer accuracy
                assert row.quality_mos is not None and r["quality_n"] == row.quality_clips > 0
                assert (r["quality_mos"], r["quality_mos_ci"]) == (rounded(row.quality_mos, "fraction"),
                                                                   rounded(list(row.quality_mos_ci), "fraction"))
            else:  # STT sends no audio
                assert (r["quality_n"], r["quality_mos"], r["quality_mos_ci"]) == (0, None, None)
        assert {m: r["rank"] for m, r in got.items()} == expected_ranks(board, tuple(case["datasets"]), case["id"])
        assert all(EMULATOR_MS not in (r["latency_p50"], *(r["latency_p50_ci"] or ())) for r in doc["rows"])
        assert not any(m.startswith("acme/superseded") for m in got)  # a superseded method's rows are not compared


def test_a_model_missing_a_dataset_of_the_use_case_is_left_out_and_said_so(client):
    doc = _doc(client, HALF_MEASURED[0])
    assert doc["use_case"]["datasets"] == ["tts-prompts", "tts-prompts-long"]
    assert HALF_MEASURED[1] not in _rows(doc)
    assert doc["left_out"] == [f"{HALF_MEASURED[1]} (us-east): not measured on tts-prompts-long"]


@pytest.mark.parametrize("board", COMPARE_BOARDS)
def test_the_frontier_flags_and_ranks(client, board):
    doc = _doc(client, board)
    rows, lower = doc["rows"], doc["accuracy"]["lower_is_better"]

    def better_or_equal(a: float, b: float) -> bool:
        return a <= b if lower else a >= b

    for r in rows:  # off it only when another line is as fast and as accurate, and better at one; the
        # paired verdicts may keep a line on it that the estimates alone would put off (test_rank_ranges)
        beaten = any(o is not r and o["latency_p50"] <= r["latency_p50"] and better_or_equal(o["accuracy"], r["accuracy"])
                     and (o["latency_p50"], o["accuracy"]) != (r["latency_p50"], r["accuracy"]) for o in rows)
        assert r["on_frontier"] or beaten, (board, r["model_id"])
    assert any(r["on_frontier"] for r in rows) and any(not r["on_frontier"] for r in rows), board
    ranked = [r for r in rows if r["rank"] is not None]
    if board == "s2s-conversations":
        assert not ranked and all(r["unranked"] for r in rows)
        return
    places = {r["model_id"]: tuple(int(x) for x in r["rank"].split("-")) for r in ranked}
    assert ranked and min(p[0] for p in places.values()) == 1
    assert [r["latency_p50"] for r in ranked] == sorted(r["latency_p50"] for r in ranked)  # in estimate order
    for a in ranked:  # a model ranked wholly ahead of another is faster on the pooled rows
        assert all(a["latency_p50"] < b["latency_p50"] for b in ranked
                   if places[a["model_id"]][-1] < places[b["model_id"]][0])


def test_the_conversations_comparison_is_the_scorecards_figures(client):
    doc = _doc(client, "s2s-conversations")
    assert doc["use_case"] == {"id": "default", "title": "persona default", "datasets": ["clinic-desk"]}
    got = _rows(doc)
    assert set(got) == set(CONVERSATION_MODELS)
    for model in CONVERSATION_MODELS:
        scores = [score_of(row, turns) for row, turns in conversations() if row.model_id == model and not row.emulator]
        v2v, adherence = v2v_per_turn(scores), instruction_adherence(scores)
        r = got[model]
        assert (r["latency_n"], r["latency_p50"], r["latency_p50_ci"]) == (v2v.n, rounded(v2v.p50, "ms"),
                                                                            rounded(list(v2v.p50_ci), "ms"))
        assert (r["accuracy_n"], r["accuracy"], r["accuracy_ci"]) == (
            adherence.n, rounded(adherence.rate, "fraction"), rounded(list(adherence.interval), "fraction"))
        quality = speech_quality(scores)  # the replies' speech quality beside them, as the scorecard has it
        assert quality.n > 0 and (r["quality_n"], r["quality_mos"], r["quality_mos_ci"]) == (
            quality.n, rounded(quality.mos, "fraction"), rounded(list(quality.interval), "fraction"))


def test_bad_requests_say_what_there_is(client):
    response = client.get("/compare/stt")
    assert response.status_code == 404 and "stt-stream" in response.text
    response = client.get("/api/v1/compare/stt-stream", params={"use_case": "underwater"})
    assert response.status_code == 400 and "the use cases are clean, noisy" in response.text
    assert client.get("/compare/tts", params={"window": "1y"}).status_code == 400


def test_the_document_is_the_one_openapi_describes(client):
    spec = client.get("/api/v1/openapi.json").json()
    assert "/api/v1/compare/{board}" in spec["paths"]
    for board in COMPARE_BOARDS:
        jsonschema.validate(_doc(client, board), {"$ref": "#/components/schemas/UseCaseComparison",
                                                  "components": spec["components"]})


# --- the page and the CSV against the API ----------------------------------------------------------


class _Page(HTMLParser):
    """The comparison table's rows (their cells' attributes and text), the chart's points and the
    frontier path, the use cases listed, and the links to the page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[dict] = []
        self.points: list[dict] = []
        self.frontier: list[dict] = []
        self.use_cases: dict[str, str] = {}
        self._cell: dict | None = None
        self._case: str | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "tr" and "data-model" in a:
            self.rows.append({**a, "cells": {}})
        elif tag == "td" and self.rows and "data-field" in a:
            self._cell = {**a, "text": ""}
            self.rows[-1]["cells"][a["data-field"]] = self._cell
        elif tag == "g" and "point" in classes:
            self.points.append(a)
        elif tag == "path" and "frontier" in classes:
            self.frontier.append(a)
        elif tag == "li" and "data-use-case" in a:
            self._case = a["data-use-case"]
            self.use_cases[self._case] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._cell = None
        elif tag == "li":
            self._case = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell["text"] += data
        if self._case is not None:
            self.use_cases[self._case] += data


def _parsed(client: TestClient, path: str, **params: str) -> _Page:
    response = client.get(path, params=params)
    assert response.status_code == 200, response.text[:300]
    page = _Page()
    page.feed(response.text)
    return page


def _number(cell: dict, name: str = "data-value") -> float | None:
    return float(cell[name]) if name in cell else None


@pytest.mark.parametrize("board", COMPARE_BOARDS)
def test_the_page_shows_the_apis_numbers(client, board):
    for case in _doc(client, board)["use_cases"]:
        doc = _doc(client, board, use_case=case["id"])
        page = _parsed(client, f"/compare/{board}", use_case=case["id"])
        assert [r["data-model"] for r in page.rows] == [r["model_id"] for r in doc["rows"]]
        for shown, r in zip(page.rows, doc["rows"]):
            c = shown["cells"]
            assert _number(c["latency_p50"]) == r["latency_p50"] and c["latency_p50"]["text"] == f"{r['latency_p50']:.1f}"
            assert [_number(c["latency_p50_ci"], "data-low"), _number(c["latency_p50_ci"], "data-high")] == r["latency_p50_ci"]
            assert _number(c["accuracy"]) == r["accuracy"]
            assert [_number(c["accuracy_ci"], "data-low"), _number(c["accuracy_ci"], "data-high")] == r["accuracy_ci"]
            text = f"{100 * r['accuracy']:.2f}%" if doc["accuracy"]["unit"] == "fraction" else f"{r['accuracy']:.2f}"
            if r["accuracy_passed"] is not None:  # a share of verdicts says of how many (conversations' adherence)
                text += f" ({r['accuracy_passed']}/{r['accuracy_n']})"
            if r["not_judged"]:
                text += f"judged on fewer dimensions: not on {', '.join(r['not_judged'])}"
            assert c["accuracy"]["text"] == text
            assert c["on_frontier"]["data-value"] == ("true" if r["on_frontier"] else "false")
            assert (c["rank"]["text"].strip() if r["rank"] else None) == r["rank"]
            assert _number(c["price"]) == r["price"]
            if board in ("tts", "s2s", "s2s-conversations"):
                assert _number(c["quality_mos"]) == r["quality_mos"] and c["quality_mos"]["text"] == f"{r['quality_mos']:.2f}"
                assert [_number(c["quality_mos_ci"], "data-low"), _number(c["quality_mos_ci"], "data-high")] == r["quality_mos_ci"]
            else:
                assert "quality_mos" not in c
        priced = {"|".join((r["model_id"], r["region"], r["instrument"] or "")): r for r in doc["rows"] if r["price"] is not None}
        price_marks = [p for p in page.points if "price" in p["class"].split()]
        assert {p["data-key"] for p in price_marks} == set(priced)  # a model with a price is on the price chart, no other
        for p in price_marks:
            r = priced[p["data-key"]]
            assert (float(p["data-x"]), float(p["data-y"])) == (r["latency_p50"], r["price"])
        if board == "tts":
            assert priced, "the seed prices a TTS model (ElevenLabs Flash v2.5's list price)"
        marks = {p["data-key"]: p for p in page.points if "price" not in p["class"].split()}
        assert len(marks) == len(doc["rows"])
        for r in doc["rows"]:
            p = marks["|".join((r["model_id"], r["region"], r["instrument"] or ""))]
            assert (float(p["data-x"]), float(p["data-y"])) == (r["latency_p50"], r["accuracy"])
            assert ("dimmed" in p["class"].split()) is (not r["on_frontier"])
        on = [r for r in doc["rows"] if r["on_frontier"]]
        assert len(page.frontier) == 1 and len(page.frontier[0]["data-keys"].split()) == len(on)
        assert set(page.use_cases) == {u["id"] for u in doc["use_cases"]}
        for u in doc["use_cases"]:  # the datasets behind each use case are named
            assert all(d in page.use_cases[u["id"]] for d in u["datasets"])


@pytest.mark.parametrize("board", COMPARE_BOARDS)
def test_the_csv_is_the_apis_rows(client, board):
    doc = _doc(client, board)
    for response in (client.get(f"/api/v1/compare/{board}", params={"format": "csv"}),
                     client.get(f"/compare/{board}", params={"format": "csv"})):
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/csv")
        lines = list(csv.DictReader(io.StringIO(response.text)))
        assert [line["model_id"] for line in lines] == [r["model_id"] for r in doc["rows"]]
        for line, r in zip(lines, doc["rows"]):
            assert float(line["latency_p50"]) == r["latency_p50"] and float(line["accuracy"]) == r["accuracy"]
            assert [float(line["accuracy_low"]), float(line["accuracy_high"])] == r["accuracy_ci"]
            assert (float(line["quality_mos"]) if line["quality_mos"] else None) == r["quality_mos"]
            assert [float(v) if v else None for v in (line["quality_mos_low"], line["quality_mos_high"])] == \
                (r["quality_mos_ci"] or [None, None])
            assert line["on_frontier"] == str(r["on_frontier"]) and line["use_case"] == doc["use_case"]["id"]


def test_a_page_of_one_model_names_the_models_that_need_no_key(tmp_path):
    """The embedded default measures one engine per protocol: its comparison page says which of the
    registry's models need no API key and how to add them, rather than leaving a lone dot unexplained."""
    from dataclasses import replace

    alone = [replace(r, model_id="pocketsphinx/en-us@5.1.1", vendor="pocketsphinx", region="local")
             for r in ROWS if r.protocol == "stt-stream" and r.model_id == "deepgram/nova-3" and not r.emulator]
    app = TestClient(create_app(sqlite_store(tmp_path, alone)))
    page = app.get("/compare/stt-stream").text
    assert "Only one model of this board is measured here" in page
    assert "<code>faster-whisper/tiny.en-streaming@1.2.1</code>" in page and "VOXWATCH_BOARDS_STT_MODELS" in page
    assert "<code>pocketsphinx/en-us@5.1.1</code>" not in page  # the one shown is not offered again
    assert "<code>deepgram/nova-3</code>" not in page  # a model that needs a key is not offered
    with_four = TestClient(create_app(sqlite_store(tmp_path / "four", ROWS)))
    assert 'data-field="keyless-others"' not in with_four.get("/compare/stt-stream").text


def test_the_pages_method_link_lands_on_its_section(client):
    page = client.get("/compare/stt-stream").text
    anchor = re.search(r'href="/method#([^"]+)"', page).group(1)
    assert f'id="{anchor}"' in client.get("/method").text and "use-cases-and-the-frontier" in anchor


def test_the_home_page_and_each_board_link_the_comparisons(client):
    home = client.get("/").text
    assert all(f'href="/compare/{b}"' in home for b in COMPARE_BOARDS)
    for board, ids in {"stt": ("stt-stream", "stt-batch"), "tts": ("tts",), "s2s": ("s2s", "s2s-conversations")}.items():
        page = client.get(f"/board/{board}").text
        assert all(f'href="/compare/{i}"' in page for i in ids), board


# --- in Chromium ---------------------------------------------------------------------------------


_MEASURE = """
const row = document.querySelector('table.compare tbody tr[data-model]');
const box = e => e ? e.getBoundingClientRect().toJSON() : null;
const cell = f => row && row.querySelector(`td[data-field="${f}"]`);
const chart = document.querySelector('svg.board-chart.frontier');
return {scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
        innerHeight: window.innerHeight, model: box(cell('model')), latency: box(cell('latency_p50')),
        accuracy: box(cell('accuracy')), latencyText: cell('latency_p50') && cell('latency_p50').innerText.trim(),
        frontier: chart ? chart.querySelectorAll('path.frontier').length : 0,
        dimmed: chart ? Array.from(chart.querySelectorAll('g.point.dimmed')).map(g => getComputedStyle(g).opacity) : [],
        chartWidth: chart ? chart.getBoundingClientRect().width : 0,
        labelPx: chart ? Array.from(chart.querySelectorAll('text.number, text.x-tick, text.y-tick')).map(t => t.getBoundingClientRect().height) : []};
"""


@pytest.fixture(scope="module")
def measured(tmp_path_factory, browser) -> dict[tuple[str, int], dict]:
    """Each comparison page at each width, served by `voxwatch serve` from a Postgres store and
    measured in Chromium after load, with its screenshot."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    out = {}
    with _store("postgres", tmp_path_factory.mktemp("browser")) as url, \
            serving(url, tmp_path_factory.mktemp("serve") / "serve.log") as base:
        for width, height in SIZES.items():
            browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
                "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500})
            for board in COMPARE_BOARDS:
                browser.get(f"{base}/compare/{board}")
                out[(board, width)] = browser.execute_script(_MEASURE)
                shot = ARTIFACTS / f"compare-{board}-{width}.png"
                assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 5_000
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    return out


@pytest.mark.parametrize("width", SIZES)
@pytest.mark.parametrize("board", COMPARE_BOARDS)
def test_in_chromium_no_sideways_scroll_and_the_chart_draws_the_frontier(measured, board, width):
    m = measured[(board, width)]
    assert m["innerWidth"] == width
    assert m["scrollWidth"] <= m["innerWidth"], f"{board} at {width}: the page is {m['scrollWidth']} px wide"
    assert m["frontier"] == 1 and m["dimmed"] and all(float(o) < 0.5 for o in m["dimmed"])
    assert 0 < m["chartWidth"] <= width and min(m["labelPx"]) >= 9  # its text stays readable (as the boards: tests/test_web_layout.py)


@pytest.mark.parametrize("board", COMPARE_BOARDS)
def test_a_phones_first_screen_shows_a_model_its_latency_and_its_accuracy(measured, board):
    m = measured[(board, 390)]
    assert m["latencyText"] and m["latencyText"][0].isdigit(), m
    for box in (m["model"], m["latency"], m["accuracy"]):
        assert box and 0 <= box["top"] and box["bottom"] <= m["innerHeight"], (board, box)
        assert 0 <= box["left"] and box["right"] <= m["innerWidth"], (board, box)


# --- Postgres' kept views (store.compare_views) --------------------------------------------------------

def _without_time(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "generated_at"}


def test_a_kept_view_is_the_view_the_rows_make(store, client):
    """What a finished tick keeps (boards.compare_refresh, from the stored series read narrow) is what
    the rows make on a request: every series board, use case and window, byte for byte in the API."""
    if store_kind(store) != POSTGRES:
        pytest.skip("only Postgres keeps comparison views")

    asked = [(board, window, case["id"]) for board in SERIES_BOARDS for window in WINDOWS
             for case in _doc(client, board, window=window)["use_cases"]]
    assert len({b for b, _, _ in asked}) == len(SERIES_BOARDS) and len(asked) > len(SERIES_BOARDS) * len(WINDOWS)
    from_rows = {a: _without_time(_doc(client, a[0], window=a[1], use_case=a[2])) for a in asked}
    s = open_store(store)
    try:
        views = s.connection().execute("SELECT count(*) FROM compare_views")
        assert views.fetchone()[0] == 0  # the pages above computed theirs from the rows
        written = compare_refresh.refresh(s, Registry.default())
        assert written == len(SERIES_BOARDS) * len(WINDOWS)
        source = open_source(store, Registry.default())
        try:  # the pages now read the kept views
            assert all(source.compare_view(b, w) is not None for b in SERIES_BOARDS for w in WINDOWS)
        finally:
            source.close()
        kept = TestClient(create_app(store))
        for a, expected_doc in from_rows.items():
            got = _without_time(_doc(kept, a[0], window=a[1], use_case=a[2]))
            assert got == expected_doc, (a, [(x, y) for x, y in zip(got["rows"], expected_doc["rows"]) if x != y],
                                         {k: (got[k], expected_doc[k]) for k in got if k != "rows" and got[k] != expected_doc[k]})
    finally:
        s.connection().execute("DELETE FROM compare_views")
        s.close()


# --- no interval anywhere leaves its metric's range ----------------------------------------------------

SIGNED_CLOCKS = {m.name for m in METRICS if m.signed}
SHARE_FIELDS = ("error_rate_ci", "timeout_rate_ci", "entity_error_rate_ci", "rate_ci")


def _intervals(doc, path: str = "") -> Iterator[tuple[str, dict, list]]:
    """Every interval of a JSON document: a list of two numbers under a key ending in `_ci` or named
    `interval`, with the record it sits in."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            if (key.endswith("_ci") or key == "interval") and isinstance(value, list) and len(value) == 2:
                yield f"{path}.{key}", doc, value
            else:
                yield from _intervals(value, f"{path}.{key}")
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _intervals(value, f"{path}[{i}]")


def _range(where: str, record: dict) -> tuple[float, float]:
    """The range an interval must stay in: a share in [0, 1], speech quality on 1-5, WER and every
    clock of these rows (none negative) at or above 0."""
    if any(where.endswith(f) for f in SHARE_FIELDS) or (where.endswith("accuracy_ci") and record.get("accuracy_unit") != "score"):
        return 0.0, 1.0
    if "quality" in where or "mos" in where:
        return 1.0, 5.0
    clock = where.endswith(("mean_ci", "p50_ci", "p95_ci"))
    if clock and (record.get("metric") or record.get("latency_metric")) in SIGNED_CLOCKS:
        return -float("inf"), float("inf")  # a final before its anchor is a real value (metrics.support.of_values)
    return 0.0, float("inf")


def test_no_interval_on_any_document_leaves_its_metrics_range(client):
    """Every interval the API publishes for the seeded store (each board, each comparison page's use
    cases, the conversations and the bake-off) lies within its metric's range and holds its estimate
    order (low <= high): rates in [0, 1], WER and latencies at or above 0, MOS on 1-5."""
    docs = {f"leaderboard {b}": client.get("/api/v1/leaderboard", params={"board": b}).json()
            for b in ("stt", "tts", "s2s")}
    for board in (*SERIES_BOARDS, "s2s-conversations"):
        for case in _doc(client, board)["use_cases"]:
            doc = _doc(client, board, use_case=case["id"])
            for row in doc["rows"]:
                row["accuracy_unit"], row["latency_metric"] = doc["accuracy"]["unit"], doc["latency"]["metric"]
            docs[f"compare {board} {case['id']}"] = doc
    docs["conversations"] = client.get("/api/v1/conversations").json()
    docs["bakeoff"] = client.get("/api/v1/bakeoff").json()
    seen, outside = 0, []
    for name, doc in docs.items():
        for where, record, (low, high) in _intervals(doc):
            if low is None or high is None:
                continue
            seen += 1
            lowest, highest = _range(where, record)
            if not lowest <= low <= high <= highest:
                outside.append(f"{name} {where}: [{low}, {high}] outside [{lowest}, {highest}]")
    assert seen > 100 and outside == []
