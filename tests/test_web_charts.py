"""Charts that stay readable (issue #40 part 4), in headless Chromium at 390 and 1366 px.

tests/support/chart_seed.py's board is the one a user found unreadable: five streaming STT models
within 257-301 ms and one at 1,400 ms, some priced. Served by `voxwatch serve` (its registry file
names the models, their prices, a baseline, a retiring one), the comparison page and the STT board
are measured in the browser after load, every chart opened: no two texts of a chart overlap and
none runs out of its drawing; each legend lies within the window; a model carries one number on
every chart of a page (the comparison's frontier and price charts, the board's bars, WER and price
charts), the comparison's its line in the table; the outlier is drawn past the axis' break with its
value, and the chart says so. Screenshots go to the system's temporary folder
(voxwatch-charts/<page>-<width>.png), not into the repository.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from support import chart_seed
from support.browser import browser  # noqa: F401 (a fixture)
from support.web_seed import serving, sqlite_store

pytestmark = pytest.mark.e2e

SIZES = {390: 844, 1366: 900}
PAGES = {"compare": "/compare/stt-stream", "board": "/board/stt"}
SHOTS = Path(tempfile.gettempdir()) / "voxwatch-charts"

_MEASURE = """
document.querySelectorAll('details').forEach(d => d.open = true);
const box = e => e.getBoundingClientRect().toJSON();
const charts = Array.from(document.querySelectorAll('svg.board-chart')).map(svg => ({
  kind: svg.getAttribute('class'), box: box(svg),
  texts: Array.from(svg.querySelectorAll('text')).map(t => ({text: t.textContent, cls: t.getAttribute('class') || '',
                                                          box: box(t)})),
  marks: Array.from(svg.querySelectorAll('g[data-key]')).map(g => ({key: g.dataset.key, number: g.dataset.number,
    cls: g.getAttribute('class'), x: g.dataset.x || g.dataset.value,
    label: (g.querySelector('text.number') || g.querySelector('text.label') || {}).textContent,
    broken: !!g.querySelector('g.axis-break')})),
  legend: (() => { const ul = svg.parentElement.querySelector('ul.chart-legend');
    return ul ? {box: box(ul), items: Array.from(ul.querySelectorAll('li')).map(li => ({key: li.dataset.key,
      number: li.dataset.number, text: li.textContent, box: box(li), cut: li.scrollWidth > li.clientWidth}))} : null; })(),
  note: !!svg.parentElement.querySelector('p.chart-note')}));
return {innerWidth: window.innerWidth, scrollWidth: document.documentElement.scrollWidth, charts: charts,
        table: Array.from(document.querySelectorAll('table.compare tbody tr')).map(r => r.dataset.key)};
