"""The bake-off (/bakeoff, /api/v1/bakeoff, CSV), issue #32 part 5: the same scenario under the same
persona against several agents, side by side, with the conversation board's statistics (intervals
clustered by conversation).

Seeded on real SQLite and Postgres stores: three vendor models and two deployed agents (one on a
loopback address, as a team's agent on its own machine or the reference agent is stored) hold
clinic-desk under the default persona; one vendor model also under a noisy persona (a set of its
own, never pooled); a vendor emulator's conversation (never shown). Each line's figures are held to
metrics.conversation_aggregate.scorecard over that agent's conversations alone. The reference agent
(registered as a baseline by its registry file) is judged on turn-taking alone, as a script with no
tool calls is (issue #40): its line says so, and that it is emulated and a baseline, beside a
retiring vendor model's notice, on the page, in the JSON and in the CSV.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import io
import re
import time
from importlib.resources import files
from pathlib import Path
from typing import Iterator

import httpx
import jsonschema
import numpy as np
import pytest
from starlette.testclient import TestClient

from voxwatch.conversations.records import score_of
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.conversation_aggregate import scorecard, speech_quality
from voxwatch.metrics.published import rounded
from voxwatch.providers.registry import Registry
from voxwatch.store import open_store
from voxwatch.web import openapi
from voxwatch.web.app import create_app

from support.browser import browser  # noqa: F401 (a fixture)
from support.conversation_seed import stored_conversation
from support.postgres import fresh_postgres
from support.processes import REPO
from support.web_seed import serving

ARTIFACTS = REPO / "var" / "test-artifacts"

SCENARIO, PERSONA, NOISY = "clinic-desk", "default", "noisy-street"
AGENTS = {"openai/gpt-realtime-2025-08-28": (700.0, 0.85, False), "gemini/gemini-3.8-live": (800.0, 0.9, False),
          "xai/grok-voice-think-fast-2.0": (750.0, 0.4, False), "agent/front-desk": (650.0, 0.8, False),
          "agent/reference-twilio": (1100.0, 0.95, True)}
"""model -> (V2V around, adherence, held on a loopback address)."""
EMULATED_MS = 98765.4
REFERENCE = "agent/reference-twilio"
REFERENCE_AGENTS = Path(str(files("voxwatch.providers.emulators.agents").joinpath("reference_agents.toml")))
TURN_TAKING_ONLY = ("tool_use_correct", "instruction_following", "kb_grounding", "state_tracking", "ambiguity_handling")
"""What the reference agent's verdicts leave undecided: a script makes no tool call and says no fact."""
TODAY = dt.date(2026, 12, 15)
RETIRING = ("openai/gpt-realtime-2025-08-28", "retiring 2027-01-20; successor openai/gpt-realtime-2.1")


def _conversations() -> list:
    rng, now, found = np.random.default_rng(11), time.time(), []
    for model, (v2v, adherence, loopback) in AGENTS.items():
        for i in range(4):
            found.append(stored_conversation(rng, f"bo-{model.split('/')[1]}-{i}", model=model, scenario=SCENARIO,
                                             persona=PERSONA, region="us-east", started_at=now - (i + 1) * 3600,
                                             turns=6, adherence=adherence, v2v_ms=v2v, method=METHOD_VERSION,
                                             emulator=loopback, quality=2.5 + adherence,
                                             unjudged=TURN_TAKING_ONLY if model == REFERENCE else ()))
    for i in range(3):  # another persona: a set of its own
        found.append(stored_conversation(rng, f"bo-noisy-{i}", model="gemini/gemini-3.8-live", scenario=SCENARIO,
                                         persona=NOISY, region="us-east", started_at=now - (i + 1) * 3600, turns=6,
                                         v2v_ms=900.0, method=METHOD_VERSION))
    found.append(stored_conversation(rng, "bo-vendor-emulator", model="openai/gpt-realtime-2025-08-28",
                                     scenario=SCENARIO, persona=PERSONA, region="us-east", started_at=now - 3600,
                                     turns=6, v2v_ms=EMULATED_MS, method=METHOD_VERSION, emulator=True))
    return found


CONVERSATIONS = _conversations()


def registry() -> Registry:
    """The package registry with the reference agents' file (as `voxwatch emulate` names it), on TODAY."""
    return Registry.default(today=TODAY, files=[REFERENCE_AGENTS])


@contextlib.contextmanager
def _store(kind: str, folder: Path) -> Iterator[str]:
    with (contextlib.nullcontext(f"sqlite:///{folder / 'bakeoff.db'}") if kind == "sqlite" else fresh_postgres()) as url:
        store = open_store(url)
        try:
            assert all(store.add_conversation(row, turns) for row, turns in CONVERSATIONS)
        finally:
            store.close()
        yield url


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def client(request, tmp_path_factory) -> Iterator[TestClient]:
    with _store(request.param, tmp_path_factory.mktemp(request.param)) as url:
        yield TestClient(create_app(url, registry()))


