"""Conversations on the web app: the S2S board's conversation blocks, a conversation's page with its
recording, and their API, served by `voxwatch serve` from real SQLite and Postgres stores.

The stored conversations are held by hand on the first turns of the bundled clinic-desk scenario and
scored by the runner's own scoring (test_conversation_store.held), then written as real rows. Every
number the board page, its CSV and the API show is checked against metrics' scorecard of the
scores the runs were given in memory (the store's round trip is test_conversation_store's).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import re
import time
import wave
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

import httpx
import jsonschema
import pytest
from starlette.testclient import TestClient

from voxwatch.conversations.scorecards import SCORECARD_KEY_FIELDS, stored_scorecards
from voxwatch.conversations.catalog import ScenarioCatalog, bundled_root
from voxwatch.conversations.hold import first_turns
from voxwatch.conversations.runner import ConversationRun
from voxwatch.conversations.scenario_file import LoadedScenario
from voxwatch.metrics.conversation_aggregate import Scorecard, scorecard
from voxwatch.metrics.published import scorecard_record, when
from voxwatch.providers.registry import Registry
from voxwatch.store import open_store
from voxwatch.web.app import create_app
from voxwatch.web.source import open_source

from support.postgres import fresh_postgres
from support.processes import run_cli
from test_conversation_store import MODEL, TURNS, held, stored
from support.browser import browser  # noqa: F401 (a fixture)
from support.web_seed import serving

pytestmark = pytest.mark.e2e

NOW = time.time()
DAY = 86400.0
OTHER_MODEL = "openai/gpt-realtime-2025-08-28"
HOSTILE = "<script>alert('caller')</script> & \"quoted\""
ADDED = "conv-added-later"


@dataclass
class Site:
    base: str
    url: str
    folder: Path
    recordings: Path
    runs: dict[str, ConversationRun]
    started: dict[str, float]
    models: dict[str, str]


@pytest.fixture(scope="module")
def trial() -> LoadedScenario:
    full = ScenarioCatalog([bundled_root()]).load("clinic-desk", verify=False)
    return first_turns(full, TURNS)[0]


def _wav(path: Path, frames: int = 1600) -> bytes:
    """A real two-channel 16-bit WAV of silence."""
    with wave.open(str(path), "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"\0" * 4 * frames)
    return path.read_bytes()


# id -> how it is held, its age in days, its recording (relative to the recordings folder) and model
PLAN = {
    "conv-a": (dict(skip_call_at=1), 0.05, "conv-a.wav", MODEL),  # the one recording there is
    "conv-b": (dict(fail_at=2, v2v=900.0), 0.02, "conv-b.wav", MODEL),  # the file is gone
    "conv-c": (dict(v2v=650.0), 10.0, "../outside.wav", MODEL),  # 30d only; a path out of the folder
    "conv-d": (dict(skip_call_at=0), 2.0, "/{outside}", OTHER_MODEL),  # a block of its own; an absolute path
}


def _seed(url: str, trial: LoadedScenario, folder: Path) -> tuple[dict, dict, dict]:
    runs, started, models = {}, {}, {}
    store = open_store(url)
    try:
        for cid, (how, age, recording, model) in PLAN.items():
            run = held(trial, cid, **how)
            row, turns = stored(run, trial, NOW - age * DAY)
            row.recording, row.model_id = recording.format(outside=folder / "outside.wav"), model
            if cid == "conv-b":
                turns[0].caller_transcript = HOSTILE
            assert store.add_conversation(row, turns)
            runs[cid], started[cid], models[cid] = run, row.started_at, model
        row, turns = stored(held(trial, "conv-emulated"), trial, NOW - 60, emulator=True)
        assert store.add_conversation(row, turns)
    finally:
        store.close()
    return runs, started, models


@contextlib.contextmanager
def _store_url(kind: str, folder: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{folder / 'voxwatch.sqlite'}"
        return
    with fresh_postgres() as url:
        run_cli("db", "upgrade", "--store", url)
        yield url


@contextlib.contextmanager
def _site(kind: str, folder: Path, trial: LoadedScenario) -> Iterator[Site]:
    recordings = folder / "recordings"
    recordings.mkdir()
    _wav(recordings / "conv-a.wav")
    _wav(folder / "outside.wav")
    with _store_url(kind, folder) as url:
        runs, started, models = _seed(url, trial, folder)
        with serving(url, folder / "serve.log", env={"VOXWATCH_RUN_RECORDINGS_DIR": str(recordings)}) as base:
            yield Site(base, url, folder, recordings, runs, started, models)


@pytest.fixture(scope="module")
def sqlite_site(trial, tmp_path_factory) -> Iterator[Site]:
    with _site("sqlite", tmp_path_factory.mktemp("conv-web-sqlite"), trial) as site:
        yield site


@pytest.fixture(scope="module")
def postgres_site(trial, tmp_path_factory) -> Iterator[Site]:
    with _site("postgres", tmp_path_factory.mktemp("conv-web-postgres"), trial) as site:
        yield site


@pytest.fixture(params=["sqlite", "postgres"])
def site(request) -> Site:
    return request.getfixturevalue(f"{request.param}_site")


def expected_blocks(site: Site, days: float) -> dict[str, Scorecard]:
    """Per model (each model is one block here), scorecard of the in-memory scores of its conversations in the window."""
    out: dict[str, list] = {}
    for cid, run in sorted(site.runs.items(), key=lambda kv: site.started[kv[0]]):
        if site.started[cid] >= NOW - days * DAY:
            out.setdefault(site.models[cid], []).append(run.score)
    return {model: scorecard(scores) for model, scores in out.items()}


def _jsonable(summary: Scorecard) -> dict:
    out = json.loads(json.dumps(asdict(summary)))
    out["pass_hat_k"] = {str(k): v for k, v in summary.pass_hat_k.items()}
    return out


def _page_blocks(html: str) -> dict[str, dict[str, dict[str, str]]]:
    """model -> statistic -> {field: cell text} from the board page's conversation blocks."""
    blocks = {}
    for model, body in re.findall(r'<section class="conversation-block" data-model="([^"]+)".*?>(.*?)</section>', html,
                                  re.DOTALL):
        rows = {}
        for stat, cells in re.findall(r'<tr data-stat="([^"]+)">(.*?)</tr>', body, re.DOTALL):
            rows[stat] = {f: re.sub(r"<[^>]+>", "", t).strip()
                          for f, t in re.findall(r'data-field="([a-z_]+)"[^>]*>(.*?)</td>', cells, re.DOTALL)}
        blocks[model] = rows
    return blocks


