"""Latency by hour of day and region (issue 44, METHOD "Hour of day and region"): the heat map shows an injected slow hour.

Rows are stored with injected start times: three regions measured every hour of six days, each with
one slow hour of the day (UTC) where every latency is 2-3x. The definition (metrics.hour_of_day) is
held to numpy on the injected values and to the zone database read row by row; the API document
(SQLite and Postgres), its CSV and its OpenAPI schema to the definition; and the page, in headless
Chromium, colours the injected hour hottest in its region's row, on UTC and on the local time of a
region five hours behind UTC (America/New_York in December) and of one 5:30 ahead (Asia/Kolkata).
"""

from __future__ import annotations

import contextlib
import csv
import io
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator
from zoneinfo import ZoneInfo

import jsonschema
import numpy as np
import pytest
from starlette.testclient import TestClient

from voxwatch.boards import leaderboard
from voxwatch.config import ConfigError, load
from voxwatch.foundation.observation import Observation
from voxwatch.foundation.series_key import SeriesKey
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.hour_of_day import UTC, by_hour, hours_of, zone_of
from voxwatch.metrics.series import percentile_floor
from voxwatch.store.series_data import group
from voxwatch.web import hour_views
from voxwatch.web.app import create_app

from support.browser import browser  # noqa: F401 (a fixture)
from support.web_seed import seeded_store, serving, sqlite_store