def _doc(client: TestClient, **params: str) -> dict:
    response = client.get("/api/v1/bakeoff", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def test_one_set_per_scenario_and_persona_with_every_agent_side_by_side(client):
    doc = _doc(client)
    sets = {(s["scenario"], s["persona"]): s for s in doc["sets"]}
    assert set(sets) == {(SCENARIO, PERSONA), (SCENARIO, NOISY)}  # the persona is a condition: two sets
    main = sets[(SCENARIO, PERSONA)]
    assert doc["sets"][0]["persona"] == PERSONA  # the set with the most agents first
    assert {x["model_id"] for x in main["lines"]} == set(AGENTS) and main["agents"] == len(AGENTS)
    assert [x["model_id"] for x in sets[(SCENARIO, NOISY)]["lines"]] == ["gemini/gemini-3.8-live"]
    p50s = [x["v2v"]["p50"] for x in main["lines"]]
    assert p50s == sorted(p50s)  # the fastest agent first
    # a vendor emulator's conversation is never compared; a deployed agent on loopback is, and says so
    assert all(x["v2v"]["p50"] < EMULATED_MS / 10 for x in main["lines"])
    by_model = {x["model_id"]: x for x in main["lines"]}
    assert [m for m, x in by_model.items() if x["loopback"]] == ["agent/reference-twilio"]
    assert {m for m, x in by_model.items() if x["deployed_agent"]} == {"agent/front-desk", "agent/reference-twilio"}


def test_each_line_is_the_scorecard_of_that_agents_conversations(client):
    (main,) = _doc(client, scenario=SCENARIO, persona=PERSONA)["sets"]
    for x in main["lines"]:
        mine = [score_of(row, turns) for row, turns in CONVERSATIONS if row.model_id == x["model_id"]
                and row.persona == PERSONA and row.conversation_id != "bo-vendor-emulator"]
        card = scorecard(mine)
        assert x["conversations"] == card.conversations == 4
        assert x["v2v"]["p50"] == rounded(card.v2v.p50, "ms")
        assert x["v2v"]["p50_ci"] == (list(rounded(card.v2v.p50_ci, "ms")) if card.v2v.p50_ci else None)
        assert x["adherence"]["rate"] == rounded(card.adherence.rate, "fraction")
        assert (x["adherence"]["passed"], x["adherence"]["n"]) == (card.adherence.passed, card.adherence.n)
        # four conversations: clustered by conversation; the reference agent decided turn-taking alone: no adherence
        assert (x["adherence"]["interval"] is not None) is (x["model_id"] != REFERENCE)
        quality = speech_quality(mine)  # the replies' speech quality, clustered by conversation
        assert quality.n > 0 and x["speech_quality"]["n"] == quality.n
        assert x["speech_quality"]["mos"] == rounded(quality.mos, "fraction")
        assert x["speech_quality"]["interval"] == rounded(list(quality.interval), "fraction")
        assert x["preliminary"] is True  # under five conversations: said, with the reason
        assert "conversation" in x["preliminary_reason"]


def test_filters_csv_page_and_schema(client):
    noisy = _doc(client, persona=NOISY)
    assert [s["persona"] for s in noisy["sets"]] == [NOISY]
    assert _doc(client, scenario="no-such-scenario")["sets"] == []
    assert client.get("/api/v1/bakeoff", params={"window": "1y"}).status_code == 400
    doc = _doc(client, persona=PERSONA)
    jsonschema.validate(doc, {**openapi.document(), "$ref": "#/components/schemas/Bakeoff"})
    lines = list(csv.DictReader(io.StringIO(client.get("/api/v1/bakeoff", params={"persona": PERSONA,
                                                                                   "format": "csv"}).text)))
    assert [(r["model_id"], float(r["v2v_p50_ms"])) for r in lines] == \
        [(x["model_id"], x["v2v"]["p50"]) for x in doc["sets"][0]["lines"]]
    for r, x in zip(lines, doc["sets"][0]["lines"]):
        assert (float(r["quality_mos"]), int(r["quality_n"])) == (x["speech_quality"]["mos"], x["speech_quality"]["n"])
        assert [float(r["quality_mos_low"]), float(r["quality_mos_high"])] == x["speech_quality"]["interval"]
    page = client.get("/bakeoff", params={"persona": PERSONA}).text
    for x in doc["sets"][0]["lines"]:
        assert f'data-model="{x["model_id"]}"' in page
        assert f'data-field="quality_mos" data-value="{x["speech_quality"]["mos"]}"' in page
    assert page.count('class="loopback"') == 1 and page.count(">emulated (loopback)</small>") == 1
    assert "98765" not in page


@pytest.mark.e2e
def test_in_chromium_a_phone_sees_the_agents_and_no_sideways_scroll(tmp_path, browser):
    """Served by `voxwatch serve` from SQLite: at 390 and 1366 px the page does not scroll sideways
    and every agent's line is there, its V2V p50 the API's."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with _store("sqlite", tmp_path) as url, serving(url, tmp_path / "serve.log") as base:
        doc = httpx.get(f"{base}/api/v1/bakeoff", params={"persona": PERSONA}).json()
        try:
            for width, height in ((390, 844), (1366, 900)):
                browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
                    "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500})
                browser.get(f"{base}/bakeoff?persona={PERSONA}")
                m = browser.execute_script(
                    "return {scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth, "
                    "lines: Array.from(document.querySelectorAll('table.bakeoff tbody tr')).map(r => "
                    "[r.dataset.model, r.querySelector('td[data-field=v2v_p50]').dataset.value])}")
                assert m["scrollWidth"] <= m["innerWidth"] == width, (width, m)
                assert [(model, float(v)) for model, v in m["lines"]] == \
                    [(x["model_id"], x["v2v"]["p50"]) for x in doc["sets"][0]["lines"]]
                shot = ARTIFACTS / f"bakeoff-{width}.png"
                assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 5_000
        finally:
            browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_every_line_says_its_marks_and_each_rate_its_denominator(client):
    """The reference agent's 100 % of turn-taking verdicts beside vendors' shares of tool use too: it has no
    adherence (turn-taking alone never passes it), its line says it was not judged on the others (and is a
    baseline, emulated), each rate says of how many, a retiring model says so; the JSON, the CSV and the
    page alike."""
    (main,) = _doc(client, persona=PERSONA)["sets"]
    lines = {x["model_id"]: x for x in main["lines"]}
    ref = lines[REFERENCE]
    assert (ref["baseline"], ref["loopback"], ref["not_judged"]) == (True, True, list(TURN_TAKING_ONLY))
    assert ref["dimensions"]["tool_use_correct"]["n"] == 0 and ref["dimensions"]["turn_taking"]["n"] > 0
    assert (ref["adherence"]["rate"], ref["adherence"]["n"]) == (None, 0)  # never a pass on turn-taking alone
    assert all(x["not_judged"] == [] and not x["baseline"] for m, x in lines.items() if m != REFERENCE)
    assert (lines[RETIRING[0]]["status"], lines[RETIRING[0]]["notice"]) == ("active", RETIRING[1])
    assert {m: x["status"] for m, x in lines.items()} == {**dict.fromkeys(AGENTS, "active"),
                                                           "agent/front-desk": None}  # not in the registry

    csv_lines = {r["model_id"]: r for r in csv.DictReader(io.StringIO(
        client.get("/api/v1/bakeoff", params={"persona": PERSONA, "format": "csv"}).text))}
    for model, x in lines.items():
        r = csv_lines[model]
        assert (r["baseline"], r["loopback"], r["not_judged"].split()) == (str(x["baseline"]), str(x["loopback"]),
                                                                           x["not_judged"])
        assert (r["status"], r["notice"], r["preliminary_reason"]) == (x["status"] or "", x["notice"] or "",
                                                                        x["preliminary_reason"])
        for rate in ("adherence", "end_state", "interruption", "no_response"):
            assert (int(r[f"{rate}_passed"]), int(r[f"{rate}_n"])) == (x[rate]["passed"], x[rate]["n"]), rate

    page = client.get("/bakeoff", params={"persona": PERSONA}).text
    rows = dict(re.findall(r'<tr data-model="([^"]+)"[^>]*>(.*?)</tr>', page, re.S))
    for model, x in lines.items():
        cells = dict(re.findall(r'<td data-field="(\w+)"[^>]*>(.*?)</td>', rows[model], re.S))
        for rate in ("adherence", "interruption", "no_response"):
            assert f"({x[rate]['passed']}/{x[rate]['n']})" in cells[rate], (model, rate)
        fewer = "judged on fewer dimensions: not on " + ", ".join(TURN_TAKING_ONLY)
        assert (fewer in cells["adherence"]) is (model == REFERENCE)
        assert ("emulated (loopback)" in cells["model"]) is x["loopback"]
        assert (">baseline</small>" in cells["model"]) is x["baseline"]
        assert (RETIRING[1] in cells["model"]) is (model == RETIRING[0])
        assert f"preliminary: {x['preliminary_reason']}" in cells["model"]
