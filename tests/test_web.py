"""The public leaderboard web app, served by `voxwatch serve` from a seeded Postgres store.

Every number a page, a download or the API shows is checked against figures computed from the
seeded rows (tests/support/web_seed.py) with numpy (linear percentiles), plain sums (rates, pooled WER)
and, for the 95 % intervals and ranks, the method's clustered intervals (metrics.clustered) run on the
values it selects, clustered by clip and tick. The board pages are read as rendered by headless
Chromium (tests/support/browser.py; `make test` installs it), which also saves
var/test-artifacts/leaderboard.png.
"""

from __future__ import annotations

import csv
import io
import json
import re
import socket
import xml.etree.ElementTree as ET
from collections import defaultdict
from datetime import datetime, timezone

import httpx
import jsonschema
import numpy as np
import pytest
from openapi_spec_validator import validate as validate_openapi

from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.published import IN_UNIT, rounded
from voxwatch.metrics.specs import for_protocol
from voxwatch.providers.registry import Registry
from voxwatch.store.connection import connect
from voxwatch.web.views import UNITS

from support.processes import run_cli
from support.browser import browser  # noqa: F401 (a fixture)
from support.web_seed import (CURRENT, DAY, EMULATED_ONLY, EMULATOR_MS, EXCLUDED_MODEL, NOW, OLD, ROWS,  # noqa: F401
                              SCREENSHOT, _close, _close_interval, exclusion_reason, expected_board, expected_ranks,
                              rendered, server, serving, sqlite_store, store)  # rendered, server, store: fixtures

pytestmark = pytest.mark.e2e


def test_board_pages_in_chromium_show_the_seeded_figures(rendered):
    expected = expected_board("30d")
    ranks = expected_ranks(expected)
    reason = exclusion_reason()
    seen, p95_shown = set(), False
    for board in ("stt", "tts", "s2s"):
        for table in rendered[board]:
            for s in table["series"]:
                key = (board, s["model"], table["dataset"], s["region"], s["method"], s["instrument"] or None)
                assert key in expected, f"a series the rows do not have: {key}"
                seen.add(key)
                want = expected[key]
                first = s["rows"][0]["cells"]
                assert int(first["attempts"]) == want["attempts"]
                _close(first["error_rate"], want["error_rate"], 100)
                if want["error_rate_ci"] is not None:
                    _close_interval(first["error_rate_ci"], want["error_rate_ci"], 100)
                _close(first["timeout_rate"], want["timeout_rate"], 100)
                assert first["rank"] == (str(ranks[key]) if ranks[key] else "-")
                if board == "s2s":  # a reply has no reference words: answer accuracy in WER's place (the seed asks none)
                    assert want["pooled_wer"] is None and "pooled_wer" not in first
                    assert first["answer_accuracy"] == "n/a: no spoken questions"
                elif want["pooled_wer"] is None:
                    assert first["pooled_wer"] == ("n/a: n < 5 scored clips" if want["wer_clips"] else
                                                   "n/a: no scored words")
                else:
                    _close(first["pooled_wer"], want["pooled_wer"], 100, 2)
                    assert f"{want['wer_words']} words" in first["pooled_wer"]
                    _close_interval(first["wer_ci"], want["wer_ci"], 100, 2)
                assert [r["metric"] for r in s["rows"]] == list(want["metrics"])
                for r in s["rows"]:
                    m, cells = want["metrics"][r["metric"]], r["cells"]
                    if s["model"] == EXCLUDED_MODEL and r["metric"] == "first_partial_ms":
                        assert cells["na"] == f"n/a: excluded: {reason}" and not {"n", "p50"} & set(cells)
                        continue
                    assert int(cells["n"]) == m["n"]
                    if m["n"] < 5:
                        assert cells["na"] == f"n/a: n < 5 (n = {m['n']})" and "p50" not in cells
                    else:
                        decimals = 3 if r["metric"] == "rtf" else 1
                        for field in ("mean", "p50", "max"):
                            _close(cells[field], m[field], decimals=decimals)
                        for field in ("mean_ci", "p50_ci"):
                            _close_interval(cells[field], m[field], decimals=decimals)
                        if m["p95"] is None:
                            assert cells["p95_na"] == "n/a: n < 100" and "p95" not in cells
                        else:
                            _close(cells["p95"], m["p95"], decimals=decimals)
                            _close_interval(cells["p95_ci"], m["p95_ci"], decimals=decimals)
                            p95_shown = True
    assert seen == set(expected), f"series the page left out: {set(expected) - seen}"
    assert any(m["n"] < 5 for e in expected.values() for m in e["metrics"].values())  # the n/a case was exercised
    assert p95_shown and any(r for r in ranks.values()) and None in ranks.values()
    assert SCREENSHOT.stat().st_size > 10_000
    assert rendered["header_colour"] == "rgb(20, 50, 79)"  # static/style.css's #14324f: allowed by the CSP