def _shows(text: str, value: float | None, scale: float, decimals: int) -> None:
    if value is None:
        assert text.startswith("n/a"), text
        return
    number = float(re.match(r"-?[\d.]+", text).group())
    assert abs(number - value * scale) <= 0.5 * 10 ** -decimals + 1e-9, (text, value)


def _check_page_block(rows: dict[str, dict[str, str]], s: Scorecard) -> None:
    rates = {"instruction_adherence": s.adherence, **s.dimensions, "end_state": s.end_state,
             "interruption": s.interruption, "no_response": s.no_response}
    for name, r in rates.items():
        _shows(rows[name]["value"], r.rate, 100, 1)
        assert rows[name]["n"] == f"{r.passed}/{r.n}", name
        if r.interval is None:
            assert rows[name]["ci"] == "n/a"
        else:
            low, high = re.match(r"\[(.+)%, (.+)%\]", rows[name]["ci"]).groups()
            _shows(low, r.interval[0], 100, 1)
            _shows(high, r.interval[1], 100, 1)
    for k, v in s.pass_hat_k.items():
        _shows(rows[f"pass_hat_{k}"]["value"], v, 1, 2)
    _shows(rows["v2v_p50_ms"]["value"], s.v2v.p50, 1, 1)
    _shows(rows["v2v_p95_ms"]["value"], s.v2v.p95, 1, 1)
    assert rows["v2v_p50_ms"]["n"] == str(s.v2v.n)
    _shows(rows["silence_gap_s"]["value"], s.silence_gap_s, 1000, 1)


