"""The overview and the boards as a visitor meets them (issue #18): they fit a 390 px phone and a
1366 px laptop without page-level sideways scrolling, the headline numbers are in a phone's first
screen, and the ranked tables sort and filter by their query parameters, with charts that draw the
tables' own numbers, the newest measurement, the data's provenance and firing alerts beside the model.

Served by `voxwatch serve` from a Postgres store seeded with test_web's rows (test_web's store,
server and headless Chromium fixtures: one of each for the module). Screenshots of every page at both widths go to
var/test-artifacts/layout-<page>-<width>.png.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from dataclasses import replace
from html import unescape
from html.parser import HTMLParser

import httpx
import pytest

from voxwatch.metrics.published import rounded
from voxwatch.web.views import DESCRIPTIONS, LABELS, UNITS, metric_head
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.ranking import ranked_metric
from voxwatch.providers.registry import Registry
from voxwatch.store import open_store
from voxwatch.store.connection import connect
from voxwatch.web.source import open_source

from support.processes import REPO
from support.browser import browser  # noqa: F401 (a fixture)
from support.web_seed import (DAY, NOW, ROWS, expected_board, seeded_store, server,  # noqa: F401 (the module's fixtures)
                              serving, store)

pytestmark = pytest.mark.e2e

ARTIFACTS = REPO / "var" / "test-artifacts"
PAGES = {"overview": "/", "stt": "/board/stt", "tts": "/board/tts", "s2s": "/board/s2s"}
SIZES = {"phone": (390, 844), "laptop": (1366, 900)}
ALERTED = ("deepgram/nova-3", "stt-starter-clean", "eu-west")  # a firing alert on this series


@pytest.fixture(scope="module")
def alerts(store: str) -> list[tuple[str, str]]:
    """Two alerts on one model's ttfs_ms: firing in eu-west, pending in us-east (only the first is marked)."""
    now, states = time.time(), [("firing", "eu-west"), ("pending", "us-east")]
    with connect(store) as conn:
        for state, region in states:
            conn.execute(
                "INSERT INTO alerts (key, kind, board, model_id, metric, dataset, region, method_version, state, "
                "opened_at, fired_at, last_evaluated_at, recent_value, baseline_value, p_value, n_recent, "
                "n_baseline, summary) VALUES (%s, 'latency', 'stt', %s, 'ttfs_ms', %s, %s, %s, %s, %s, %s, %s, 650, "
                "400, 1e-4, 20, 300, 'slower')",
                (f"latency|{region}", ALERTED[0], ALERTED[1], region, METHOD_VERSION, state, now - 3600,
                 now - 600 if state == "firing" else None, now))
    return states


# --- the page as data: every ranked table with its rows, and the charts' marks ----------------------


class _Tables(HTMLParser):
    """The ranked tables (table.ranked) of a page: each table's attributes and rows, each row's
    attributes and its cells by data-field (text, and the attributes of the cell); and every chart
    mark (g.bar, g.point, g.point.price: a price chart's) with the ranked table it follows."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[dict] = []
        self.marks: list[dict] = []
        self._cell: dict | None = None
        self._in_table = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "table" and "ranked" in classes:
            self.tables.append({**a, "rows": []})
            self._in_table = True
        elif tag == "tr" and self._in_table and "data-model" in a:
            self.tables[-1]["rows"].append({**a, "cells": {}})
        elif tag == "td" and self._in_table and self.tables[-1]["rows"] and "data-field" in a:
            self._cell = {**a, "text": ""}
            self.tables[-1]["rows"][-1]["cells"][a["data-field"]] = self._cell
        elif tag == "g" and ("bar" in classes or "point" in classes):
            kind = "bar" if "bar" in classes else "price" if "price" in classes else "point"
            self.marks.append({**a, "kind": kind, "table": len(self.tables) - 1})

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._cell = None
        elif tag == "table":
            self._in_table = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell["text"] += data


def parsed(server: str, path: str, **params: str) -> _Tables:
    response = httpx.get(server + path, params=params)
    assert response.status_code == 200, (path, params, response.text[:500])
    p = _Tables()
    p.feed(response.text)
    return p


def _value(cell: dict | None) -> float | None:
    return float(cell["data-value"]) if cell and "data-value" in cell else None


def _api(server: str, board: str) -> dict[tuple, dict]:
    """The API's rows of a board by (model, dataset, region, method, metric)."""
    rows = httpx.get(f"{server}/api/v1/leaderboard", params={"board": board}).json()["rows"]
    return {(r["model_id"], r["dataset"], r["region"], r["method_version"], r["metric"]): r for r in rows}


