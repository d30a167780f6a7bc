"""The clean-vs-degraded page of a dataset family (issue #19) and the STT board's speaker and accent
filters, served by `voxwatch serve` from a Postgres store seeded with tests/support/family_seed.py's rows.

Every number is checked three ways: the page's cells, the API's JSON (and CSV) and
metrics.degradation run here on the rows this file selects from the seed, paired by utterance; the
hand-computed family's numbers are written out. The accent board's figures are computed here from
that accent's rows with numpy. The page's layout is read in headless Chromium at 390 px.
"""

from __future__ import annotations

import csv
import io
import json
import re
import math
from dataclasses import replace
from html import unescape
from html.parser import HTMLParser
from typing import Iterator

import httpx
import jsonschema
import numpy as np
import pytest

from voxwatch.metrics.published import rounded
from voxwatch.web.views import UNITS
from voxwatch.metrics.clustered import design, quantile_interval
from voxwatch.metrics.degradation import Side, degradation
from voxwatch.foundation.observation import Observation

from support.processes import REPO, run_cli
from support.family_seed import (ACCENT, CLEAN, CLIPPING, DAY, FAMILY, HAND, LOST, MODELS, NOISE, SPEAKER, UTTERANCES,
                         family_rows)
from support.browser import browser  # noqa: F401 (a fixture)
from support.web_seed import seeded_store, serving, sqlite_store  # noqa: F401 (the module's fixtures)

pytestmark = pytest.mark.e2e

ROWS = family_rows()
ARTIFACTS = REPO / "var" / "test-artifacts"


@pytest.fixture(scope="module")
def store() -> Iterator[str]:
    with seeded_store(ROWS) as url:
        yield url


@pytest.fixture(scope="module")
def server(store: str, tmp_path_factory) -> Iterator[str]:
    with serving(store, tmp_path_factory.mktemp("families") / "serve.log") as base:
        yield base


def _side(model_id: str, dataset: str) -> Side:
    """One model's rows of one dataset as metrics.degradation reads them, selected here from the seed."""
    rows = [r for r in ROWS if (r.model_id, r.dataset) == (model_id, dataset)]
    metric = MODELS[model_id][1]
    ok = [r.status == "ok" for r in rows]
    return Side([r.utterance_id for r in rows], [r.run_id for r in rows], [r.status for r in rows],
                [r.substitutions + r.deletions + r.insertions if good else None for r, good in zip(rows, ok)],
                [r.ref_words if good else None for r, good in zip(rows, ok)],
                [getattr(r, metric) if good else None for r, good in zip(rows, ok)])


class _FamilyTables(HTMLParser):
    """Each table.family's rows: (dataset, model) -> {field: data-value or text}."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.cells: dict[tuple[str, str], dict[str, str]] = {}
        self._table: str | None = None
        self._row: dict | None = None
        self._field: str | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "table" and "family" in (a.get("class") or "").split():
            self._table = a["data-dataset"]
        elif tag == "tr" and self._table and "data-model" in a:
            self._row = self.cells.setdefault((self._table, a["data-model"]), {})
        elif tag == "td" and self._row is not None and "data-field" in a:
            self._field = a["data-field"]
            self._row[self._field] = a.get("data-value", "")
            for k in ("data-low", "data-high"):
                if k in a:
                    self._row[f"{self._field}_{k[5:]}"] = a[k]

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._field = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._field and self._row is not None and self._row[self._field] == "" and data.strip():
            self._row[self._field] = data.strip()


PUBLISHED_PLACES = {"clean_wer": 4, "degraded_wer": 4, "wer_diff_points": 2, "clean_latency_p50": 1,
                    "degraded_latency_p50": 1, "latency_diff_ms": 1}
"""The API's places (docs/WEB.md): WERs as fractions to 4, their difference in points to 0.01, latencies to 0.1 ms."""


def _close(a: float | None, b: float | None) -> bool:
    return a is None and b is None or (a is not None and b is not None and a == pytest.approx(b, rel=1e-9, abs=1e-9))


