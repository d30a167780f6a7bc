"""The method page (/method), the API reference (/api) and the model pages, served by `voxwatch serve`
from a Postgres store seeded with test_web's rows; their layout read in headless Chromium at a phone's
width (390 px) and a laptop's (1366 px), screenshots in var/test-artifacts/.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import replace
from datetime import datetime, timezone
from html import unescape
from typing import Iterator

import httpx
import pytest

from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.published import rounded
from voxwatch.metrics.series import RATES, attempt_figures
from voxwatch.metrics.specs import for_protocol
from voxwatch.web.markdown_doc import render
from voxwatch.web.openapi import document

from support.processes import REPO
from support.browser import browser  # noqa: F401 (a fixture)
from support.web_seed import CURRENT, DAY, NOW, OLD, ROWS, _close, _close_interval, seeded_store, serving

pytestmark = pytest.mark.e2e

ARTIFACTS = REPO / "var" / "test-artifacts"
NOVA = "deepgram/nova-3"
_OLD_OK = next(r for r in ROWS if (r.model_id, r.dataset, r.region, r.method_version, r.status) ==
               (NOVA, "stt-starter-clean", "us-east", OLD, "ok"))
SEED = ROWS + [replace(_OLD_OK, run_id=f"run-old-{day}", clip_id=f"old{day}-{i}", started_at=NOW - (day + i * 0.01) * DAY,
                       ttfs_ms=500.0 + 10 * i, first_partial_ms=260.0 + 5 * i, connect_ms=90.0 + i)
               for day in (17.5, 18.5) for i in range(6)]
"""test_web's rows, and days on which nova-3's superseded method version has enough ok rows for a daily p50."""

METHOD_MD = REPO / "docs" / "METHOD.md"


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[str]:
    with seeded_store(SEED) as url:
        with serving(url, tmp_path_factory.mktemp("pages") / "serve.log") as base:
            yield base


def _text(html: str) -> str:
    return unescape(re.sub(r"<[^>]+>", "", html))


def test_the_method_page_is_method_md_with_contents_and_version(server):
    page = httpx.get(f"{server}/method")
    assert page.status_code == 200
    source = METHOD_MD.read_text(encoding="utf-8")
    headings = [line.lstrip("#").strip().replace("`", "") for line in source.splitlines() if re.match(r"##+ ", line)]
    shown = {_text(h): anchor for anchor, h in re.findall(r'<h[23] id="([^"]+)">(.*?)</h[23]>', page.text)}
    assert list(shown) == headings and len(headings) >= 10
    toc = re.search(r'<nav class="toc".*?</nav>', page.text, re.S).group()
    assert [unescape(t) for t in re.findall(r'<a href="#[^"]+">([^<]+)</a>', toc)] == headings
    assert all(f'href="#{anchor}"' in toc for anchor in shown.values())
    assert f'data-field="method-version">{METHOD_VERSION}</strong>' in page.text
    assert f"method version {METHOD_VERSION}" in _text(page.text)  # the document's own title says it too
    assert "<script" not in page.text


def test_markdown_renders_tables_and_never_raw_html():
    doc = render("# Title\n\n## Figures\n\n| metric | p50 |\n|:--|--:|\n| ttfs_ms | 420 |\n\n<script>x()</script>\n")
    assert doc.title == "Title" and [h.anchor for h in doc.toc] == ["figures"]
    assert '<th class="align-left">metric</th>' in doc.html and '<td class="align-right">420</td>' in doc.html
    assert "<script>" not in doc.html and "&lt;script&gt;" in doc.html and "style=" not in doc.html


def test_every_page_links_the_method_and_the_api(server):
    for path in ("/", "/board/stt", "/model/deepgram/nova-3", "/alerts", "/method", "/api"):
        page = httpx.get(server + path).text
        assert '<a href="/method">' in page and '<a href="/api">API</a>' in page, path
        assert 'href="/api/v1/openapi.json">API<' not in page, path
    assert httpx.get(f"{server}/api/v1/openapi.json").json()["openapi"] == "3.1.0"  # still served


def test_the_api_page_lists_every_path_parameter_and_field(server):
    page = httpx.get(f"{server}/api").text
    spec = document()
    sections = dict(re.findall(r'<section class="endpoint" id="[^"]+" data-path="([^"]+)">(.*?)</section>', page, re.S))
    assert list(sections) == list(spec["paths"])
    for path, item in spec["paths"].items():
        section = sections[path]
        for p in item["get"]["parameters"]:
            assert f'data-parameter="{p["name"]}"' in section, (path, p["name"])
        for status in item["get"]["responses"]:
            assert f'data-status="{status}"' in section, (path, status)
        token = '-H &#34;Authorization: Bearer \\$VOXWATCH_OPERATOR_TOKEN&#34; ' if "security" in spec["paths"][path]["get"] else ""
        assert re.search(r'<pre class="curl"><code>curl -s ' + token + r'&#34;\$SITE/api/v1/', section), path
    schemas = dict(re.findall(r'<section class="schema" id="schema-[^"]+" data-schema="([^"]+)">(.*?)</section>', page, re.S))
    assert list(schemas) == list(spec["components"]["schemas"])
    for name, schema in spec["components"]["schemas"].items():
        for field in schema.get("properties", {}):
            assert f'data-field-name="{field}"' in schemas[name], (name, field)
    history = sections["/api/v1/models/{model_id}/history"]
    assert "curl -s &#34;$SITE/api/v1/models/deepgram/nova-3/history" in history


_SUMMARY = r'<tr data-dataset="([^"]+)" data-region="([^"]+)" data-method="([^"]+)" data-instrument="([^"]*)" data-metric="([^"]+)"[^>]*>(.*?)</tr>'


def _summary(html: str) -> dict[tuple, dict[str, str]]:
    return {tuple(key): {f: unescape(v).strip() for f, v in re.findall(r'data-field="([a-z0-9_]+)"[^>]*>([^<]*)<', body)}
            for *key, body in re.findall(_SUMMARY, html, re.S)}


@pytest.mark.parametrize("model_id", [NOVA, "openai/whisper-1", "cartesia/sonic-3.5", "openai/gpt-realtime-2025-08-28"])
def test_the_model_summary_is_the_boards_and_apis_figures(server, model_id):
    api = httpx.get(f"{server}/api/v1/leaderboard").json()["rows"]
    mine = [r for r in api if r["model_id"] == model_id]
    ranked = {r["metric"] for r in mine if r["ranked_by"] == r["metric"]}
    shown = _summary(httpx.get(f"{server}/model/{model_id}").text)
    series = {(r["dataset"], r["region"], r["method_version"], r["instrument"] or "") for r in mine}
    assert {k[:4] for k in shown} == series and len(shown) == len(series) > 0
    for (dataset, region, method, instrument, metric), cells in shown.items():
        assert metric in ranked  # each series' line is the metric it is ranked by
        row = next(r for r in mine if (r["dataset"], r["region"], r["method_version"], r["instrument"] or "",
                                       r["metric"]) == (dataset, region, method, instrument, metric))
        connect = next(r for r in mine if (r["dataset"], r["region"], r["method_version"], r["instrument"] or "",
                                           r["metric"]) == (dataset, region, method, instrument, "connect_ms"))
        assert int(cells["n"]) == row["n"]
        if row["na_reason"]:
            assert cells["na"] == "n/a: " + row["na_reason"]
        else:
            decimals = 3 if metric == "rtf" else 1
            for field in ("p50", "p95", "p99"):
                _close(cells[field], row[field], decimals=decimals)
            _close_interval(cells["p50_ci"], row["p50_ci"], decimals=decimals)
        _close(cells["connect_p50"], connect["p50"])
        _close(cells["error_rate"].rstrip("%"), row["error_rate"], 100) if row["error_rate"] is not None else None
        _close(cells["timeout_rate"].rstrip("%"), row["timeout_rate"], 100) if row["timeout_rate"] is not None else None
        if row["pooled_wer"] is None:
            assert cells["pooled_wer"] == "n/a"
        else:
            _close(cells["pooled_wer"].rstrip("%"), row["pooled_wer"], 100, decimals=2)
            _close_interval(cells["wer_ci"].replace("%", ""), row["wer_ci"], 100, decimals=2)
        assert cells["rank"] == (str(row["rank"]) if row["rank"] else "-")


def _figures(html: str) -> list[tuple[str, str, str]]:
    return re.findall(r'<figure class="history" data-kind="([a-z]+)" data-metric="([a-z0-9_]+)" data-dataset="([^"]+)">', html)


def test_charts_put_the_headline_metric_first_then_wer_and_rates(server):
    page = httpx.get(f"{server}/model/{NOVA}", params={"dataset": "stt-starter-clean"}).text
    assert _figures(page) == [("metric", "ttfs_ms", "stt-starter-clean"), ("metric", "first_partial_ms", "stt-starter-clean"),
                              ("metric", "ttfs_peer_ms", "stt-starter-clean"), ("metric", "connect_ms", "stt-starter-clean"),
                              ("wer", "pooled_wer", "stt-starter-clean"), ("rates", "error_rate", "stt-starter-clean")]
    assert [m.name for m in for_protocol("stt-stream", headline_only=True)] == ["ttfs_ms", "first_partial_ms", "ttfs_peer_ms",
                                                                                "connect_ms"]
    batch = [m for kind, m, d in _figures(httpx.get(f"{server}/model/openai/whisper-1").text) if kind == "metric"]
    assert batch and batch[0] == "latency_ms" and batch.index("latency_ms") < batch.index("rtf") < batch.index("connect_ms")
    history = httpx.get(f"{server}/api/v1/models/{NOVA}/history").json()["series"]
    assert [s["metric"] for s in history][0] == "ttfs_ms"  # the API's series in the same order


def _expected_figures(model_id: str) -> dict[tuple[str, str, str, str], dict]:
    """(dataset, region, method, day) -> attempts, error and timeout rate, pooled WER: plain sums over the rows."""
    days: dict[tuple, list] = defaultdict(list)
    for r in SEED:
        if r.model_id == model_id and not r.emulator:
            days[(r.dataset, r.region, r.method_version,
                  datetime.fromtimestamp(r.started_at, timezone.utc).date().isoformat())].append(r)
    out = {}
    for key, rows in days.items():
        scored = [r for r in rows if r.status == "ok" and r.ref_words is not None]
        words = sum(r.ref_words for r in scored)
        out[key] = {"attempts": len(rows),
                    "error_rate": sum(r.status in RATES["error_rate"] for r in rows) / len(rows) if len(rows) >= 5 else None,
                    "timeout_rate": sum(r.status == "timeout" for r in rows) / len(rows) if len(rows) >= 5 else None,
                    "pooled_wer": sum(r.substitutions + r.deletions + r.insertions for r in scored) / words
                    if len(scored) >= 5 and words else None, "wer_clips": len(scored)}
    return out


def test_daily_wer_and_error_rates_in_the_api_and_on_the_charts(server):
    expected = _expected_figures(NOVA)
    doc = httpx.get(f"{server}/api/v1/models/{NOVA}/history").json()
    got = {(s["dataset"], s["region"], s["method_version"], p["day"]): p for s in doc["figures"] for p in s["points"]}
    assert set(got) == set(expected)
    for key, want in expected.items():
        for field, value in want.items():
            published = value if value is None or isinstance(value, int) else round(value, 4)  # fractions to 4 places
            assert got[key][field] == published, (key, field)
    assert any(w["pooled_wer"] is not None for w in expected.values())
    assert any(w["error_rate"] for w in expected.values())
    page = httpx.get(f"{server}/model/{NOVA}", params={"dataset": "stt-starter-clean"}).text
    for kind, fields in (("wer", ("pooled_wer",)), ("rates", ("error_rate", "timeout_rate"))):
        svg = ET.fromstring(re.search(rf'data-kind="{kind}".*?(<svg .*?</svg>)', page, re.S).group(1))
        circles = len(list(svg.iterfind(".//{http://www.w3.org/2000/svg}circle")))
        drawn = sum(want[f] is not None for k, want in expected.items() if k[0] == "stt-starter-clean" for f in fields)
        assert circles == drawn > 0, kind


def test_a_method_change_is_marked_on_the_charts_and_in_the_legend(server):
    board_day = datetime.fromtimestamp(min(r.started_at for r in SEED if (r.model_id, r.dataset, r.region, r.method_version,
                                                                          r.emulator) == (NOVA, "stt-starter-clean", "us-east", CURRENT, False)),
                                       timezone.utc).date().isoformat()
    page = httpx.get(f"{server}/model/{NOVA}", params={"dataset": "stt-starter-clean"}).text
    assert len(re.findall(r'<figure class="history"', page)) == 6  # four headline metrics, WER, rates
    for kind, figure in re.findall(r'<figure class="history" data-kind="([a-z]+)"(.*?)</figure>', page, re.S):
        marks = re.findall(r'<g class="method-change" data-day="([^"]+)">.*?>method v(\d+)</text></g>', figure, re.S)
        assert marks == [(board_day, CURRENT)]
        assert f"us-east: method v{OLD} -&gt; v{CURRENT} from {board_day}" in figure
        legend = re.findall(r'<li( class="superseded")?><svg[^>]*><line ([^/]*)/></svg>([^<]+)</li>', figure)
        us = {label: (superseded, stroke) for superseded, stroke, label in legend if label.startswith("us-east")}
        old = [v for label, v in us.items() if f"method v{OLD} (superseded)" in label]
        new = [v for label, v in us.items() if f"method v{CURRENT}" in label and "superseded" not in label]
        assert new and (old or kind != "metric"), kind  # the old series has points on every metric chart (a day's
        assert all(s for s, _ in old) and not any(s for s, _ in new)  # WER needs 5 scored clips: it may have none)
        colour = lambda stroke: re.search(r'stroke="(#[0-9a-f]+)"', stroke).group(1)
        assert {colour(st) for _, st in old + new} == {colour(new[0][1])}  # one region, one colour
        assert all("stroke-opacity" in st for _, st in old) and not any("stroke-opacity" in st for _, st in new)
    assert "method-change" not in httpx.get(f"{server}/model/{NOVA}", params={"dataset": "stt-starter-noise"}).text


_LAYOUT = """
const texts = Array.from(document.querySelectorAll('svg.chart text'));
return {
  overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
  width: document.documentElement.clientWidth,
  charts: document.querySelectorAll('svg.chart').length,
  chartWidths: Array.from(document.querySelectorAll('svg.chart')).map(s => s.getBoundingClientRect().width),
  fonts: texts.map(t => { const m = t.getScreenCTM(); return parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b); }),
  height: document.documentElement.scrollHeight,
};
"""


@pytest.mark.parametrize("width", [390, 1366])
def test_pages_fit_a_phone_and_a_laptop_in_chromium(server, browser, width):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        for name, path in (("model", f"/model/{NOVA}"), ("method", "/method"), ("api", "/api")):
            browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                    {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 500})
            browser.get(server + path)
            seen = browser.execute_script(_LAYOUT)
            assert width - 20 <= seen["width"] <= width and seen["overflow"] <= 0, (name, width, seen)  # less a scroll bar
            if name == "model":
                assert seen["charts"] >= 5 and min(seen["fonts"]) >= 10, (width, min(seen["fonts"]))
                assert max(seen["chartWidths"]) <= width
            browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",  # the whole page in one screenshot
                                    {"width": width, "height": min(seen["height"], 8000), "deviceScaleFactor": 1,
                                     "mobile": width < 500})
            assert browser.save_screenshot(str(ARTIFACTS / f"{name}-{width}.png"))
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_attempt_figures_agree_with_the_leaderboards_series_figures(server):
    """metrics.series.attempt_figures (a day's figures) over a whole series' 30 days gives its leaderboard figures."""
    rows = httpx.get(f"{server}/api/v1/leaderboard").json()["rows"]
    checked = 0
    for row in rows:
        members = [r for r in SEED if not r.emulator and (r.model_id, r.dataset, r.region, r.method_version) ==
                   (row["model_id"], row["dataset"], row["region"], row["method_version"])]
        scored = [r.status == "ok" and r.ref_words is not None for r in members]
        f = attempt_figures([r.status for r in members],
                            [r.substitutions + r.deletions + r.insertions if s else None for r, s in zip(members, scored)],
                            [r.ref_words if s else None for r, s in zip(members, scored)])
        assert (f.attempts, f.wer_clips) == (row["attempts"], row["wer_clips"])
        for name in ("error_rate", "timeout_rate", "inaudible_rate", "pooled_wer"):
            assert rounded(getattr(f, name), "fraction") == row[name], name  # the API's published precision
        checked += 1
    assert checked > 10