def test_the_overview_ranks_each_dataset_and_protocol_by_paired_comparisons(rendered):
    expected = expected_board("30d")
    ranks = expected_ranks(expected)
    rows = rendered["overview"]
    assert len(rows) == len(expected)
    order: dict[tuple, list[tuple]] = defaultdict(list)
    for r in rows:
        (key,) = [k for k in expected if k[:5] == (r["board"], r["model"], r["dataset"], r["region"], r["method"])]
        want = expected[key]
        protocol = next(o.protocol for o in ROWS if o.model_id == r["model"])
        metric = for_protocol(protocol, headline_only=True)[0].name
        assert r["metric"] == metric
        m = want["metrics"][metric]
        assert int(r["cells"]["n"]) == m["n"]
        assert r["cells"]["rank"] == (str(ranks[key]) if ranks[key] else "-")
        if m["n"] >= 5:
            _close(r["cells"]["p50"], m["p50"])
            if m["p95"] is None:
                assert r["cells"]["p95"] == "n/a"
            else:
                _close(r["cells"]["p95"], m["p95"])
        else:
            assert r["cells"]["na"] == f"n/a: n < 5 (n = {m['n']})"
        _close(r["cells"]["error_rate"], want["error_rate"], 100)
        assert r["ranking"] == protocol  # each ranking is one dataset and protocol
        order[(r["board"], r["dataset"], protocol)].append((ranks[key] is None, m.get("p50") is None, m.get("p50") or 0.0))
    # rows in the order of their estimates: ranked first, each part by the ranked metric's p50
    assert all(v == sorted(v) for v in order.values()) and max(map(len, order.values())) >= 3
    # streaming and batch STT never share a ranking, and a superseded method version is shown, not ranked
    assert ("stt", "stt-starter-clean", "stt-stream") in order and ("stt", "stt-starter-clean", "stt-batch") in order
    assert all(ranks[k] is None for k in expected if k[4] != METHOD_VERSION)
    ranges = [r for r in ranks.values() if r is not None and r.best < r.worst]
    assert ranges, "no rank was a range: the seeded board should have some pair whose difference is not shown"


def test_a_method_change_is_noted_with_its_date(rendered):
    v4_start = min(r.started_at for r in ROWS if r.model_id == "deepgram/nova-3" and r.method_version == CURRENT
                   and r.region == "us-east" and r.dataset == "stt-starter-clean" and not r.emulator)
    day = datetime.fromtimestamp(v4_start, timezone.utc).date().isoformat()
    assert rendered["stt_notes"] == [f"deepgram/nova-3 (us-east): method changed v{OLD} -> v{CURRENT} on {day}: series not pooled"]
    nova = [s for t in rendered["stt"] if t["dataset"] == "stt-starter-clean" for s in t["series"]
            if s["model"] == "deepgram/nova-3" and s["region"] == "us-east"]
    assert sorted((s["method"] for s in nova), key=int) == [OLD, CURRENT]  # two rows, never pooled