def test_the_page_the_api_the_csv_and_the_metric_agree(server):
    doc = httpx.get(f"{server}/api/v1/families/{FAMILY}").json()
    page = httpx.get(f"{server}/board/stt/family/{FAMILY}")
    assert page.status_code == 200
    cells = _FamilyTables()
    cells.feed(page.text)
    lines = {(r["dataset"], r["model_id"]): r for r in doc["rows"]}
    assert set(lines) == {(d, m) for d in (NOISE, CLIPPING) for m in MODELS} == set(cells.cells)
    assert doc["clean_datasets"] == [CLEAN] and doc["min_paired_utterances"] == 10
    csv_rows = list(csv.DictReader(io.StringIO(httpx.get(f"{server}/api/v1/families/{FAMILY}?format=csv").text)))
    assert len(csv_rows) == len(lines)
    for (dataset, model_id), line in lines.items():
        expected = degradation(_side(model_id, CLEAN), _side(model_id, dataset))
        for name, places in PUBLISHED_PLACES.items():  # the API at its published precision
            full = getattr(expected, name)
            assert line[name] == (None if full is None else round(full, places)), (dataset, model_id, name)
        assert line["paired_utterances"] == expected.paired_utterances and line["reason"] == expected.reason
        assert (line["wer_diff_ci"] is None) == (expected.wer_diff_ci is None)
        if expected.wer_diff_ci:
            assert line["wer_diff_ci"] == [round(v, 2) for v in expected.wer_diff_ci]
        shown = cells.cells[(dataset, model_id)]  # the page and the CSV at full precision
        assert int(shown["paired_utterances"]) == line["paired_utterances"]
        for name in ("clean_wer", "degraded_wer", "clean_latency_p50", "degraded_latency_p50", "latency_diff_ms"):
            assert _close(float(shown[name]), getattr(expected, name)), name
        if expected.wer_diff_points is None:
            assert shown["wer_diff_na"] == f"n/a: {line['reason']}"
        else:
            assert _close(float(shown["wer_diff_points"]), expected.wer_diff_points)
            assert [float(shown["wer_diff_ci_low"]), float(shown["wer_diff_ci_high"])] == pytest.approx(expected.wer_diff_ci)
        row = next(r for r in csv_rows if (r["dataset"], r["model_id"]) == (dataset, model_id))
        assert _close(float(row["clean_wer"]), expected.clean_wer)
        if expected.wer_diff_points is None:
            assert row["wer_diff_points"] == "" and row["reason"] == line["reason"]
        else:
            assert _close(float(row["wer_diff_points"]), expected.wer_diff_points)
        if expected.wer_diff_ci:
            assert _close(float(row["wer_diff_ci_low"]), expected.wer_diff_ci[0])


def test_the_lost_utterance_counts_on_neither_side_and_few_pairs_have_no_difference(server):
    doc = httpx.get(f"{server}/api/v1/families/{FAMILY}").json()
    for model_id in MODELS:
        noise = next(r for r in doc["rows"] if (r["dataset"], r["model_id"]) == (NOISE, model_id))
        assert noise["paired_utterances"] == len(UTTERANCES) - 1  # LOST timed out on every noise attempt
        kept = [r for r in ROWS if r.model_id == model_id and r.dataset == CLEAN and r.status == "ok"
                and r.utterance_id != LOST]
        assert noise["clean_words"] == sum(r.ref_words for r in kept)  # not every clean word: LOST's are out
        assert noise["clean_wer"] == round(sum(r.substitutions + r.deletions + r.insertions for r in kept)
                                           / sum(r.ref_words for r in kept), 4)
        assert noise["wer_diff_points"] is not None and noise["wer_diff_ci"][0] < noise["wer_diff_points"]
        clipped = next(r for r in doc["rows"] if (r["dataset"], r["model_id"]) == (CLIPPING, model_id))
        assert clipped["paired_utterances"] == 6 and clipped["wer_diff_points"] is None
        assert clipped["reason"] == "6 paired utterances, fewer than 10"