MODEL = "deepgram/nova-3"
DATASET = "stt-starter-clean"
NOW = time.time()
FIRST_DAY = (NOW // 86400 - 6) * 86400  # six whole UTC days, all in the 7-day window and in the past
ZONES = {"us-east": "America/New_York", "ap-south": "Asia/Kolkata"}  # eu-west: none stated
# region: (days, rows per hour, its slow UTC hour, how much slower, its local slow hour)
REGIONS = {"us-east": (6, 20, 14, 3.0, 9), "eu-west": (6, 20, 3, 2.0, 3), "ap-south": (1, 6, 20, 2.5, 1)}
BASE_MS = 300.0


def _rows() -> list[Observation]:
    rng = np.random.default_rng(44)
    out = []
    for region, (days, per_hour, slow, factor, _) in REGIONS.items():
        for day in range(days):
            for hour in range(24):
                for u in range(per_hour):
                    status = "timeout" if (day + hour + u) % 23 == 0 else "ok"
                    v = (BASE_MS + 20 * rng.standard_normal()) * (factor if hour == slow else 1.0)
                    values = dict(ttfs_ms=v, first_partial_ms=v / 2, substitutions=int(rng.integers(0, 3)),
                                  deletions=0, insertions=0, ref_words=10) if status == "ok" else {}
                    out.append(Observation(
                        run_id=f"tick-{region}-{day}-{hour}", model_id=MODEL, dataset=DATASET, clip_id=f"clip{u}",
                        attempt=1, board="stt", vendor="deepgram", protocol="stt-stream", region=region,
                        started_at=FIRST_DAY + day * 86400 + hour * 3600 + 60 * u, status=status,
                        method_version=METHOD_VERSION, emulator=False, **values))
    return out


ROWS = _rows()


def _series(region: str):
    kept = [r for r in ROWS if r.region == region]
    key = SeriesKey("stt", MODEL, DATASET, region, METHOD_VERSION, "stt-stream", "")
    return key, group(kept)[key], [r.started_at for r in kept], kept


# ---------------------------------------------------------------- the definition

def test_hours_follow_the_zone_database_row_by_row_daylight_saving_and_half_hours_included():
    summer, winter = datetime(2026, 7, 1, 13, 59, tzinfo=timezone.utc), datetime(2026, 12, 1, 13, 59, tzinfo=timezone.utc)
    starts = [summer.timestamp(), winter.timestamp(), winter.timestamp() + 60, NOW, 0.0]
    for zone in ("America/New_York", "Asia/Kolkata", "Australia/Lord_Howe", "Europe/Dublin"):
        expected = [datetime.fromtimestamp(t, ZoneInfo(zone)).hour for t in starts]
        assert hours_of(starts, zone).tolist() == expected, zone
    assert hours_of(starts, "America/New_York").tolist()[:3] == [9, 8, 9]  # EDT (-4) in July, EST (-5) in December
    assert hours_of(starts, UTC).tolist() == [datetime.fromtimestamp(t, timezone.utc).hour for t in starts]
    assert zone_of("eu-west", ZONES) == UTC and zone_of("us-east", ZONES) == "America/New_York"


@pytest.mark.parametrize("region", sorted(REGIONS))
def test_each_hour_is_its_rows_summarized_and_the_slow_hour_is_the_slowest(region):
    key, data, started, kept = _series(region)
    days, per_hour, slow, factor, local_slow = REGIONS[region]
    for zone, slow_hour in ((UTC, slow), (zone_of(region, ZONES), local_slow)):
        cells = {c.hour: c for c in by_hour(key, data, started, "ttfs_ms", zone)}
        assert sorted(cells) == list(range(24))
        assert max(cells, key=lambda h: cells[h].p50) == slow_hour, (region, zone)
        for hour, c in cells.items():
            here = [r for r in kept if datetime.fromtimestamp(r.started_at, ZoneInfo(zone)).hour == hour]
            ok = np.array([r.ttfs_ms for r in here if r.status == "ok"])
            assert c.n == ok.size and c.attempts == len(here)
            assert c.p50 == pytest.approx(np.percentile(ok, 50))
            if ok.size >= percentile_floor(95):
                assert c.p95 == pytest.approx(np.percentile(ok, 95)) and c.p95_ci is not None
                assert c.p95_ci[0] <= c.p95 <= c.p95_ci[1]
            else:
                assert c.p95 is None and c.p95_ci is None
            scored = [r for r in here if r.status == "ok"]
            assert c.pooled_wer == pytest.approx(sum(r.substitutions for r in scored) / sum(r.ref_words for r in scored))
        slow_cell = cells[slow_hour]
        assert slow_cell.p50 / np.median([c.p50 for h, c in cells.items() if h != slow_hour]) == pytest.approx(factor, rel=0.1)
    utc = {c.hour: c for c in by_hour(key, data, started, "ttfs_ms")}
    assert (days * per_hour >= percentile_floor(95)) == (utc[slow].p95 is not None)


def test_a_metric_the_protocol_lacks_and_misaligned_start_times_are_clear_errors():
    key, data, started, _ = _series("eu-west")
    with pytest.raises(ValueError, match="headline metric"):
        by_hour(key, data, started, "ttfa_ms")
    with pytest.raises(ValueError, match="start times"):
        by_hour(key, data, started[:-1], "ttfs_ms")


def test_region_time_zones_are_checked_when_the_config_is_read():
    cfg = load(environ={"VOXWATCH_SCHEDULE_TIME_ZONES": "us-east=America/New_York,ap-south=Asia/Kolkata"})
    assert dict(cfg.region_zones) == ZONES
    assert load(environ={}).region_zones == ()
    for bad, said in (("us-east=Mars/Olympus", "not an IANA time zone"), ("us-east", "region=Area/City"),
                      ("us-east=UTC,us-east=Europe/Dublin", "given twice")):
        with pytest.raises(ConfigError, match=said):
            load(environ={"VOXWATCH_SCHEDULE_TIME_ZONES": bad})


# ---------------------------------------------------------------- the API document and its CSV

@contextlib.contextmanager
def _store(kind: str, folder: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield sqlite_store(folder, ROWS)
        return
    with seeded_store(ROWS) as url:
        yield url


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def store(request, tmp_path_factory) -> Iterator[str]:
    with _store(request.param, tmp_path_factory.mktemp(request.param)) as url:
        yield url


def test_the_document_holds_each_regions_hours_on_both_clocks_as_the_definition(store):
    client = TestClient(create_app(store, region_zones=ZONES))
    response = client.get(f"/api/v1/models/{MODEL}/hours", params={"window": "7d"})
    assert response.status_code == 200, response.text
    doc = response.json()
    spec = client.get("/api/v1/openapi.json").json()
    schema = spec["paths"]["/api/v1/models/{model_id}/hours"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    jsonschema.validate(doc, {**schema, "components": spec["components"]})
    assert (doc["dataset"], doc["metric"], doc["floors"]["p95"]) == (DATASET, "ttfs_ms", percentile_floor(95))
    for clock in ("utc", "local"):
        assert sorted(row["region"] for row in doc[clock]) == sorted(REGIONS)
        for row in doc[clock]:
            region = row["region"]
            key, data, started, _ = _series(region)
            zone = UTC if clock == "utc" else ZONES.get(region, UTC)
            assert row["time_zone"] == zone and row["time_zone_stated"] == (clock == "utc" or region in ZONES)
            expected = by_hour(key, data, started, "ttfs_ms", zone)
            assert [h["hour"] for h in row["hours"]] == [c.hour for c in expected]
            for h, c in zip(row["hours"], expected):
                assert h["n"] == c.n and h["attempts"] == c.attempts
                assert h["p50"] == pytest.approx(c.p50, abs=0.05)
                assert (h["p95"] is None) == (c.p95 is None)
                assert h["pooled_wer"] == pytest.approx(c.pooled_wer, abs=1e-4)
            hottest = max(row["hours"], key=lambda h: h["p50"])["hour"]
            assert hottest == REGIONS[region][2 if clock == "utc" else 4]
    text = client.get(f"/api/v1/models/{MODEL}/hours", params={"window": "7d", "format": "csv"}).text
    lines = list(csv.DictReader(io.StringIO(text)))
    assert len(lines) == sum(len(row["hours"]) for clock in ("utc", "local") for row in doc[clock])
    first = next(row for row in doc["local"] if row["region"] == "us-east")["hours"][9]
    line = next(x for x in lines if (x["clock"], x["region"], x["hour"]) == ("local", "us-east", "9"))
    assert float(line["p50"]) == first["p50"] and float(line["p95"]) == first["p95"]
    assert (float(line["p95_low"]), float(line["p95_high"])) == tuple(first["p95_ci"])


def test_bad_input_is_a_clear_400_or_404(store):
    client = TestClient(create_app(store))
    assert client.get(f"/api/v1/models/{MODEL}/hours?window=1y").status_code == 400
    said = client.get(f"/api/v1/models/{MODEL}/hours?metric=ttfa_ms")
    assert said.status_code == 400 and "ttfs_ms" in said.json()["error"]
    assert client.get("/api/v1/models/nobody/never/hours").status_code == 404
    page = client.get(f"/model/{MODEL}/hours?statistic=p99")
    assert page.status_code == 400 and "p50, p95" in page.text


def test_heat_levels_run_from_the_smallest_figure_to_the_largest():
    view = hour_views.hours_view(_Rows(ROWS), _registry(), MODEL, "7d", None, None, ZONES, now=NOW)
    levels = hour_views.heat_levels(view.rows["utc"], "p50")
    regions = [row.region for row in view.rows["utc"]]
    top = [k for k, v in levels.items() if v == hour_views.HEAT_LEVELS - 1]
    assert top == [(regions.index("us-east"), REGIONS["us-east"][2])]
    assert min(levels.values()) == 0 and set(levels.values()) <= set(range(hour_views.HEAT_LEVELS))


class _Rows:
    """A Source of the injected rows only (what hours_view reads)."""

    def __init__(self, rows: list[Observation]) -> None:
        self.rows = rows

    def leaderboard(self, window, only=None):
        return leaderboard.build(self.rows, _registry())

    def observations(self, only):
        return sorted((r for r in self.rows if only.since <= r.started_at and only.keeps(r)), key=lambda r: r.started_at)


def _registry():
    from voxwatch.providers.registry import Registry

    return Registry.default()


# ---------------------------------------------------------------- the page in Chromium

_HOTTEST = """
const cells = Array.from(document.querySelectorAll('table.hours td.heat'));
const rows = {};
for (const td of cells) {
  const region = td.closest('tr').dataset.region;
  const v = parseFloat(td.dataset.value);
  if (!(region in rows) || v > rows[region].value) rows[region] = {hour: +td.dataset.hour, value: v, text: td.innerText, title: td.title};
}
const top = document.querySelectorAll('table.hours td.heat-9');
return {rows: rows, top: Array.from(top).map(td => [td.closest('tr').dataset.region, +td.dataset.hour]),
        zones: Array.from(document.querySelectorAll('table.hours tbody tr')).map(tr => [tr.dataset.region, tr.dataset.zone,
                                                                                     tr.querySelector('th').innerText]),
        caption: document.querySelector('table.hours caption').innerText};
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("hours-site")
    url = sqlite_store(folder, ROWS)
    zones = ",".join(f"{r}={z}" for r, z in ZONES.items())
    with serving(url, folder / "serve.log", env={"VOXWATCH_SCHEDULE_TIME_ZONES": zones}) as base:
        yield base


def test_the_heat_map_shows_the_injected_slow_hour_hottest_in_utc_and_local_time(site, browser):
    browser.get(f"{site}/model/{MODEL}")
    link = browser.find_element("css selector", 'a[data-field="hours"]')
    link.click()
    assert "/hours" in browser.current_url
    for clock, at in (("utc", 2), ("local", 4)):
        for statistic in ("p50", "p95"):
            browser.get(f"{site}/model/{MODEL}/hours?window=7d&clock={clock}&statistic={statistic}")
            seen = browser.execute_script(_HOTTEST)
            assert statistic in seen["caption"] and ("UTC" if clock == "utc" else "local") in seen["caption"]
            shown = {region: cell for region, cell in seen["rows"].items()}
            # p95 needs 100 values an hour: ap-south has 6, so its row has no p95 cell at all
            expected = {r: spec[at] for r, spec in REGIONS.items() if statistic == "p50" or spec[0] * spec[1] >= 100}
            assert {r: c["hour"] for r, c in shown.items()} == expected, (clock, statistic)
            assert seen["top"] == [["us-east", REGIONS["us-east"][at]]], (clock, statistic)  # 3x: the page's hottest
            us = shown["us-east"]
            assert f"{us['value']:.1f}" in us["text"] and f"{statistic} {us['value']:.1f} ms" in us["title"]
            zones = {region: (zone, label) for region, zone, label in seen["zones"]}
            if clock == "local":
                assert zones["us-east"][0] == "America/New_York" and zones["ap-south"][0] == "Asia/Kolkata"
                assert zones["eu-west"][0] == "UTC" and "no zone stated" in zones["eu-west"][1]
            else:
                assert {z for z, _ in zones.values()} == {"UTC"}
    shot = Path(__file__).resolve().parents[1] / "var" / "test-artifacts" / "hours.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(shot))