# --- layout in Chromium -----------------------------------------------------------------------------


_MEASURE = """
const cell = document.querySelector('table.ranked tbody tr[data-model] td[data-field="p50"]');
const model = cell && cell.closest('tr').querySelector('td[data-field="model"]');
const wer = cell && cell.closest('tr').querySelector('td[data-field="pooled_wer"], td[data-field="answer_accuracy"]');
const box = e => e && e.getBoundingClientRect();
const scrolled = t => {  // the All metrics table scrolled to its end inside its own box: its last column's place
  const scroller = t.closest('.table-scroll'); scroller.scrollLeft = scroller.scrollWidth;
  const out = {last: box(t.querySelector('thead th:last-child')).toJSON(), box: box(scroller).toJSON()};
  scroller.scrollLeft = 0; return out; };
return {scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
        innerHeight: window.innerHeight, p50: cell && cell.innerText.trim(), p50Box: box(cell) && box(cell).toJSON(),
        modelBox: box(model) && box(model).toJSON(), werBox: box(wer) && box(wer).toJSON(),
        allMetrics: Array.from(document.querySelectorAll('table.board')).map(scrolled),
        ranked: Array.from(document.querySelectorAll('table.ranked')).map(t => {
          const s = t.closest('.table-scroll'); return {dataset: t.dataset.dataset, wide: s.scrollWidth, box: s.clientWidth}; }),
        chartWidths: Array.from(document.querySelectorAll('svg.board-chart')).filter(s => s.getBoundingClientRect().width > 0)
          .map(s => s.getBoundingClientRect().width),
        labelPx: Array.from(document.querySelectorAll('svg.board-chart text.label')).filter(t => t.getBoundingClientRect().height > 0)
          .map(t => t.getBoundingClientRect().height),
        chartOffsets: Array.from(document.querySelectorAll('details.charts[open]')).map(d =>
          box(d.querySelector('figure')).left - box(d).left),
        summaries: Array.from(document.querySelectorAll('details > summary')).filter(s => box(s).height > 0)
          .map(s => box(s).toJSON())};
"""