def test_the_cli_json_is_the_api_document(server, store):
    cli = json.loads(run_cli("leaderboard", "--format", "json", "--store", store).stdout)
    api = httpx.get(f"{server}/api/v1/leaderboard").json()
    assert set(cli) == set(api) and cli["rows"] == api["rows"] and cli["notes"] == api["notes"] and cli["rows"]
    assert None in {r["rank"] for r in cli["rows"]} and any((r["rank"] or "").startswith("1") for r in cli["rows"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", api["generated_at"])  # ISO 8601 UTC
    figures = [v for r in api["rows"] for v in r.values() if isinstance(v, float)]
    assert figures and all(round(v, 4) == v for v in figures)  # published precision (metrics.published)
    assert any(round(v, 1) != v for v in figures)  # rates and WER keep their 4 places


def test_downloads_and_api_carry_the_page_figures(server, rendered):
    csv_text = httpx.get(f"{server}/board/stt?format=csv").text
    doc = httpx.get(f"{server}/board/stt?format=json").json()
    api = httpx.get(f"{server}/api/v1/leaderboard", params={"board": "stt"}).json()
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert len(rows) == len(doc["rows"]) == len(api["rows"]) > 0
    assert [r["rows"] for r in (doc, api)] == [api["rows"]] * 2 and doc["notes"] == api["notes"]
    page = {(t["dataset"], s["model"], s["region"], s["method"], r["metric"]): r["cells"]
            for t in rendered["stt"] for s in t["series"] for r in s["rows"]}
    for c, j in zip(rows, doc["rows"]):
        key = (c["dataset"], c["model_id"], c["region"], c["method_version"], c["metric"])
        assert key == (j["dataset"], j["model_id"], j["region"], j["method_version"], j["metric"])
        cells = page.pop(key)
        assert int(c["n"]) == j["n"] and (cells["na"].startswith("n/a: excluded") if j["note"] else
                                          int(cells["n"]) == j["n"])
        for field in ("mean", "p50", "p95", "max"):
            if c[field]:  # the CSV at full precision, the JSON at the published one (metrics.published)
                assert j[field] == rounded(float(c[field]), UNITS[c["metric"]])
                _close(cells[field], j[field], decimals=3 if c["metric"] == "rtf" else 1)
            elif j["na_reason"]:
                assert j[field] is None and cells["na"] == "n/a: " + j["na_reason"]
            else:  # under its own floor (a p95 needs 100 values)
                assert j[field] is None and field == "p95" and cells["p95_na"] == "n/a: n < 100"
        for field in ("mean_ci", "p50_ci", "p95_ci", "wer_ci", "error_rate_ci"):
            from_csv = (float(c[f"{field}_low"]), float(c[f"{field}_high"])) if c[f"{field}_low"] else None
            assert j[field] == (None if from_csv is None else
                                rounded(from_csv, UNITS[c["metric"]] if field in IN_UNIT else "fraction"))
    assert not page, f"page rows missing from the download: {sorted(page)}"


def test_no_emulator_row_appears_anywhere(server):
    paths = ["/", "/board/stt", "/board/stt?window=24h", "/board/stt?format=csv", "/board/stt?format=json",
             "/model/deepgram/nova-3", "/api/v1/leaderboard", "/api/v1/models",
             "/api/v1/models/deepgram/nova-3/history", "/alerts"]
    emulator_value = f"{EMULATOR_MS:.1f}"
    for path in paths:
        response = httpx.get(server + path)
        assert response.status_code == 200, path
        assert EMULATED_ONLY not in response.text and emulator_value not in response.text, path
    assert httpx.get(f"{server}/api/v1/models/{EMULATED_ONLY}/history").json()["series"] == []
    models = {m["model_id"] for m in httpx.get(f"{server}/api/v1/models").json()["models"]}
    assert models == {r.model_id for r in ROWS if not r.emulator}


def test_the_24h_window_holds_only_the_last_day(server):
    expected = expected_board("24h")
    doc = httpx.get(f"{server}/api/v1/leaderboard", params={"window": "24h"}).json()
    got = {(r["board"], r["model_id"], r["dataset"], r["region"], r["method_version"], r["instrument"]): r
           for r in doc["rows"]}
    assert {k for k in got} == set(expected)
    for key, want in expected.items():
        assert got[key]["attempts"] == want["attempts"]


def test_the_api_matches_its_openapi_document(server):
    spec = httpx.get(f"{server}/api/v1/openapi.json").json()
    validate_openapi(spec)  # a structurally valid OpenAPI 3.1 document
    calls = {"/api/v1/leaderboard": "/api/v1/leaderboard?board=tts&window=7d",
             "/api/v1/models": "/api/v1/models",
             "/api/v1/models/{model_id}/history": "/api/v1/models/deepgram/nova-3/history?dataset=stt-starter-clean",
             "/api/v1/models/{model_id}/hours": "/api/v1/models/deepgram/nova-3/hours",  # test_hour_of_day.py: its numbers
             "/api/v1/alerts": "/api/v1/alerts", "/api/v1/health": "/api/v1/health",
             "/api/v1/openapi.json": "/api/v1/openapi.json", "/api/v1/conversations": "/api/v1/conversations?window=7d",
             "/api/v1/preference": "/api/v1/preference?by=model",
             "/api/v1/families/{family}": "/api/v1/families/stt-starter",
             "/api/v1/comparisons": "/api/v1/comparisons?board=stt&window=30d",
             "/api/v1/compare/{board}": "/api/v1/compare/stt-stream?window=30d",  # test_web_families.py checks its numbers
             "/api/v1/bakeoff": "/api/v1/bakeoff?window=7d"}  # test_web_bakeoff.py checks its numbers
    # one conversation's path needs a stored conversation: test_web_conversations.py checks it against this
    # document; the ratings exports are CSV and JSONL from the ratings store: test_web_rating.py reads them
    assert set(spec["paths"]) == set(calls) | {"/api/v1/conversations/{conversation_id}",
                                               "/api/v1/preference/ratings.csv", "/api/v1/preference/ratings.jsonl"}
    for path, call in calls.items():
        response = httpx.get(server + call)
        assert response.status_code == 200 and response.headers["content-type"] == "application/json", call
        schema = spec["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        jsonschema.validate(response.json(), {**schema, "components": spec["components"]})
    bad = httpx.get(f"{server}/api/v1/leaderboard?window=1y")
    assert bad.status_code == 400
    jsonschema.validate(bad.json(), {"$ref": "#/components/schemas/Error", "components": spec["components"]})


RETIRED = "openai/gpt-realtime-2025-08-28"  # shut down 2027-01-20 (registry.toml); the seed has its rows


def _series_marks(html: str) -> dict[str, tuple[str, str | None]]:
    """model -> (data-model-status, the lifecycle notice shown under its name) for each series of a page."""
    marks = {}
    for block in re.findall(r'<(?:tbody class="series"|tr) data-model="[^"]+".*?</(?:tbody|tr)>', html, re.DOTALL):
        model = re.search(r'data-model="([^"]+)"', block).group(1)
        status = re.search(r'data-model-status="([^"]*)"', block).group(1)
        notice = re.search(r'<small class="lifecycle [a-z]+" data-field="lifecycle">([^<]+)</small>', block)
        marks[model] = (status, notice.group(1) if notice else None)
    return marks


def test_a_retired_model_stays_on_the_boards_and_api_marked_retired(store, tmp_path):
    """Read on 2027-01-20: gpt-realtime-2025-08-28 is retired (its rows still shown), whisper-1 retires in
    37 days (warned), the floating cartesia/sonic-3.5 was retired by the registry; others are unmarked."""
    with serving(store, tmp_path / "serve.log", today="2027-01-20") as base:
        boards = {b: _series_marks(httpx.get(f"{base}/board/{b}").text) for b in ("stt", "tts", "s2s")}
        overview = _series_marks(httpx.get(f"{base}/").text)
        models = httpx.get(f"{base}/api/v1/models").json()
        s2s = httpx.get(f"{base}/api/v1/leaderboard", params={"board": "s2s"}).json()
        page = httpx.get(f"{base}/model/{RETIRED}").text
        spec = httpx.get(f"{base}/api/v1/openapi.json").json()
    retired = ("retired", "retired 2027-01-20; successor openai/gpt-realtime-2.1")
    retiring = ("active", "retiring 2027-02-26; successor openai/gpt-transcribe:http")
    assert boards["s2s"][RETIRED] == overview[RETIRED] == retired
    assert boards["stt"]["openai/whisper-1"] == overview["openai/whisper-1"] == retiring
    assert boards["tts"]["cartesia/sonic-3.5"] == ("retired", "retired; successor cartesia/sonic-3.5-2026-05-04")
    assert boards["stt"]["deepgram/nova-3"] == ("active", None)
    # history is kept: the retired model's series is still there with every seeded attempt
    attempts = {r["model_id"]: r["attempts"] for r in s2s["rows"]}
    assert attempts[RETIRED] == sum(1 for r in ROWS if r.model_id == RETIRED and not r.emulator)
    assert s2s["status_date"] == "2027-01-20" and {r["model_status"] for r in s2s["rows"]} == {"retired"}
    assert {r["model_notice"] for r in s2s["rows"]} == {retired[1]}
    entry = next(m for m in models["models"] if m["model_id"] == RETIRED)
    assert {k: entry[k] for k in ("status", "notice", "checked", "deprecated", "shutdown", "successor", "session_limit_s")} == {
        "status": "retired", "notice": retired[1], "checked": "2026-12-01", "deprecated": None, "shutdown": "2027-01-20",
        "successor": "openai/gpt-realtime-2.1", "session_limit_s": 3600}
    assert entry["source"] == Registry.default().resolve(RETIRED).source and models["status_date"] == "2027-01-20"
    nova = next(m for m in models["models"] if m["model_id"] == "deepgram/nova-3")
    assert (nova["status"], nova["notice"], nova["shutdown"]) == ("active", None, None)
    for doc, name in ((models, "Models"), (s2s, "Leaderboard")):
        jsonschema.validate(doc, {"$ref": f"#/components/schemas/{name}", "components": spec["components"]})
    assert 'data-field="status">retired 2027-01-20</span>' in page and "Checked against the vendor on 2026-12-01" in page
    assert "Shutdown 2027-01-20." in page and "Sessions last at most 3600 s." in page


def _expected_history(model_id: str, dataset: str, metric: str) -> dict[tuple[str, str], dict[str, tuple]]:
    """(region, method) -> day -> (n, p50, p95) of the model's ok rows, by UTC day."""
    days: dict[tuple[str, str], dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for r in ROWS:
        if (r.model_id, r.dataset, r.status, r.emulator) == (model_id, dataset, "ok", False):
            day = datetime.fromtimestamp(r.started_at, timezone.utc).date().isoformat()
            days[(r.region, r.method_version)][day].append(getattr(r, metric))
    return {k: {d: (len(v), np.percentile(v, 50) if len(v) >= 5 else None,
                    np.percentile(v, 95) if len(v) >= 100 else None) for d, v in per.items()}  # a p95 needs 100
            for k, per in days.items()}


def test_the_history_chart_and_api_show_daily_percentiles(server):
    expected = _expected_history("deepgram/nova-3", "stt-starter-clean", "ttfs_ms")
    doc = httpx.get(f"{server}/api/v1/models/deepgram/nova-3/history",
                    params={"metric": "ttfs_ms", "dataset": "stt-starter-clean"}).json()
    got = {(s["region"], s["method_version"]): {p["day"]: (p["n"], p["p50"], p["p95"]) for p in s["points"]}
           for s in doc["series"]}
    assert set(got) == set(expected)
    for key, days in expected.items():
        assert set(got[key]) == set(days)
        for day, (n, p50, p95) in days.items():
            assert got[key][day][0] == n
            assert got[key][day][1] == (None if p50 is None else round(p50, 1))  # published: 0.1 ms
            assert got[key][day][2] == (None if p95 is None else round(p95, 1))
    assert doc["since"].endswith("Z") and doc["since"][:2] == "20"  # an ISO time, not unix seconds
    page = httpx.get(f"{server}/model/deepgram/nova-3", params={"metric": "ttfs_ms", "dataset": "stt-starter-clean"})
    svg_text = re.search(r"<svg .*?</svg>", page.text, re.S).group()
    svg = ET.fromstring(svg_text)  # well-formed XML
    ns = {"s": "http://www.w3.org/2000/svg"}
    assert svg.find("s:title", ns).text == "ttfs_ms on stt-starter-clean: daily p50 and p95"
    assert [t.text for t in svg.iterfind(".//s:text", ns) if t.text in ("ms", "day (UTC)")] == ["ms", "day (UTC)"]
    y_ticks = [float(t.text.replace(",", "")) for t in svg.iterfind(".//s:text[@class='y-tick']", ns)]
    top = max(v for d in expected.values() for _, p50, p95 in d.values() for v in (p50, p95) if v)
    assert y_ticks[0] == 0 and y_ticks[-1] >= top
    assert len(list(svg.iterfind(".//s:text[@class='x-tick']", ns))) >= 4
    points = [c.find("s:title", ns).text for c in svg.iterfind(".//s:circle", ns)]
    shown = sum((p50 is not None) + (p95 is not None) for days in expected.values() for n, p50, p95 in days.values())
    assert len(points) == shown > 0  # a p50 point for each day with n >= 5, a p95 with n >= 100, no others
    assert "src=" not in page.text and "<script" not in page.text  # nothing loaded from elsewhere, no JavaScript


def test_an_excluded_metric_shows_its_reason_on_the_model_page(server):
    page = httpx.get(f"{server}/model/{EXCLUDED_MODEL}").text
    assert f"first_partial_ms: n/a, excluded: {exclusion_reason()}".replace("'", "&#39;") in page
    assert "first_partial_ms on stt-starter-clean" not in page and "ttfs_ms on stt-starter-clean" in page


def test_bad_input_is_a_clear_error(server):
    cases = {"/board/stt?window=1y": (400, "window must be one of 24h, 7d, 30d"),
             "/board/xyz": (404, "no board &#39;xyz&#39;"),
             "/board/stt?format=xml": (400, "format must be one of html, csv, json"),
             "/model/deepgram/nova-3?metric=bogus": (400, "metric must be one of"),
             "/model/nobody/nothing@1": (404, "no model"),
             "/api/v1/models/nobody/nothing@1/history": (404, "no model")}
    for path, (status, text) in cases.items():
        response = httpx.get(server + path)
        assert response.status_code == status and text in response.text, (path, response.status_code)


def test_the_alerts_view_lists_open_and_recently_resolved_alerts(server, store):
    def alert(key: str, state: str, opened_days: float, resolved_days: float | None, value: float) -> tuple:
        opened = NOW - opened_days * DAY
        return (f"latency|{key}|ttfs_ms|stt-starter-clean|us-east", "latency", "stt", key, "ttfs_ms",
                "stt-starter-clean", "us-east", "3", state, opened, None if state == "pending" else opened + 600,
                None if resolved_days is None else NOW - resolved_days * DAY, NOW, value, 400.0, 1e-4, 24, 900,
                f"{key} ttfs_ms p50 {value:.0f} ms against 400 ms")
    alerts = [alert("deepgram/nova-3", "firing", 0.2, None, 655.0), alert("openai/whisper-1", "pending", 0.1, None, 520.0),
              alert("cartesia/sonic-3.5", "resolved", 3.0, 2.0, 610.0), alert("old/model@1", "resolved", 20, 19, 700.0)]
    with connect(store) as conn:
        conn.cursor().executemany(
            "INSERT INTO alerts (key, kind, board, model_id, metric, dataset, region, method_version, state, opened_at, "
            "fired_at, resolved_at, last_evaluated_at, recent_value, baseline_value, p_value, n_recent, n_baseline, "
            "summary) VALUES (" + ", ".join(["%s"] * 19) + ")", alerts)
    doc = httpx.get(f"{server}/api/v1/alerts").json()
    assert doc["available"] is True
    assert [(a["model_id"], a["state"]) for a in doc["alerts"]] == [
        ("deepgram/nova-3", "firing"), ("openai/whisper-1", "pending"), ("cartesia/sonic-3.5", "resolved")]
    page = httpx.get(f"{server}/alerts").text
    for heading in ("Firing (1)", "Pending (1)", "Resolved (1)"):
        assert heading in page
    assert "655.0 ms" in page and "deepgram/nova-3 ttfs_ms p50 655 ms against 400 ms" in page
    assert "old/model@1" not in page  # resolved more than 7 days ago


def test_a_store_that_is_down_is_a_503_that_names_no_secret(tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    secret = "s3cret-Pa55word"
    log = tmp_path / "serve.log"
    with serving(f"postgresql://voxwatch:{secret}@127.0.0.1:{closed}/voxwatch", log) as base:
        for path in ("/", "/board/stt", "/model/deepgram/nova-3", "/alerts", "/api/v1/leaderboard",
                     "/conversation/conv-1", "/recording/conv-1.wav", "/api/v1/conversations",
                     "/api/v1/conversations/conv-1", "/board/stt/family/stt-starter", "/api/v1/families/stt-starter",
                     "/board/stt?accent=us"):
            response = httpx.get(base + path)
            assert response.status_code == 503, path
            assert "cannot be reached" in response.text and secret not in response.text, path
            assert "Traceback" not in response.text
        health = httpx.get(f"{base}/api/v1/health")
        assert health.status_code == 503 and health.json()["status"] == "unavailable"
    text = log.read_text()
    assert "cannot read the leaderboard" in text and secret not in text




def test_the_sqlite_store_serves_the_same_board(server, tmp_path):
    with serving(sqlite_store(tmp_path, ROWS), tmp_path / "serve.log") as base:
        sqlite_doc = httpx.get(f"{base}/api/v1/leaderboard").json()
        pg_doc = httpx.get(f"{server}/api/v1/leaderboard").json()
        assert sqlite_doc["rows"] == pg_doc["rows"] and sqlite_doc["notes"] == pg_doc["notes"]
        history = {p: httpx.get(f"{b}/api/v1/models/deepgram/nova-3/history").json()["series"] for p, b in
                   (("sqlite", base), ("postgres", server))}
        assert len(history["sqlite"]) == len(history["postgres"]) > 0
        for a, b in zip(history["sqlite"], history["postgres"]):  # numpy and percentile_cont: the same interpolation
            assert {**a, "points": None} == {**b, "points": None}
            assert [(p["day"], p["n"]) for p in a["points"]] == [(p["day"], p["n"]) for p in b["points"]]
            for p, q in zip(a["points"], b["points"]):
                for field in ("p50", "p95"):
                    assert p[field] == (None if q[field] is None else pytest.approx(q[field], abs=0.1))  # 0.1 ms
        alerts = httpx.get(f"{base}/alerts")
        assert alerts.status_code == 200 and "alerts need the Postgres store" in alerts.text
        assert httpx.get(f"{base}/api/v1/alerts").json()["available"] is False