def test_a_hand_computed_family(server):
    """a: 1 error in 10 words clean, 3 degraded; b: 0 in 5, then 1; c: 5 in 5 clean, never ok degraded.
    Three ticks: clean 3/45, degraded 12/45 on a and b; c's clean rows count nowhere."""
    doc = httpx.get(f"{server}/api/v1/families/{HAND}").json()
    (line,) = doc["rows"]
    assert (line["paired_utterances"], line["clean_words"], line["degraded_words"]) == (2, 45, 45)
    assert line["clean_wer"] == round(3 / 45, 4) and line["degraded_wer"] == round(12 / 45, 4)
    assert line["clean_latency_p50"] == pytest.approx(160.0)  # a: 100, 110, 120; b: 200, 210, 220
    assert line["degraded_latency_p50"] == pytest.approx(210.0) and line["latency_diff_ms"] == pytest.approx(50.0)
    assert line["wer_diff_points"] is None and line["reason"] == "2 paired utterances, fewer than 10"
    text = unescape(re.sub(r"<[^>]+>", " ", httpx.get(f"{server}/board/stt/family/{HAND}").text))
    assert "6.67%" in text and "26.67%" in text and "n/a: 2 paired utterances, fewer than 10" in text


def test_unknown_families_are_404_and_names_are_escaped(server):
    page = httpx.get(f"{server}/board/stt/family/%3Cb%3Enope")
    assert page.status_code == 404 and "no dataset family &#39;&lt;b&gt;nope&#39;" in page.text and "<b>nope" not in page.text
    api = httpx.get(f"{server}/api/v1/families/%3Cb%3Enope")
    assert api.status_code == 404 and api.json()["error"].startswith("no dataset family '<b>nope'")
    assert httpx.get(f"{server}/api/v1/families/{FAMILY}?window=1y").status_code == 400
    assert httpx.get(f"{server}/api/v1/families/{FAMILY}?format=xml").status_code == 400


def test_the_region_filter_and_the_openapi_schema(server):
    spec = httpx.get(f"{server}/api/v1/openapi.json").json()
    doc = httpx.get(f"{server}/api/v1/families/{FAMILY}", params={"region": "us-east", "window": "7d"}).json()
    jsonschema.validate(doc, {"$ref": "#/components/schemas/Family", "components": spec["components"]})
    assert doc["regions"] == ["us-east"] and len(doc["rows"]) == 4
    empty = httpx.get(f"{server}/api/v1/families/{FAMILY}", params={"region": "eu-west"}).json()
    assert empty["rows"] == [] and empty["regions"] == ["us-east"]
    assert "No model of the STT board" in httpx.get(f"{server}/board/stt/family/{FAMILY}?region=eu-west").text


def test_the_board_links_each_family_dataset_to_its_page(server):
    page = httpx.get(f"{server}/board/stt").text
    links = set(re.findall(r'<a href="(/board/stt/family/[^"?]+)\?window=30d" data-family="([^"]+)"', page))
    assert links == {(f"/board/stt/family/{FAMILY}", FAMILY)}  # hand-family is in no catalog: no page to link
    assert httpx.get(server + next(iter(links))[0]).status_code == 200


def _accent_rows(accent: str, model_id: str, dataset: str) -> list[Observation]:
    return [r for r in ROWS if r.model_id == model_id and r.dataset == dataset and ACCENT.get(r.utterance_id) == accent]