@pytest.mark.parametrize("window, days", [("30d", 30), ("7d", 7)])
def test_the_board_page_csv_and_api_show_the_metrics_numbers(site: Site, window: str, days: float):
    expected = expected_blocks(site, days)
    assert len(expected) == 2 and sum(s.conversations for s in expected.values()) == (4 if days == 30 else 3)

    store = open_store(site.url)  # the board's one reading of the store agrees with the scores in memory
    try:
        from_store = stored_scorecards(store.conversations(since=NOW - days * DAY))
    finally:
        store.close()
    assert {key[0]: s for key, s in from_store.items()} == expected

    doc = httpx.get(f"{site.base}/api/v1/conversations", params={"window": window}).json()
    assert [b["model_id"] for b in doc["blocks"]] == sorted(expected)
    for block in doc["blocks"]:
        full = expected[block["model_id"]]
        summary = {k: block[k] for k in _jsonable(full)}
        assert summary == json.loads(json.dumps(scorecard_record(_jsonable(full))))  # at the published precision
        assert block["adherence"]["rate"] == round(full.adherence.rate, 4)
        assert block["adherence"]["interval"] == (full.adherence.interval and [round(v, 4) for v in full.adherence.interval])
        assert block["v2v"]["p50"] == (None if full.v2v.p50 is None else round(full.v2v.p50, 1))
        assert (block["scenario"], block["turns"], block["whole"]) == ("clinic-desk", TURNS, False)
    listed = [c["conversation_id"] for c in doc["conversations"]]
    in_window = sorted((c for c in PLAN if site.started[c] >= NOW - days * DAY), key=site.started.get, reverse=True)
    assert listed == in_window and doc["conversations_total"] == len(in_window)  # newest first, no emulated one
    assert doc["conversations"][0]["url"] == f"/conversation/{in_window[0]}"

    page = httpx.get(f"{site.base}/board/s2s", params={"window": window}).text
    shown = _page_blocks(page)
    assert sorted(shown) == sorted(expected)
    for model, s in expected.items():
        _check_page_block(shown[model], s)
    assert re.findall(r'class="conversation-link" href="/conversation/([^"]+)"', page) == in_window
    assert "conv-emulated" not in page

    got = list(csv.DictReader(io.StringIO(httpx.get(f"{site.base}/api/v1/conversations",
                                                   params={"window": window, "format": "csv"}).text)))
    for block in doc["blocks"]:  # the CSV at full precision
        full = expected[block["model_id"]]
        lines = {r["statistic"]: r for r in got if r["model_id"] == block["model_id"]}
        assert all(lines["tool_use_correct"][f] == str(block[f]) for f in SCORECARD_KEY_FIELDS)
        for name, rate in (("instruction_adherence", full.adherence), *full.dimensions.items(),
                           ("end_state", full.end_state), ("no_response", full.no_response)):
            assert (lines[name]["passed"], lines[name]["n"]) == (str(rate.passed), str(rate.n))
            assert lines[name]["value"] == _cell(rate.rate)
            assert lines[name]["ci_low"] == _cell(rate.interval and rate.interval[0])
        assert lines["v2v_p50_ms"]["value"] == _cell(full.v2v.p50)


def _cell(v: float | None) -> str:
    """A CSV cell: full precision, empty for n/a."""
    return "" if v is None else repr(v)


def test_the_model_filter_keeps_one_models_blocks(site: Site):
    doc = httpx.get(f"{site.base}/api/v1/conversations", params={"model": OTHER_MODEL}).json()
    assert [b["model_id"] for b in doc["blocks"]] == [OTHER_MODEL]
    assert [c["conversation_id"] for c in doc["conversations"]] == ["conv-d"]