"""


@pytest.fixture(scope="module")
def measured(tmp_path_factory, browser) -> Iterator[dict[tuple[str, int], dict]]:
    """Each page at each width, measured after load with every chart open, and its screenshot."""
    folder = tmp_path_factory.mktemp("charts")
    SHOTS.mkdir(parents=True, exist_ok=True)
    url = sqlite_store(folder, chart_seed.rows())
    env = {"VOXWATCH_REGISTRY_FILES": str(chart_seed.write_registry(folder))}
    out = {}
    with serving(url, folder / "serve.log", chart_seed.TODAY, env=env) as base:
        assert httpx.get(f"{base}/compare/stt-stream").status_code == 200
        try:
            for width, height in SIZES.items():
                browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
                    "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500})
                for page, path in PAGES.items():
                    browser.get(base + path)
                    out[(page, width)] = browser.execute_script(_MEASURE)
                    tall = browser.execute_script("return document.documentElement.scrollHeight")
                    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
                        "width": width, "height": tall, "deviceScaleFactor": 1, "mobile": width < 500})
                    assert browser.save_screenshot(str(SHOTS / f"{page}-{width}.png"))
                    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
                        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500})
        finally:
            browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    yield out


def _overlap(a: dict, b: dict) -> bool:
    return a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"] and b["top"] < a["bottom"]


CASES = [(page, width) for page in PAGES for width in SIZES]


@pytest.mark.parametrize("page,width", CASES)
def test_no_two_texts_of_a_chart_overlap_and_none_leaves_it(measured, page, width):
    m = measured[(page, width)]
    kinds = sorted(c["kind"] for c in m["charts"])
    assert len(kinds) == (2 if page == "compare" else 3), kinds  # frontier and price; bars, WER and price
    for chart in m["charts"]:
        texts = [t for t in chart["texts"] if t["box"]["width"] > 0]
        assert len(texts) >= len(chart["marks"]) + 4, chart["kind"]
        for i, a in enumerate(texts):
            for b in texts[i + 1:]:
                assert not _overlap(a["box"], b["box"]), (page, width, chart["kind"], a["text"], b["text"])
            svg = chart["box"]
            assert svg["left"] - 0.5 <= a["box"]["left"] and a["box"]["right"] <= svg["right"] + 0.5, \
                (page, width, chart["kind"], a["text"], a["box"], svg)
    assert m["scrollWidth"] <= m["innerWidth"] == width


@pytest.mark.parametrize("page,width", CASES)
def test_every_legend_lies_within_the_window_and_wraps_rather_than_cuts(measured, page, width):
    legends = [c["legend"] for c in measured[(page, width)]["charts"] if c["legend"]]
    assert len(legends) == (2 if page == "compare" else 2)  # the bars name their models on the drawing
    for legend in legends:
        assert 0 <= legend["box"]["left"] and legend["box"]["right"] <= width, legend["box"]
        for item in legend["items"]:
            assert not item["cut"] and 0 <= item["box"]["left"] and item["box"]["right"] <= width, item
    longest = next(i for legend in legends for i in legend["items"] if chart_seed.PRELIMINARY in i["text"])
    assert longest["text"].endswith("(preliminary)")  # the whole line, marks included, is there


@pytest.mark.parametrize("page", PAGES)
def test_a_model_has_one_number_on_every_chart_of_the_page(measured, page):
    m = measured[(page, 390)]
    numbers: dict[str, set[str]] = {}
    for chart in m["charts"]:
        for mark in chart["marks"]:
            numbers.setdefault(mark["key"], set()).add(mark["number"])
        for item in (chart["legend"] or {"items": []})["items"]:
            numbers.setdefault(item["key"], set()).add(item["number"])
    assert len(numbers) == len(chart_seed.MODELS) and all(len(n) == 1 for n in numbers.values()), numbers
    assert len({n for ns in numbers.values() for n in ns}) == len(numbers)  # one model, one number, and back
    priced = [mark for c in m["charts"] for mark in c["marks"] if "price" in mark["cls"].split()]
    assert {mark["key"].split("|")[0] for mark in priced} == set(chart_seed.PRICED)
    assert sorted(int(mark["number"]) for mark in priced) != list(range(1, len(priced) + 1))  # not the priced alone
    if page == "compare":  # the number is the line in the table
        assert {k: int(next(iter(n))) for k, n in numbers.items()} == {k: i for i, k in enumerate(m["table"], 1)}


@pytest.mark.parametrize("page,width", CASES)
def test_the_outlier_is_drawn_past_the_break_with_its_value_and_said(measured, page, width):
    for chart in measured[(page, width)]["charts"]:
        mine = [mark for mark in chart["marks"] if mark["key"].startswith(chart_seed.OUTLIER + "|")]
        assert len(mine) == 1, chart["kind"]
        mark = mine[0]
        value = f"{float(mark['x']):,.0f}"
        if "bars" in chart["kind"]:
            assert mark["broken"] and any(t["text"] == value for t in chart["texts"] if t["cls"] == "value")
        else:
            assert "off-scale" in mark["cls"].split() and mark["label"] == f"{mark['number']} ({value} ms →)"
            ticks = [float(t["text"].replace(",", "")) for t in chart["texts"] if t["cls"] == "x-tick"]
            assert max(ticks) < 500  # fitted to the five, not stretched to 1,500
        assert chart["note"], chart["kind"]