def test_an_accent_board_is_the_series_of_that_accents_rows(server, store):
    doc = httpx.get(f"{server}/api/v1/leaderboard", params={"board": "stt", "accent": "scottish"}).json()
    assert doc["accent"] == "scottish" and doc["speaker"] is None
    by_key = {(r["model_id"], r["dataset"], r["metric"]): r for r in doc["rows"]}
    page = httpx.get(f"{server}/board/stt", params={"accent": "scottish"}).text
    assert "computed only from the rows of clips with accent <strong>scottish</strong>" in page
    for model_id, (_, metric) in MODELS.items():
        for dataset in (CLEAN, NOISE, CLIPPING):
            rows = _accent_rows("scottish", model_id, dataset)
            ok = [r for r in rows if r.status == "ok"]
            v = np.array([getattr(r, metric) for r in ok])
            got = by_key[(model_id, dataset, metric)]
            assert got["attempts"] == len(rows) and got["n"] == v.size
            unit = UNITS[metric]  # the API at its published precision (metrics.published)
            assert got["p50"] == rounded(np.percentile(v, 50), unit)
            assert got["p50_ci"] == rounded(list(quantile_interval(v, 50, design(
                utterance=[r.clip_id for r in ok], tick=[r.run_id for r in ok]))), unit)
            assert got["pooled_wer"] == rounded(sum(r.substitutions + r.deletions + r.insertions for r in ok)
                                                / sum(r.ref_words for r in ok), "fraction")
            cell = re.search(rf'<tr data-model="{re.escape(model_id)}"[^>]*data-dataset="{dataset}"[^>]*>.*?'
                             r'data-field="p50" class="headline" data-value="([^"]+)"', page, re.S)
            assert rounded(float(cell.group(1)), unit) == got["p50"]
    unfiltered = httpx.get(f"{server}/api/v1/leaderboard", params={"board": "stt"}).json()["rows"]
    nova = next(r for r in unfiltered if (r["model_id"], r["dataset"], r["metric"]) == ("deepgram/nova-3", CLEAN, "ttfs_ms"))
    assert nova["n"] > by_key[("deepgram/nova-3", CLEAN, "ttfs_ms")]["n"]  # the accent's board is a subset
    cli = json.loads(run_cli("leaderboard", "--store", store, "--format", "json", "--accent", "scottish").stdout)
    assert {(r["model_id"], r["dataset"], r["metric"]): r["p50"] for r in cli["rows"]} == {
        k: r["p50"] for k, r in by_key.items()}
    assert cli["accents"] == ["scottish"]
    table = run_cli("leaderboard", "--store", store, "--accent", "scottish", "--dataset", CLEAN, "--wide").stdout
    assert table.startswith("STT board - rolling 30d, clips of accent scottish only,")
    nova_line = next(line for line in table.splitlines() if "deepgram/nova-3" in line and " ttfs_ms " in line)
    assert f"{by_key[('deepgram/nova-3', CLEAN, 'ttfs_ms')]['p50']:.1f} [" in nova_line


def test_the_board_offers_the_windows_speakers_and_accents(server):
    page = httpx.get(f"{server}/board/stt").text
    for name, values in (("speaker", SPEAKER), ("accent", ACCENT)):
        select = re.search(rf'<select name="{name}">(.*?)</select>', page, re.S).group(1)
        assert re.findall(r"<option>([^<]+)</option>", select) == sorted(set(values.values())), name
    speaker = httpx.get(f"{server}/api/v1/leaderboard", params={"board": "stt", "speaker": "bob",
                                                                "dataset": CLEAN}).json()
    nova = next(r for r in speaker["rows"] if (r["model_id"], r["metric"]) == ("deepgram/nova-3", "ttfs_ms"))
    assert nova["attempts"] == sum(1 for r in ROWS if (r.model_id, r.dataset) == ("deepgram/nova-3", CLEAN)
                                   and SPEAKER.get(r.utterance_id) == "bob")


def test_the_family_page_fits_a_phone(server, browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                            {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True})
    try:
        browser.get(f"{server}/board/stt/family/{FAMILY}")
        m = browser.execute_script(
            "const d = document.querySelector('table.family td[data-field^=\"wer_diff\"]').getBoundingClientRect();"
            "return {scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth, "
            "tables: document.querySelectorAll('table.family').length, diffRight: d.right, diffLeft: d.left}")
        assert browser.save_screenshot(str(ARTIFACTS / "layout-family-390.png"))
        browser.get(f"{server}/board/stt?accent=scottish")  # the filter form with its speaker and accent
        board = browser.execute_script("return {scrollWidth: document.documentElement.scrollWidth, "
                                       "accent: document.querySelector('select[name=accent]').value}")
        assert browser.save_screenshot(str(ARTIFACTS / "layout-stt-accent-390.png"))
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    assert m["innerWidth"] == 390 and m["tables"] == 2
    assert m["scrollWidth"] <= m["innerWidth"], f"the family page is {m['scrollWidth']} px wide at 390 px"
    assert 0 <= m["diffLeft"] and m["diffRight"] <= 390, m  # the difference is seen without scrolling the table
    assert board == {"scrollWidth": 390, "accent": "scottish"}, board


def test_the_sqlite_store_serves_the_same_family_and_accent_board(server, tmp_path):
    with serving(sqlite_store(tmp_path, ROWS), tmp_path / "serve.log") as base:
        for path, params in (("/api/v1/families/" + FAMILY, {}), ("/api/v1/families/" + HAND, {}),
                             ("/api/v1/leaderboard", {"board": "stt", "accent": "us"})):
            lite, pg = (httpx.get(b + path, params=params).json() for b in (base, server))
            assert lite["rows"] == pg["rows"] and lite["rows"], path
        page = httpx.get(f"{base}/board/stt").text
        assert re.search(r'<select name="accent">.*?<option>scottish</option><option>us</option>', page, re.S)