def test_a_conversation_page_shows_its_turns_calls_and_verdicts(site: Site):
    store = open_store(site.url)
    try:
        row, turns = store.conversation("conv-b")
    finally:
        store.close()
    response = httpx.get(f"{site.base}/conversation/conv-b")
    assert response.status_code == 200
    page = response.text
    assert f"<dd data-field=\"status\">ended: {row.reason}</dd>" in page
    assert "no judge configured" in page and "reconnections</dt><dd data-field=\"reconnections\">1<br><small>turn t03: " \
        "timeout</small>" in page
    assert "<script>" not in page and "&lt;script&gt;alert(&#39;caller&#39;)&lt;/script&gt; &amp; &#34;quoted&#34;" in page
    sections = re.findall(r'<section class="turn".*?</section>', page, re.DOTALL)
    assert len(sections) == len(turns) == TURNS
    for turn, html in zip(turns, sections):
        assert f'data-turn="{turn.turn_id}" data-status="{turn.status}"' in html
        if turn.model_transcript:
            assert turn.model_transcript.replace("'", "&#39;") in html
        for call in json.loads(turn.calls):
            assert f'<td class="text" data-field="name">{call["name"]}</td>' in html
            assert f'<td class="text" data-field="counted_as">{call["counted_as"]}</td>' in html
        for dim, v in json.loads(turn.verdicts).items():
            cells = re.search(rf'<tr data-dimension="{dim}">(.*?)</tr>', html, re.DOTALL).group(1)
            word = {True: "pass", False: "fail", None: "undecided"}[v["passed"]]
            assert f'data-field="verdict">{word}</td>' in cells
            assert f'data-field="reason">{v["reason"]}</td>' in cells.replace("&#39;", "'")
            assert f'data-field="rule">{v["rule"]}</td>' in cells
        if turn.v2v_ms is not None:
            assert f"V2V {turn.v2v_ms:.1f} ms" in html
    assert "no finished reply" in sections[2] and 'data-field="no_response">no response</span>' in sections[2]

    doc = httpx.get(f"{site.base}/api/v1/conversations/conv-b").json()
    assert doc["conversation"]["reason"] == row.reason and doc["conversation"]["turns"] == TURNS
    assert (doc["conversation"]["started_at"], doc["conversation"]["finished_at"]) == (when(row.started_at),
                                                                                        when(row.finished_at))
    assert [t["v2v_ms"] for t in doc["turns"]] == [None if t.v2v_ms is None else round(t.v2v_ms, 1) for t in turns]
    assert doc["recording_url"] is None and "recording" not in doc["conversation"]  # its file is gone
    assert [t["verdicts"] for t in doc["turns"]] == [json.loads(t.verdicts) for t in turns]
    assert [t["calls"] for t in doc["turns"]] == [json.loads(t.calls) for t in turns]
    assert doc["turns"][0]["caller_transcript"] == HOSTILE
    spec = httpx.get(f"{site.base}/api/v1/openapi.json").json()
    for path, call in (("/api/v1/conversations/{conversation_id}", "/api/v1/conversations/conv-a"),
                       ("/api/v1/conversations", "/api/v1/conversations")):
        schema = spec["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        jsonschema.validate(httpx.get(site.base + call).json(), {**schema, "components": spec["components"]})


def test_the_recording_is_served_and_no_path_leads_out_of_its_folder(site: Site):
    page = httpx.get(f"{site.base}/conversation/conv-a").text
    assert '<audio controls preload="none" src="/recording/conv-a.wav">' in page
    wav = httpx.get(f"{site.base}/recording/conv-a.wav", headers={"Accept-Encoding": "gzip"})
    assert wav.status_code == 200 and wav.headers["content-type"] == "audio/wav"
    assert "content-encoding" not in wav.headers  # audio is never gzipped (web/compression.py)
    assert wav.content == (site.recordings / "conv-a.wav").read_bytes()
    assert "media-src 'self'" in wav.headers["content-security-policy"]  # the player may load it
    assert httpx.get(f"{site.base}/api/v1/conversations/conv-a").json()["recording_url"] == "/recording/conv-a.wav"
    for cid in ("conv-b", "conv-c", "conv-d"):  # gone; '../outside.wav'; an absolute path to the same file
        assert "<audio" not in httpx.get(f"{site.base}/conversation/{cid}").text, cid
        assert httpx.get(f"{site.base}/recording/{cid}.wav").status_code == 404, cid
    for path in ("/recording/..%2Foutside.wav", "/recording/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd.wav",
                 "/recording/../outside.wav", "/recording/conv-emulated.wav", "/recording/nope.wav"):
        response = httpx.get(site.base + path)
        assert response.status_code == 404 and b"RIFF" not in response.content, path


def test_an_unknown_or_emulated_conversation_is_a_404(site: Site):
    for cid in ("no-such-conversation", "conv-emulated"):
        page = httpx.get(f"{site.base}/conversation/{cid}")
        assert page.status_code == 404 and f"no conversation &#39;{cid}&#39;" in page.text
        api = httpx.get(f"{site.base}/api/v1/conversations/{cid}")
        assert api.status_code == 404 and api.json() == {"error": f"no conversation {cid!r}"}


def test_without_a_recordings_folder_there_is_no_player(sqlite_site: Site):
    with TestClient(create_app(sqlite_site.url)) as client:
        page = client.get("/conversation/conv-a")
        assert page.status_code == 200 and "<audio" not in page.text and "tool_use_correct" in page.text
        assert client.get("/recording/conv-a.wav").status_code == 404


def test_in_chromium_the_board_links_to_a_conversation_with_its_player(postgres_site: Site, browser):  # noqa: F811
    from selenium.webdriver.common.by import By

    browser.get(f"{postgres_site.base}/board/s2s")
    blocks = browser.find_elements(By.CSS_SELECTOR, "section.conversation-block")
    assert [b.get_attribute("data-model") for b in blocks] == sorted({MODEL, OTHER_MODEL})
    adherence = browser.find_element(By.CSS_SELECTOR, f'section[data-model="{MODEL}"] tr[data-stat="instruction_adherence"] '
                                                      'td[data-field="value"]').text
    _shows(adherence, expected_blocks(postgres_site, 30)[MODEL].adherence.rate, 100, 1)
    browser.find_element(By.CSS_SELECTOR, 'tr[data-conversation="conv-a"] a.conversation-link').click()
    assert browser.current_url.endswith("/conversation/conv-a") and browser.title.startswith("Conversation conv-a")
    audio = browser.find_element(By.TAG_NAME, "audio")
    assert audio.get_attribute("src").endswith("/recording/conv-a.wav")
    # the player loads the file under the page's security policy (preload none: ask it to)
    browser.execute_script("arguments[0].load()", audio)
    deadline = time.monotonic() + 20
    while browser.execute_script("return arguments[0].readyState", audio) < 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert browser.execute_script("return arguments[0].duration", audio) == pytest.approx(0.1, abs=0.01)
    missed = browser.find_element(By.CSS_SELECTOR, '#turn-1 tr[data-dimension="tool_use_correct"]')
    assert missed.find_element(By.CSS_SELECTOR, 'td[data-field="verdict"]').text == "fail"
    assert missed.find_element(By.CSS_SELECTOR, 'td[data-field="rule"]').text == "over_clarification"


CONVERSATION_PAGES = {"s2s": "/board/s2s", "conversation-a": "/conversation/conv-a",
                      "conversation-b": "/conversation/conv-b", "conversation-d": "/conversation/conv-d"}
"""The conversation pages beside test_web_layout's boards: a tool call's JSON, a scenario pin of 64 hex
digits, a long model id."""


def test_conversation_pages_never_scroll_sideways_and_show_the_model_and_pin(postgres_site: Site,
                                                                             browser):  # noqa: F811
    """At 390 and 1366 px (test_web_layout.SIZES) each conversation page is as wide as the window (the
    conversation page was once 677 px wide at 390 px, model id and pin clipped), its model id and pin
    inside it; screenshots to var/test-artifacts/layout-<page>-<width>.png."""
    from test_web_layout import ARTIFACTS, SIZES

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        for size, (width, height) in SIZES.items():
            browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
                "width": width, "height": height, "deviceScaleFactor": 1, "mobile": size == "phone"})
            for page, path in CONVERSATION_PAGES.items():
                browser.get(postgres_site.base + path)
                m = browser.execute_script("""
                    const box = s => { const e = document.querySelector(s); return e && e.getBoundingClientRect().toJSON(); };
                    return {scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
                            boxes: [box('dd[data-field="model"]'), box('dd[data-field="scenario"] small')]};""")
                assert m["innerWidth"] == width and m["scrollWidth"] <= width, (page, size, m)
                for box in m["boxes"] if page != "s2s" else ():
                    assert box and 0 <= box["left"] and box["right"] <= width, (page, size, box)
                shot = ARTIFACTS / f"layout-{page}-{width}.png"
                assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 5_000
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_new_conversation_changes_the_version_and_the_cached_board(kind: str, trial, tmp_path):
    with _store_url(kind, tmp_path) as url:
        store = open_store(url)
        row, turns = stored(held(trial, "conv-first"), trial, NOW - 600)
        store.add_conversation(row, turns)
        store.close()
        source = open_source(url, Registry.default())
        try:
            with serving(url, tmp_path / "serve.log") as base:
                before, version = httpx.get(f"{base}/board/s2s").text, source.version()
                assert httpx.get(f"{base}/board/s2s").text == before  # unchanged store: the cached page
                assert "conv-first" in before and ADDED not in before
                store = open_store(url)
                row, turns = stored(held(trial, ADDED, skip_call_at=0), trial, NOW - 300)
                store.add_conversation(row, turns)  # writes no observation, so no aggregate changes
                store.close()
                assert source.version() != version
                after = httpx.get(f"{base}/board/s2s").text  # --fresh-within 0: the next request sees it
                assert ADDED in after and "(2 conversations)" in after
                assert httpx.get(f"{base}/api/v1/conversations").json()["conversations_total"] == 2
        finally:
            source.close()
