"""A user registry file's list prices on every board (issue #31, "Price"): the CLI table, CSV and JSON,
the web board's ranked table and its price-against-latency chart, the API and its CSV, each the
number metrics.price defines; a stale check marked stale; a model measured only against an emulator
never priced anywhere. `voxwatch serve` and the CLI on a Postgres store seeded with test_web's rows."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
import tomllib
from html import unescape
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from support.processes import REPO, run_cli
from support.web_seed import EMULATED_ONLY, seeded_store, serving
from voxwatch.metrics.price import Price, board_figure

pytestmark = pytest.mark.e2e

TODAY = "2027-06-10"  # whisper-1's package price (checked 2026-12-05) is stale on it; the file's are not
NOVA, WHISPER, UNPRICED = "deepgram/nova-3", "openai/whisper-1", "openai/gpt-4o-transcribe:realtime"
NOVA_PRICE = Price(0.0042, "audio_minute", "https://deepgram.example/pricing", dt.date(2027, 6, 1))
EMULATED_PRICE = 1.6665  # per audio minute: "$1,666.50" per 1,000 minutes, a figure that must never show


def _toml(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def _override(model_id: str, **price) -> str:
    """The package's entry for model_id, replaced by this file's with this price (none: a model whose price
    was not found)."""
    entries = tomllib.loads((REPO / "voxwatch" / "providers" / "registry.toml").read_text())["model"]
    package = {k: v for k, v in next(e for e in entries if e["id"] == model_id).items() if not k.startswith("price_")}
    entry = {**package, "override": True, **price}
    return "[[model]]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in entry.items()) + "\n"


@pytest.fixture(scope="module")
def priced(tmp_path_factory) -> Iterator[tuple[str, str, dict[str, str]]]:
    folder = tmp_path_factory.mktemp("prices")
    path = folder / "prices.toml"
    path.write_text(_override(NOVA, price_usd=NOVA_PRICE.usd, price_unit=NOVA_PRICE.unit,
                              price_source=NOVA_PRICE.source, price_checked=NOVA_PRICE.checked)
                    + _override(EMULATED_ONLY, price_usd=EMULATED_PRICE, price_unit="audio_minute",
                                price_source="https://speechmatics.example/pricing",
                                price_checked=dt.date(2027, 6, 1))
                    + _override(UNPRICED))
    env = {"VOXWATCH_REGISTRY_FILES": str(path), "VOXWATCH_TODAY": TODAY}
    with seeded_store() as url:
        with serving(url, folder / "serve.log", TODAY, env=env) as base:
            yield url, base, env


def _ranked_cells(html: str, model_id: str) -> list[str]:
    """The price cells of a model's lines in the page's ranked tables."""
    rows = re.findall(r'<tr data-model="' + re.escape(model_id) + r'"[^>]*>(.*?)</tr>', html, re.S)
    return [c for r in rows for c in re.findall(r'<td[^>]*data-field="price".*?</td>', r, re.S)]


def test_the_api_and_its_csv_carry_the_price_the_method_defines(priced):
    _, base, _ = priced
    rows = httpx.get(base + "/api/v1/leaderboard", params={"board": "stt"}, timeout=60).json()["rows"]
    nova = [r for r in rows if r["model_id"] == NOVA]
    assert nova and all(r["price"] == board_figure(NOVA_PRICE, "stt") for r in nova)
    assert {(r["price_unit"], r["price_source"], r["price_checked"], r["price_stale"]) for r in nova} == {
        ("USD per 1,000 audio minutes", NOVA_PRICE.source, "2027-06-01", False)}
    whisper = [r for r in rows if r["model_id"] == WHISPER]
    assert whisper and all(r["price"] == pytest.approx(6.0) and r["price_stale"] is True for r in whisper)
    assert all(r["price"] is None and r["price_unit"] is None for r in rows if r["model_id"] == UNPRICED)
    assert not any(r["model_id"] == EMULATED_ONLY for r in rows)
    table = list(csv.DictReader(io.StringIO(httpx.get(base + "/board/stt", params={"format": "csv"}, timeout=60).text)))
    assert {float(r["price"]) for r in table if r["model_id"] == NOVA} == {board_figure(NOVA_PRICE, "stt")}
    assert {r["price_checked"] for r in table if r["model_id"] == NOVA} == {"2027-06-01"}
    schema = httpx.get(base + "/api/v1/openapi.json", timeout=60).json()["components"]["schemas"]["LeaderboardRow"]
    assert {"price", "price_unit", "price_source", "price_checked"} <= set(schema["properties"])


def test_the_board_shows_the_price_with_its_unit_check_date_and_staleness(priced):
    _, base, _ = priced
    html = httpx.get(base + "/board/stt", timeout=60).text
    nova = _ranked_cells(html, NOVA)
    figure = board_figure(NOVA_PRICE, "stt")
    assert nova and all(float(re.search(r'data-value="([^"]+)"', c)[1]) == figure for c in nova)
    assert all(f"${figure:,.2f}" in c and "checked 2027-06-01" in c and 'data-stale="false"' in c for c in nova)
    whisper = _ranked_cells(html, WHISPER)
    assert whisper and all("$6.00 (stale)" in c and "stale: checked 2026-12-05" in c for c in whisper)
    assert all(">-<" in c for c in _ranked_cells(html, UNPRICED))
    assert "price, USD per 1,000 audio minutes" in unescape(html)
    assert EMULATED_ONLY not in html and "1,666.50" not in html


def test_the_price_chart_draws_each_priced_models_figure(priced):
    _, base, _ = priced
    html = httpx.get(base + "/board/stt", timeout=60).text
    charts = re.findall(r'<figure class="chart-price">(.*?)</figure>', html, re.S)
    assert charts, "a board with a priced model has a price-against-latency chart"
    drawn = {unescape(k).split("|")[0]: float(y) for chart in charts
             for k, y in re.findall(r'<g class="point price" data-key="([^"]+)" data-x="[^"]+" data-y="([^"]+)"', chart)}
    assert drawn[NOVA] == board_figure(NOVA_PRICE, "stt") and drawn[WHISPER] == pytest.approx(6.0)
    assert UNPRICED not in drawn and EMULATED_ONLY not in drawn
    assert "USD per 1,000 audio minutes" in "".join(charts)


def test_the_cli_table_csv_and_json_show_the_same_price(priced):
    url, _, env = priced
    figure = board_figure(NOVA_PRICE, "stt")
    table = run_cli("leaderboard", "--store", url, "--board", "stt", env=env).stdout
    firsts = [line for line in table.splitlines() if re.match(r"^\s+(\d+|-)\s+\S", line)]
    assert [line for line in firsts if NOVA in line and line.rstrip().endswith(f"${figure:,.2f}")]
    assert all(line.rstrip().endswith("$6.00 (stale)") for line in firsts if WHISPER in line)
    assert "price: USD per 1,000 audio minutes" in table and "1,666.50" not in table
    rows = json.loads(run_cli("leaderboard", "--store", url, "--board", "stt", "--format", "json", env=env).stdout)["rows"]
    assert {r["price"] for r in rows if r["model_id"] == NOVA} == {figure}
    assert not any(r["model_id"] == EMULATED_ONLY for r in rows)
    lines = list(csv.DictReader(io.StringIO(run_cli("leaderboard", "--store", url, "--board", "stt", "--format", "csv",
                                                    env=env).stdout)))
    assert {float(r["price"]) for r in lines if r["model_id"] == NOVA} == {figure}
    assert all(r["price"] == "" for r in lines if r["model_id"] == UNPRICED)