def test_an_accent_with_a_comma_is_one_accent_and_the_option_repeats():
    """Accents are free text ("non-native English, Mandarin L1"): --accent takes its value whole."""
    import argparse

    from voxwatch.boards.row_options import add_row_filters, row_filter

    parser = argparse.ArgumentParser()
    add_row_filters(parser)
    only = row_filter(parser.parse_args(["--accent", "non-native English, Mandarin L1", "--accent", " scottish ",
                                         "--speaker", "p1"]))
    assert only.accents == ("non-native English, Mandarin L1", "scottish") and only.speakers == ("p1",)
    assert row_filter(parser.parse_args([])).accents == ()
    with pytest.raises(SystemExit):
        parser.parse_args(["--accent", "  "])


def _distractors() -> list[Observation]:
    """Rows the family page must leave out or window out: an emulator's, a TTS row, another family's,
    one with no utterance, and the family's rows 10 and 50 days old (another month's partition)."""
    base = [r for r in ROWS if r.family == FAMILY][:40]
    out = [replace(r, run_id=f"emu-{r.run_id}", emulator=True, substitutions=0) for r in base[:10]]
    out += [replace(base[0], run_id="tts", board="tts", protocol="tts-stream")]
    out += [replace(base[1], run_id="other", family="other-family")]
    out += [replace(base[2], run_id="no-utt", utterance_id=None)]
    out += [replace(r, run_id=f"old-{age}-{r.run_id}", started_at=r.started_at - age * DAY) for age in (10, 50) for r in base]
    return out


def test_the_postgres_family_read_is_the_metric_definition_on_the_same_rows(tmp_path):
    """The family page on Postgres reads narrow rows in SQL (store.family_reads); its numbers are those of
    metrics.degradation over the window's observations, as SQLite's read gives them."""
    from voxwatch.boards.leaderboard import since
    from voxwatch.providers.registry import Registry
    from voxwatch.store import open_store
    from voxwatch.store.connection import connect
    from voxwatch.store.family_reads import FAMILY_SQL
    from voxwatch.web.family_views import build, family_view, lines
    from voxwatch.web.source import open_source

    from support.postgres import fresh_postgres

    rows = ROWS + _distractors()
    assert len({(r.run_id, r.model_id, r.dataset, r.clip_id, r.attempt) for r in rows}) == len(rows)  # none dropped as a repeat
    lite_url = f"sqlite:///{tmp_path / 'family.sqlite'}"
    lite = open_store(lite_url)
    lite.add(rows)
    lite.close()
    registry = Registry.default()
    with fresh_postgres() as url:
        pg = open_store(url)
        pg.add(rows)
        pg.close()
        sources = [open_source(u, registry) for u in (url, lite_url)]
        try:
            seen = 0
            for family in (FAMILY, HAND, "other-family", "no-such-family"):
                for window in ("24h", "7d", "30d"):
                    for region in (None, "us-east", "eu-west"):
                        defined = build([r for r in rows if not r.emulator and r.started_at >= since(window)],
                                        family, window, region)
                        for source in sources:
                            view = family_view(source, family, window, region)
                            assert (view.conditions, view.clean_datasets, view.regions) == \
                                (defined.conditions, defined.clean_datasets, defined.regions), source.kind
                            assert _same_lines(lines(view), lines(defined)), (source.kind, family, window, region)
                        seen += len(lines(defined))
            assert seen > 20
            with connect(url) as conn:  # by key, run by run, in each month's partition: never a pass over the table
                conn.execute("SET enable_seqscan = off")
                plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + FAMILY_SQL,
                                                            {"family": FAMILY, "since": since("30d"), "board": "stt"}))
            scans = [line for line in plan.splitlines() if " on obs_facts_" in line]
            assert scans and all("Index Scan using obs_facts_" in line for line in scans), plan
        finally:
            for source in sources:
                source.close()