@pytest.fixture(scope="module")
def measured(server: str, browser) -> dict[tuple[str, str], dict]:
    """Each page at each size, measured in Chromium after load; a screenshot of each first screen."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    out = {}
    for size, (width, height) in SIZES.items():
        browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": size == "phone"})
        for page, path in PAGES.items():
            browser.get(server + path)
            out[(page, size)] = browser.execute_script(_MEASURE)
            assert browser.save_screenshot(str(ARTIFACTS / f"layout-{page}-{width}.png"))
    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    return out


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("page", PAGES)
def test_no_page_scrolls_sideways(measured, page, size):
    m = measured[(page, size)]
    assert m["innerWidth"] == SIZES[size][0]
    assert m["scrollWidth"] <= m["innerWidth"], f"{page} at {size}: the page is {m['scrollWidth']} px wide"


@pytest.mark.parametrize("page", PAGES)
def test_the_headline_numbers_are_in_a_phones_first_screen(measured, page):
    m = measured[(page, "phone")]
    assert m["p50"] and m["p50"][0].isdigit(), m  # the first line's headline p50, a number
    for box in (m["p50Box"], m["modelBox"], m["werBox"]):  # a model, its headline latency and its accuracy
        assert 0 <= box["top"] and box["bottom"] <= m["innerHeight"], (page, box)
        assert 0 <= box["left"] and box["right"] <= m["innerWidth"], (page, box)


@pytest.mark.parametrize("size", SIZES)
def test_the_all_metrics_tables_last_column_is_reachable_in_its_own_box(measured, size):
    """The board's All metrics table is wider than a laptop's window: it scrolls inside its own box
    (never the page), and scrolled to its end its last column shows whole inside that box."""
    for page in ("stt", "tts"):
        m = measured[(page, size)]
        assert m["allMetrics"], page
        for t in m["allMetrics"]:
            assert 0 <= t["box"]["left"] and t["box"]["right"] <= m["innerWidth"], (page, size, t)
            assert t["box"]["left"] - 1 <= t["last"]["left"] and t["last"]["right"] <= t["box"]["right"] + 1, (page, size, t)


def test_the_stylesheets_parse_whole():
    """A stray or missing brace drops rules silently (a missing one once put the comparison pages'
    rules inside the phone's @media block): every block opens and closes, outside comments."""
    for name in ("style.css", "pages.css"):
        text = re.sub(r"/\*.*?\*/", "", (REPO / "voxwatch" / "web" / "static" / name).read_text(), flags=re.S)
        depth = 0
        for n, line in enumerate(text.splitlines(), 1):
            depth += line.count("{") - line.count("}")
            assert depth >= 0, f"{name}: a '}}' closes nothing on line {n}"
        assert depth == 0, f"{name}: {depth} block(s) never closed"


def test_a_laptop_shows_every_ranked_tables_every_column(measured):
    """At 1366 px a ranked table (price and method included) is whole in its box: nothing to scroll to."""
    for page in PAGES:
        m = measured[(page, "laptop")]
        for t in m["ranked"]:
            assert t["wide"] <= t["box"] + 1, (page, t)
    assert any(measured[(page, "laptop")]["ranked"] for page in PAGES)


def test_charts_fit_their_column_and_keep_legible_text(measured):
    for size, (width, _) in SIZES.items():
        m = measured[("stt", size)]
        assert m["chartWidths"] and max(m["chartWidths"]) <= width
        assert min(m["labelPx"]) >= 9, f"chart text {min(m['labelPx']):.1f} px tall at {size}"  # was ~5 px


def test_charts_start_at_their_blocks_left_edge_and_no_summary_overlaps_another(measured):
    """The charts' figures start at the left of their block, not in a right-hand column beside an empty
    half (pages.css' .charts grid once matched details.charts); each fold's summary line (the paired
    comparisons, the charts) stands clear of the next one."""
    for size in SIZES:
        m = measured[("stt", size)]
        assert m["chartOffsets"] and max(abs(x) for x in m["chartOffsets"]) <= 2, (size, m["chartOffsets"])
        tops = sorted(m["summaries"], key=lambda b: b["top"])
        assert len(tops) >= 2, m["summaries"]
        for upper, lower in zip(tops, tops[1:]):
            assert upper["bottom"] <= lower["top"] + 0.5, (size, upper, lower)


def test_screenshots_are_saved(measured):
    for page in PAGES:
        for width, _ in SIZES.values():
            assert (ARTIFACTS / f"layout-{page}-{width}.png").stat().st_size > 5_000


# --- ranked tables: rank, protocol, sorting, filters ------------------------------------------------


def test_streaming_and_batch_never_share_a_table_and_ranks_are_the_apis(server):
    for board in ("stt", "tts", "s2s"):
        api = _api(server, board)
        tables = parsed(server, f"/board/{board}").tables
        protocols = set()
        for t in tables:
            protocols.add(t["data-protocol"])
            assert t["rows"] and {r["data-metric"] for r in t["rows"]} == {ranked_metric(t["data-protocol"])}
            for r in t["rows"]:
                row = api[(r["data-model"], t["data-dataset"], r["data-region"], r["data-method"], r["data-metric"])]
                assert r["cells"]["rank"]["text"].strip() == (str(row["rank"]) if row["rank"] else "-")
                if row["p50"] is not None:
                    assert rounded(_value(r["cells"]["p50"]), UNITS[row["metric"]]) == row["p50"]  # published
        if board == "stt":
            assert protocols == {"stt-stream", "stt-batch"}
    overview = parsed(server, "/").tables
    assert {(t["data-board"], t["data-protocol"]) for t in overview} >= {("stt", "stt-stream"), ("stt", "stt-batch")}
    assert all(len({r["data-metric"] for r in t["rows"]}) == 1 for t in overview)


def test_connect_and_p99_are_shown_with_the_apis_numbers(server):
    api = _api(server, "stt")
    shown = 0
    for t in parsed(server, "/board/stt").tables:
        for r in t["rows"]:
            key = (r["data-model"], t["data-dataset"], r["data-region"], r["data-method"])
            connect = api[key + ("connect_ms",)]
            assert rounded(_value(r["cells"]["connect"]), "ms") == connect["p50"]
            shown += connect["p50"] is not None
            assert "p99" in r["cells"] or "na" in r["cells"]
    assert shown > 0
    assert "p99" in httpx.get(f"{server}/board/stt").text.split('<table class="board"')[1]  # the full table too


def _column(table: dict, field: str) -> list[float | None]:
    return [_value(r["cells"].get(field)) for r in table["rows"]]


@pytest.mark.parametrize("field,sort", [("p50", "p50"), ("pooled_wer", "wer"), ("connect", "connect")])
def test_sorting_by_a_column_orders_every_table(server, field, sort):
    for order in ("asc", "desc"):
        tables = parsed(server, "/board/stt", sort=sort, order=order).tables
        assert tables
        for t in tables:
            values = _column(t, field)
            present = [v for v in values if v is not None]
            assert present == sorted(present, reverse=order == "desc")
            assert values == present + [None] * (len(values) - len(present))  # no value: last, either way
    again = parsed(server, "/board/stt", sort=sort, order="desc").tables
    assert [[r["data-key"] for r in t["rows"]] for t in again] == \
        [[r["data-key"] for r in t["rows"]] for t in parsed(server, "/board/stt", sort=sort, order="desc").tables]


def test_sorting_by_name_and_back_to_rank(server):
    by_model = parsed(server, "/", sort="model", order="desc").tables
    for t in by_model:
        names = [r["data-model"] for r in t["rows"]]
        assert names == sorted(names, reverse=True)
    for t in parsed(server, "/").tables:  # the default: ranked lines in the order of their medians, unranked last
        ranks = [r["cells"]["rank"]["text"].strip() for r in t["rows"]]
        k = len([x for x in ranks if x != "-"])
        assert all(x != "-" for x in ranks[:k]) and all(x == "-" for x in ranks[k:])
        assert all(re.fullmatch(r"\d+(-\d+)?", x) for x in ranks[:k])
        medians = [float(r["cells"]["p50"]["data-value"]) for r in t["rows"][:k]]
        assert medians == sorted(medians)
    page = httpx.get(f"{server}/board/stt", params={"sort": "p50", "order": "asc"}).text
    assert 'aria-sort="ascending"' in page and "sort=p50&amp;order=desc" in page  # the header flips the order
    assert httpx.get(f"{server}/board/stt", params={"sort": "bogus"}).status_code == 400
    assert httpx.get(f"{server}/board/stt", params={"order": "up"}).status_code == 400


class _FullRanks(HTMLParser):
    """The rank cell of each series in a board's full tables (table.board, "All metrics"), by
    (model, dataset, region, method)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ranks: dict[tuple, str] = {}
        self._dataset: str | None = None
        self._series: tuple | None = None
        self._key: tuple | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "table" and a.get("class") == "board":
            self._dataset = a["data-dataset"]
        elif tag == "tbody" and a.get("class") == "series" and self._dataset:
            self._series = (a["data-model"], self._dataset, a["data-region"], a["data-method"])
        elif tag == "td" and a.get("data-field") == "rank" and self._series:
            self._key = self._series
            self.ranks[self._key] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._key = None

    def handle_data(self, data: str) -> None:
        if self._key is not None:
            self.ranks[self._key] += data.strip()


def full_ranks(server: str, path: str, **params: str) -> dict[tuple, str]:
    p = _FullRanks()
    p.feed(httpx.get(server + path, params=params).text)
    return p.ranks


def _series(tables: list[dict]) -> set[tuple]:
    return {(r["data-model"], t["data-dataset"], r["data-region"], r["data-method"]) for t in tables for r in t["rows"]}


def test_filters_keep_only_the_matching_series_and_never_rerank(server):
    expected = {(k[1], k[2], k[3], k[4]) for k in expected_board("30d") if k[0] == "stt"}
    everything = parsed(server, "/board/stt").tables
    assert _series(everything) == expected
    ranks = {(r["data-model"], t["data-dataset"], r["data-region"], r["data-method"]): r["cells"]["rank"]["text"]
             for t in everything for r in t["rows"]}
    cases = {"region": ("eu-west", lambda s: s[2] == "eu-west"),
             "vendor": ("openai", lambda s: s[0].startswith("openai/")),
             "q": ("NOVA", lambda s: s[0].split("/", 1)[1].startswith("nova")),
             "dataset": ("stt-starter-noise", lambda s: s[1] == "stt-starter-noise"),
             "condition": ("clean", lambda s: s[1] == "stt-starter-clean")}
    for name, (value, keep) in cases.items():
        tables = parsed(server, "/board/stt", **{name: value}).tables
        want = {s for s in expected if keep(s)}
        assert want and _series(tables) == want, name
        for t in tables:
            for r in t["rows"]:
                key = (r["data-model"], t["data-dataset"], r["data-region"], r["data-method"])
                assert r["cells"]["rank"]["text"] == ranks[key]  # the published rank, not one among the few
        full = full_ranks(server, "/board/stt", **{name: value})
        assert set(full) == want, name
        for key, rank in full.items():  # the full tables too: the published rank
            assert rank == (ranks[key].strip() or "-"), (name, key)
    both = parsed(server, "/", region="us-east", vendor="deepgram").tables
    assert _series(both) == {s for s in expected if s[2] == "us-east" and s[0].startswith("deepgram/")}
    day = parsed(server, "/board/stt", window="24h").tables
    assert _series(day) == {(k[1], k[2], k[3], k[4]) for k in expected_board("24h") if k[0] == "stt"}
    none = httpx.get(f"{server}/board/stt", params={"q": "no-such-model"}).text
    assert "that match the filters" in none and '<table class="ranked' not in none
    form = httpx.get(f"{server}/board/stt").text
    assert '<form class="filter-form" method="get">' in form
    for name in ("window", "dataset", "condition", "region", "vendor", "q"):
        assert f'name="{name}"' in form


def test_a_filter_never_reranks_the_full_tables_either(tmp_path):
    """A filter that hides a clearly faster series leaves the slower one its published rank 2 in the
    ranked table and in the full ("All metrics") table alike, never 1 among the few left."""
    template = next(r for r in ROWS if r.status == "ok" and r.protocol == "stt-stream" and r.method_version == METHOD_VERSION)
    rows = [replace(template, model_id=model_id, vendor=model_id.split("/")[0], region="us-east",
                    dataset="stt-starter-clean", run_id=f"tick-{i // 5}", clip_id=f"clip{i}",  # the same clips
                    started_at=NOW - (0.5 + i * 0.5) * DAY, ttfs_ms=base + 7.0 * (i % 5), first_partial_ms=base / 2)
            for model_id, base in (("deepgram/nova-3", 200.0), ("openai/gpt-4o-transcribe:realtime", 900.0))
            for i in range(30)]
    slower = ("openai/gpt-4o-transcribe:realtime", "stt-starter-clean", "us-east", METHOD_VERSION)
    with seeded_store(rows) as url, serving(url, tmp_path / "serve.log") as base:
        published = {(r["data-model"], t["data-dataset"], r["data-region"], r["data-method"]): r["cells"]["rank"]["text"]
                     for t in parsed(base, "/board/stt").tables for r in t["rows"]}
        assert published[slower] == "2"
        ranked = parsed(base, "/board/stt", vendor="openai").tables
        assert [(r["data-model"], r["cells"]["rank"]["text"]) for t in ranked for r in t["rows"]] == [(slower[0], "2")]
        assert full_ranks(base, "/board/stt", vendor="openai") == {slower: "2"}


# --- charts, freshness, provenance, alerts ----------------------------------------------------------


def test_column_heads_and_chart_axes_say_what_a_metric_is_and_which_way_is_better(server):
    """Heads in words ("TTFS p50 (ms)", not the column name "ttfs_ms p50"), each table saying which
    way is better, and the boards' scatter axes starting at 0 (a lone dot on an axis spanning 72-74 %
    reads as a chasm)."""
    for board, metric in (("stt", "ttfs_ms"), ("stt", "latency_ms"), ("tts", "ttfa_ms"), ("s2s", "v2v_ms")):
        html = unescape(httpx.get(f"{server}/board/{board}").text)
        heads = [re.sub(r"<[^>]+>|&#9[0-9]+;", "", h).strip()
                 for t in re.findall(rf'<table class="ranked[^"]*"[^>]*data-metric="{metric}">(.*?)</thead>', html, re.S)
                 for h in re.findall(r"<th[^>]*>(.*?)</th>", t, re.S)]
        assert heads, (board, metric)
        assert metric_head(metric) in heads and f"{metric} p50" not in heads, heads
        assert f"{LABELS[metric]}</abbr>: {DESCRIPTIONS[metric]}; lower is better" in html, (board, metric)
        assert f"ranked by {metric_head(metric)}, lower is better" in html
    svg = re.search(r'<svg[^>]*class="board-chart scatter".*?</svg>', httpx.get(f"{server}/board/stt").text, re.S).group()
    for axis in ("x-tick", "y-tick"):
        first = re.search(rf'class="{axis}"[^>]*>([^<]+)<', svg).group(1)
        assert float(first.strip("$%").replace(",", "")) == 0, (axis, first)
    assert "lower is better" in svg



def test_the_charts_draw_the_tables_numbers(server):
    api = _api(server, "stt")
    points = bars = prices = 0
    for board in ("stt", "tts", "s2s"):
        page = parsed(server, f"/board/{board}")
        for mark in page.marks:
            table = page.tables[mark["table"]]
            (row,) = [r for r in table["rows"] if r["data-key"] == mark["data-key"]]
            p50 = row["cells"]["p50"]
            if mark["kind"] == "point":
                points += 1
                assert float(mark["data-x"]) == _value(p50)
                assert float(mark["data-y"]) == _value(row["cells"]["pooled_wer"])
            elif mark["kind"] == "price":  # the price chart: p50 against the model's price (the price cell's)
                prices += 1
                assert float(mark["data-x"]) == _value(p50)
                assert float(mark["data-y"]) == _value(row["cells"]["price"])
            else:
                bars += 1
                assert float(mark["data-value"]) == _value(p50)
                ci = row["cells"]["p50_ci"]
                assert (float(mark["data-low"]), float(mark["data-high"])) == (float(ci["data-low"]), float(ci["data-high"]))
            if board == "stt":
                source = api[(row["data-model"], table["data-dataset"], row["data-region"], row["data-method"],
                              row["data-metric"])]
                unit = UNITS[source["metric"]]  # the page's full precision, the API's published one
                assert rounded(_value(p50), unit) == source["p50"]
                if mark["kind"] == "point":
                    assert rounded(float(mark["data-y"]), "fraction") == source["pooled_wer"]
                elif mark["kind"] == "price":
                    assert rounded(float(mark["data-y"]), "fraction") == source["price"]
                else:
                    assert rounded([float(mark["data-low"]), float(mark["data-high"])], unit) == source["p50_ci"]
        drawn = {(m["table"], m["data-key"]) for m in page.marks if m["kind"] == "bar"}
        with_p50 = {(i, r["data-key"]) for i, t in enumerate(page.tables) for r in t["rows"] if "p50" in r["cells"]}
        assert drawn == with_p50  # a bar for every line with a p50, and no other
    assert points >= 4 and bars >= 6 and prices >= 1  # openai/whisper-1 has a list price in the registry
    svg = httpx.get(f"{server}/board/stt").text
    assert 'class="board-chart scatter"' in svg and 'viewBox="0 0 ' in svg and "<script" not in svg


def test_every_page_states_its_newest_measurement(server, store, store_url):
    real = [r for r in ROWS if not r.emulator]
    for page, path in PAGES.items():
        html = httpx.get(server + path).text
        newest = max(r.started_at for r in real if page == "overview" or r.board == page)
        assert float(html.split('data-newest="')[1].split('"')[0]) == pytest.approx(newest, abs=1e-6), page
        assert "Newest measurement" in html and "before this page was made" in html
    sqlite = store_url
    s = open_store(sqlite)
    s.add(ROWS)
    s.close()
    registry = Registry.default()
    for board in (None, "stt", "tts", "s2s"):
        want = max(r.started_at for r in real if board is None or r.board == board)
        assert open_source(sqlite, registry).newest(board) == pytest.approx(want, abs=1e-6)
        assert open_source(store, registry).newest(board) == pytest.approx(want, abs=1e-6)


def test_every_page_states_its_datas_provenance(server):
    for page, path in PAGES.items():
        html = httpx.get(server + path).text
        datasets = {r.dataset for r in ROWS if not r.emulator and (page == "overview" or r.board == page)}
        assert 'id="about-data"' in html
        assert ("synthesized speech (eSpeak NG)" in html) == (datasets != {"tts-prompts"}), page
        for d in datasets:
            origin = "text" if d == "tts-prompts" else "synthesized"
            assert f'<li data-dataset="{d}" data-origin="{origin}">' in html, (page, d)


def test_a_firing_alert_is_marked_next_to_its_model(server, alerts):
    marked = defaultdict(set)
    for path in ("/", "/board/stt"):
        for t in parsed(server, path).tables:
            for r in t["rows"]:
                if r.get("data-alert") == "firing":
                    marked[path].add((r["data-model"], t["data-dataset"], r["data-region"]))
                    assert "alert firing: ttfs_ms" in r["cells"]["model"]["text"]
    assert marked["/"] == marked["/board/stt"] == {ALERTED}  # the pending one is not marked
    full = httpx.get(f"{server}/board/stt").text.split('<table class="board"')[1]
    assert full.count('data-field="alert"') == 1



def test_provenance_reads_the_recipe_of_each_kind_of_dataset(tmp_path):
    from voxwatch.datasets.catalog import Catalog, bundled_root
    from voxwatch.datasets.manifest import DatasetInfo, write_info
    from voxwatch.datasets.provenance import describe, lookup

    write_info(tmp_path / "calls", DatasetInfo(name="calls", kind="audio", family="calls", condition="imported",
                                               description="imported from /data/calls",
                                               recipe="voxwatch datasets import"))
    catalog = Catalog([bundled_root(), tmp_path])
    assert lookup(catalog, "calls").origin == "imported"
    assert lookup(catalog, "stt-starter-clean").origin == "synthesized"
    noise = lookup(catalog, "stt-starter-noise")
    assert (noise.origin, noise.condition) == ("synthesized", "noise") and "through the noise transform" in noise.text
    assert lookup(catalog, "tts-prompts").origin == "text"
    assert lookup(catalog, "nowhere").origin == "unknown"
    odd = describe(DatasetInfo(name="x", kind="audio", family="x", condition="clean", description="made by hand",
                               recipe="a lab's own"))
    assert odd.origin == "unknown" and "a lab's own" in odd.text


def test_a_fetched_public_set_reads_as_recorded_speech_with_its_license():
    from voxwatch.datasets.fetch import RECIPE
    from voxwatch.datasets.manifest import DatasetInfo
    from voxwatch.datasets.provenance import describe

    extra = {"speech": "recorded", "license": "CC-BY-4.0", "homepage": "https://www.openslr.org/12"}
    clean = describe(DatasetInfo(name="libri", kind="audio", family="libri", condition="clean",
                                 description="LibriSpeech test-clean, 40 utterances", recipe=RECIPE, extra=extra))
    assert clean.origin == "recorded" and "recorded human speech" in clean.text and "CC-BY-4.0" in clean.text
    noisy = describe(DatasetInfo(name="libri-noise", kind="audio", family="libri", condition="noise",
                                 description="LibriSpeech test-clean, 40 utterances", recipe=RECIPE,
                                 transform={"name": "noise"}, extra=extra))
    assert noisy.origin == "recorded" and "through the noise transform" in noisy.text


OTHER_PAGES = {"alerts": "/alerts", "preference": "/board/preference", "method": "/method", "api": "/api",
               "bakeoff": "/bakeoff"}
"""The pages with no board table of their own (test_web_pages.py measures the model page): each must
still fit a phone, and gets its screenshot beside the boards'."""


def test_the_other_pages_fit_both_widths_too(server: str, browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        for size, (width, height) in SIZES.items():
            browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
                "width": width, "height": height, "deviceScaleFactor": 1, "mobile": size == "phone"})
            for page, path in OTHER_PAGES.items():
                browser.get(server + path)
                m = browser.execute_script("return {scrollWidth: document.documentElement.scrollWidth, "
                                           "innerWidth: window.innerWidth, h1: document.querySelector('h1') "
                                           "&& document.querySelector('h1').textContent}")
                assert m["h1"], (page, size)  # the page rendered, not an error
                assert m["scrollWidth"] <= m["innerWidth"], f"{page} at {size}: {m['scrollWidth']} px wide"
                shot = ARTIFACTS / f"layout-{page}-{width}.png"
                assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 5_000
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