def test_postgres_keeps_each_familys_lines_as_its_runs_finish(tmp_path):
    """Postgres computes a family's lines when one of its STT runs is recorded as finished (and for
    every family on `db refresh`), per window and region, and the page reads those: rows stored after
    it leave the page as it was until the next run finishes; the kept lines are the definition's on
    the rows of their time. A finished run of another board, or another family, leaves them alone."""
    from voxwatch.foundation.observation import RunRecord
    from voxwatch.metrics.family_lines import build
    from voxwatch.metrics.published import when
    from voxwatch.providers.registry import Registry
    from voxwatch.store import open_store
    from voxwatch.store.connection import connect
    from voxwatch.web.family_views import document, family_view, lines
    from voxwatch.web.source import open_source

    from support.postgres import fresh_postgres

    family_rows_ = [r for r in ROWS if r.family == FAMILY and not r.emulator]
    first_run = family_rows_[0].run_id
    early = [r for r in family_rows_ if r.run_id != first_run]
    late = [r for r in family_rows_ if r.run_id == first_run]
    assert early and late
    with fresh_postgres() as url:
        pg = open_store(url)
        source = open_source(url, Registry.default())
        try:
            pg.add(early)
            with connect(url) as conn:
                assert conn.execute("SELECT count(*) FROM family_lines").fetchone()[0] == 0
            live = family_view(source, FAMILY, "30d")  # nothing kept yet: computed from the rows
            assert live.computed_at is None and lines(live)
            finished = RunRecord(early[-1].run_id, early[-1].started_at, early[-1].region, 1, status="succeeded",
                                 finished_at=early[-1].started_at)
            pg.finish_run(finished)
            with connect(url) as conn:
                kept = conn.execute("SELECT time_window, region FROM family_lines WHERE family = %s", (FAMILY,)).fetchall()
            regions = sorted({r.region for r in early})
            assert sorted(kept) == sorted((w, reg) for w in ("24h", "7d", "30d")
                                          for reg in ["", *sorted({r.region for r in early if r.started_at >= since_(w)})])
            view = family_view(source, FAMILY, "30d")
            assert view.computed_at is not None
            assert _same_lines(lines(view), lines(build(early, FAMILY, "30d")))
            assert document(view)["generated_at"] == when(view.computed_at)  # the API dates the lines, not the request
            for region in regions:
                assert _same_lines(lines(family_view(source, FAMILY, "7d", region)),
                                   lines(build([r for r in early if r.started_at >= since_("7d")], FAMILY, "7d", region)))
            nowhere = family_view(source, FAMILY, "30d", "no-such-region")  # the kept regions stay the filter's options
            assert (nowhere.series, nowhere.regions) == ([], view.regions)

            pg.add(late)  # stored, but its run has not finished: the page keeps the lines of their time
            assert _same_lines(lines(family_view(source, FAMILY, "30d")), lines(view))
            before = lines(build(early, FAMILY, "30d"))
            after = lines(build(early + late, FAMILY, "30d"))
            assert not _same_lines(before, after)  # the late run changes the lines...
            pg.finish_run(RunRecord(first_run, late[0].started_at, late[0].region, 1, status="succeeded",
                                    finished_at=late[-1].started_at))
            assert _same_lines(lines(family_view(source, FAMILY, "30d")), after)  # ... once it has finished
            with connect(url) as conn:
                conn.execute("DELETE FROM family_lines")
            assert pg.refresh_families() >= 3  # db refresh: every family with an utterance, each window
            assert _same_lines(lines(family_view(source, FAMILY, "30d")), after)
        finally:
            source.close()
            pg.close()


def since_(window: str) -> float:
    from voxwatch.boards.leaderboard import since
    return since(window)


def _same_lines(a: list[dict], b: list[dict]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x.keys() != y.keys():
            return False
        for k in x:
            u, v = x[k], y[k]
            if isinstance(u, float) or isinstance(v, float):
                if u is None or v is None or not math.isclose(u, v, rel_tol=1e-12, abs_tol=1e-12):
                    return False
            elif isinstance(u, tuple) and u and isinstance(u[0], float):
                if v is None or not all(math.isclose(p, q, rel_tol=1e-12, abs_tol=1e-12) for p, q in zip(u, v)):
                    return False
            elif u != v:
                return False
    return True
