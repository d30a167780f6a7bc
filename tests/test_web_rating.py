"""Rating collection on the web app (docs/PREFERENCE.md "Rating in the browser"), on real SQLite and
Postgres stores: a rater's link, the pair pages (players in the shown order, the rubrics asked on the
prompt, group by group), answers stored in the pair's A/B terms, a bad form storing nothing, the
audio served only from inside the outputs folder, careless raters flagged by their gold pairs, the
ratings' export, a store that is down; and end to end in headless Chromium on `voxwatch serve`.

The prompts are the bundled preference-starter's (p01: clean, untagged; p03: needs_reasoning); the
outputs are small real WAVs written as `preference generate` writes them, the broken gold audio as
`preference pairs` writes it.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import httpx
import numpy as np
import pytest
from starlette.testclient import TestClient

from voxwatch.foundation.audio import write_wav
from voxwatch.foundation.integrity import file_sha256
from voxwatch.preference.generate import audio_path, prompt_rows
from voxwatch.preference.gold import careless_raters, gold_passes, store_gold_scores
from voxwatch.preference.pairs import broken_audio
from voxwatch.preference.prompt_catalog import BUNDLED, PromptCatalog, bundled_root
from voxwatch.store.preference_rows import GOLD_BROKEN, GOLD_IDENTICAL, OutputRow, PairRow
from voxwatch.foundation.rubrics import asked
from voxwatch.providers.registry import Registry
from voxwatch.store import open_store
from voxwatch.web.app import create_app

from support.postgres import fresh_postgres
from support.processes import run_cli
from support.browser import browser, wait_replaced  # noqa: F401 (a fixture)
from support.web_seed import serving

pytestmark = pytest.mark.e2e

DESIGN = "test-design"
OPERATOR_TOKEN = "operator-" + "o" * 30
OPERATOR = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}
TOKENS = {"ann": "ann-token-" + "x" * 20, "bob": "bob-token-" + "y" * 20, "cy": "cy-token-" + "z" * 20}


@dataclass
class Seeded:
    url: str
    outputs: Path
    pairs: dict[str, PairRow]  # b_first (p03, regular), a_first (p01), identical (gold), broken (gold, A broken)
    raters: dict[str, int]


def _seed(url: str, folder: Path) -> Seeded:
    ps = PromptCatalog([bundled_root()]).load(BUNDLED)
    configs = [c.id for c in Registry.default().preference_configs if c.model.startswith("local/")][:2]
    assert len(configs) == 2
    outputs = folder / "outputs"
    store = open_store(url)
    try:
        store.add_prompts([r for r in prompt_rows(ps) if r.prompt_id in ("p01", "p03")])
        ids: dict[tuple[str, str], int] = {}
        for prompt in ("p01", "p03"):
            for i, config in enumerate(configs):
                relative = audio_path(BUNDLED, config, prompt)
                write_wav(outputs / relative, 0.2 * np.sin(np.arange(4000) * (i + 1) / 9.0), 16000)
                model, thinking, voice = config.split("|")
                ids[(prompt, config)] = store.put_output(OutputRow(
                    None, BUNDLED, prompt, config, model, thinking, voice, "ok", "", 1.0, relative,
                    file_sha256(outputs / relative), 0.25))
        broken = f"gold/{DESIGN}/0000-silence.wav"
        write_wav(outputs / broken, broken_audio("silence", 4000, np.random.default_rng(0)), 16000)
        c0, c1 = configs

        def pair(prompt: str, first: str, a: str, b: str, **gold) -> PairRow:
            return PairRow(None, DESIGN, BUNDLED, prompt, ids[(prompt, a)], ids[(prompt, b)], a, b, first, 1.0, **gold)

        rows = {"b_first": pair("p03", "b", c0, c1), "a_first": pair("p01", "a", c0, c1),
                "identical": pair("p01", "a", c0, c0, gold=GOLD_IDENTICAL, expected_cmos=0),
                "broken": pair("p03", "a", c0, c1, gold=GOLD_BROKEN, expected_cmos=-3, broken_side="a",
                               broken_audio_path=broken, broken_audio_sha256=file_sha256(outputs / broken))}
        for row, pair_id in zip(rows.values(), store.add_pairs(rows.values())):
            row.pair_id = pair_id
        raters = {name: store.add_rater(token, 1.0, name).rater_id for name, token in TOKENS.items()}
    finally:
        store.close()
    return Seeded(url, outputs, rows, raters)


@contextlib.contextmanager
def _store_url(request, kind: str) -> Iterator[str]:
    if kind == "sqlite":
        yield request.getfixturevalue("store_url")
        return
    with fresh_postgres() as url:
        run_cli("db", "upgrade", "--store", url)
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def seeded(request, tmp_path) -> Iterator[Seeded]:
    with _store_url(request, request.param) as url:
        yield _seed(url, tmp_path)


@contextlib.contextmanager
def _client(s: Seeded, ratings_url: str | None = None) -> Iterator[TestClient]:
    """A client of the app as a browser on its own pages is: its POSTs say they come from the site."""
    app = create_app(s.url, ratings_store_url=ratings_url, preference_outputs_dir=s.outputs,
                     operator_token=OPERATOR_TOKEN)
    try:
        with TestClient(app, follow_redirects=False, headers={"Origin": "http://testserver"}) as client:
            yield client
    finally:
        app.state.ratings.close()
        app.state.source.close()


TAGS = {"p01": [], "p03": ["needs_reasoning"]}


def _answers(pair: PairRow, value: int) -> dict[str, str]:
    """The same answer (shown terms) to every rubric asked on the pair's prompt."""
    return {r.name: str(value) for r in asked(TAGS[pair.prompt_id], "clean")}


def _ratings(s: Seeded, **where) -> list:
    store = open_store(s.url)
    try:
        return store.preference_ratings(**where)
    finally:
        store.close()


def test_answers_are_stored_in_the_pairs_terms_and_a_bad_form_stores_nothing(seeded: Seeded):
    ann, pairs = TOKENS["ann"], seeded.pairs
    with _client(seeded) as client:
        home = client.get(f"/rate/{ann}")
        assert home.status_code == 200 and home.headers["cache-control"] == "no-store"
        assert re.search(r'data-field="rated">0<.*data-field="total">4<', home.text, re.DOTALL)
        first = pairs["b_first"].pair_id
        assert f'href="/rate/{ann}/pair/{first}"' in home.text  # the first of the pairs nobody rated

        page = client.get(f"/rate/{ann}/pair/{first}").text
        shown = re.findall(r'data-shown="(\w+)"', page)
        assert shown == ["prompt", "first", "second"]  # the caller's request, then the replies in shown order
        for config in (pairs["b_first"].config_a, pairs["b_first"].config_b, "local/", "espeak"):
            assert config not in page  # the rater never sees a model or configuration
        assert re.findall(r'data-group="(\w+)"', page) == ["overall", "speech", "content", "delivery", "conditional"]
        assert re.findall(r'data-rubric="(\w+)"', page) == [r.name for r in asked(["needs_reasoning"], "clean")]
        assert 'data-rubric="reasoning"' in page and 'data-rubric="multilingual"' not in page
        untagged = client.get(f"/rate/{ann}/pair/{pairs['a_first'].pair_id}").text
        assert "reasoning" not in re.findall(r'data-rubric="(\w+)"', untagged)
        assert 'data-group="conditional"' not in untagged  # a gated rubric only where its gate applies

        full = _answers(pairs["b_first"], 2)
        bad = {"missing": {k: v for k, v in full.items() if k != "prosody"},
               "out of range": {**full, "prosody": "4"}, "not a number": {**full, "prosody": "lots"},
               "gated elsewhere": {**_answers(pairs["a_first"], 1), "reasoning": "1"}}
        for what, form in bad.items():
            target = pairs["a_first"] if what == "gated elsewhere" else pairs["b_first"]
            response = client.post(f"/rate/{ann}/pair/{target.pair_id}", data=form)
            assert response.status_code == 400, what
            assert 'id="form-error"' in response.text and "Nothing was stored." in response.text, what
            assert not _ratings(seeded, rater_id=seeded.raters["ann"]), what
        missing = client.post(f"/rate/{ann}/pair/{first}", data=bad["missing"]).text
        assert "Please answer &#39;Which has the more fitting rhythm" in missing
        assert len(re.findall(r"checked", missing)) == len(full) - 1  # the answers given are kept

        done = client.post(f"/rate/{ann}/pair/{first}", data=full)  # "first better" on a pair shown B first
        assert done.status_code == 303 and done.headers["location"] == f"/rate/{ann}/pair/{pairs['a_first'].pair_id}"
        stored = _ratings(seeded, pair_id=first)
        assert {(r.rubric, r.cmos, r.shown_first, r.rater_id) for r in stored} == {
            (name, -2, "b", seeded.raters["ann"]) for name in full}  # B was better: -2 in A/B terms
        assert all(abs(r.answered_at - time.time()) < 600 for r in stored)
        again = client.post(f"/rate/{ann}/pair/{first}", data={**full, "overall": "-3"})
        assert again.status_code == 409 and "a rating once given is not changed" in again.text  # no raw time
        assert "You have rated this pair already" in client.get(f"/rate/{ann}/pair/{first}").text


def test_an_unknown_token_is_a_404_that_reveals_nothing(seeded: Seeded):
    pair_id = seeded.pairs["a_first"].pair_id
    with _client(seeded) as client:
        for path in ("/rate/nope", f"/rate/nope/pair/{pair_id}", f"/rate/nope/audio/{pair_id}/first.wav",
                     f"/rate/{TOKENS['ann'][:-1]}"):
            response = client.get(path)
            assert response.status_code == 404, path
            assert "This rating link is not known." in response.text and "pair" not in response.text.lower(), path
        post = client.post(f"/rate/nope/pair/{pair_id}", data=_answers(seeded.pairs["a_first"], 1))
        assert post.status_code == 404 and not _ratings(seeded)


def test_the_audio_plays_in_the_shown_order_and_no_path_leads_out(seeded: Seeded):
    ann, pairs = TOKENS["ann"], seeded.pairs
    store = open_store(seeded.url)
    try:
        path_of = {o.output_id: o.audio_path for o in store.preference_outputs(BUNDLED)}
    finally:
        store.close()
    with _client(seeded) as client:
        def audio(name: str, shown: str) -> bytes:
            response = client.get(f"/rate/{ann}/audio/{pairs[name].pair_id}/{shown}.wav")
            assert response.status_code == 200 and response.headers["content-type"] == "audio/wav"
            assert response.content[:4] == b"RIFF"
            return response.content

        b = pairs["b_first"]  # shown B first
        assert audio("b_first", "first") == (seeded.outputs / path_of[b.output_b]).read_bytes()
        assert audio("b_first", "second") == (seeded.outputs / path_of[b.output_a]).read_bytes()
        assert audio("identical", "first") == audio("identical", "second")
        assert audio("broken", "first") == (seeded.outputs / pairs["broken"].broken_audio_path).read_bytes()
        assert audio("broken", "second") == (seeded.outputs / path_of[pairs["broken"].output_b]).read_bytes()
        outside = seeded.outputs.parent / "outside.wav"
        write_wav(outside, np.zeros(100), 16000)
        store = open_store(seeded.url)
        try:  # a stored path that leads out of the folder (as a tampered row would)
            with store._cursor("tamper with") as cur:
                cur.execute(f"UPDATE preference_pairs SET broken_audio_path = {store.MARK} WHERE pair_id = {store.MARK}",
                            ("../outside.wav", pairs["broken"].pair_id))
        finally:
            store.close()
        for path in (f"/rate/{ann}/audio/{pairs['broken'].pair_id}/first.wav",
                     f"/rate/{ann}/audio/{b.pair_id}/third.wav", f"/rate/{ann}/audio/99999/first.wav",
                     f"/rate/{ann}/audio/{b.pair_id}/..%2F..%2Foutside.wav", f"/rate/{ann}/audio/../../outside.wav"):
            response = client.get(path)
            assert response.status_code == 404 and b"RIFF" not in response.content, path


def test_a_gold_answer_passes_near_zero_on_identical_and_for_the_intact_side_on_broken():
    identical = PairRow(1, DESIGN, "s", "p", 1, 1, "c", "c", "a", 0.0, GOLD_IDENTICAL, 0)
    assert [gold_passes(identical, v) for v in range(-3, 4)] == [False, False, True, True, True, False, False]
    for broken_side, passing in (("b", [2, 3]), ("a", [-3, -2])):
        broken = PairRow(2, DESIGN, "s", "p", 1, 2, "c", "d", "b", 0.0, GOLD_BROKEN, 3 if broken_side == "b" else -3,
                         broken_side, "gold/x.wav", "sha")
        assert [v for v in range(-3, 4) if gold_passes(broken, v)] == passing
    with pytest.raises(ValueError, match="not a gold pair"):
        gold_passes(PairRow(3, DESIGN, "s", "p", 1, 2, "c", "d", "a", 0.0), 0)


def test_careless_raters_are_flagged_by_their_gold_pairs(seeded: Seeded, tmp_path):
    pairs = seeded.pairs
    with _client(seeded) as client:
        def rate(who: str, name: str, first_vs_second: int) -> None:
            response = client.post(f"/rate/{TOKENS[who]}/pair/{pairs[name].pair_id}",
                                   data=_answers(pairs[name], first_vs_second))
            assert response.status_code == 303, response.text

        rate("ann", "identical", 0)
        rate("ann", "broken", -3)  # the first (A) is the broken one: "second much better"
        rate("bob", "identical", 3)  # two identical replies "first much better": careless
        rate("bob", "broken", -3)
        rate("cy", "identical", 3)  # one gold answer: too few to judge
    ann, bob, cy = (seeded.raters[n] for n in ("ann", "bob", "cy"))
    store = open_store(seeded.url)
    try:
        scores = store_gold_scores(store)
        assert careless_raters(store) == {bob}
        assert careless_raters(store, min_answers=1) == {bob, cy}
        assert careless_raters(store, pass_share=0.5) == set()  # bob passed half
    finally:
        store.close()
    assert [(scores[r].answered, scores[r].passed, scores[r].careless) for r in (ann, bob, cy)] == [
        (2, 2, False), (2, 1, True), (1, 0, False)]
    ratings = {"ann": len(asked([], "clean")) + len(asked(["needs_reasoning"], "clean"))}
    ratings["bob"], ratings["cy"] = ratings["ann"], len(asked([], "clean"))
    listing = run_cli("preference", "raters", "list", "--store", seeded.url).stdout
    for name, rater_id, pairs_rated, gold, passed, verdict in (("ann", ann, 2, 2, 2, "no"), ("bob", bob, 2, 2, 1, "yes"),
                                                               ("cy", cy, 1, 1, 0, "too few gold")):
        line = rf"^{rater_id}\s+{name}\s+{pairs_rated}\s+{ratings[name]}\s+{gold}\s+{passed}\s+{verdict}$"
        assert re.search(line, listing, re.MULTILINE), (line, listing)
    strict = run_cli("preference", "raters", "list", "--store", seeded.url,
                     env={"VOXWATCH_PREFERENCE_GOLD_MIN_ANSWERS": "1"}).stdout
    assert re.search(rf"^{cy}\s+cy\s+1\s+{ratings['cy']}\s+1\s+0\s+yes$", strict, re.MULTILINE), strict


def test_the_ratings_export_has_rater_ids_and_no_token(seeded: Seeded):
    a = seeded.pairs["a_first"]
    with _client(seeded) as client:
        assert client.post(f"/rate/{TOKENS['ann']}/pair/{a.pair_id}", data=_answers(a, -1)).status_code == 303
        got = client.get("/api/v1/preference/ratings.csv", headers=OPERATOR)
        lines = client.get("/api/v1/preference/ratings.jsonl", headers=OPERATOR)
        assert client.get("/api/v1/preference/ratings.xml", headers=OPERATOR).status_code == 404
        spec = client.get("/api/v1/openapi.json").json()
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(got.text)))
    records = [json.loads(line) for line in lines.text.splitlines()]
    assert len(rows) == len(records) == len(asked([], "clean"))
    assert {(r["rater_id"], r["pair_id"], r["cmos"], r["shown_first"]) for r in rows} == {
        (str(seeded.raters["ann"]), str(a.pair_id), "-1", "a")}
    assert [r["rubric"] for r in records] == [r["rubric"] for r in rows]
    for text in (got.text, lines.text):
        assert not any(token in text for token in TOKENS.values()) and "token" not in text
    for fmt in ("csv", "jsonl"):
        assert f"/api/v1/preference/ratings.{fmt}" in spec["paths"]


def test_a_store_that_is_down_keeps_the_answers_to_send_again(seeded: Seeded, caplog):
    a = seeded.pairs["a_first"]
    form = _answers(a, 2)
    caplog.set_level(logging.WARNING, logger="voxwatch.web")
    with _client(seeded, ratings_url="postgresql://voxwatch:pw-secret@127.0.0.1:1/voxwatch") as client:
        down = client.post(f"/rate/{TOKENS['ann']}/pair/{a.pair_id}", data=form)
        assert down.status_code == 503 and "cannot be reached" in down.text and "127.0.0.1:1" not in down.text
        kept = dict(re.findall(r'<input type="hidden" name="(\w+)" value="(-?\d)">', down.text))
        assert kept == form and '<form method="post" class="retry">' in down.text
        assert client.get(f"/rate/{TOKENS['ann']}").status_code == 503
    assert not _ratings(seeded)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert logged.count("/rate/***") == 2 and TOKENS["ann"] not in logged and "pw-secret" not in logged
    with _client(seeded) as client:  # the store is back: the kept answers, sent again, are stored
        assert client.post(f"/rate/{TOKENS['ann']}/pair/{a.pair_id}", data=kept).status_code == 303
    assert {r.cmos for r in _ratings(seeded)} == {2}


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_in_chromium_a_rater_completes_their_pairs(kind: str, request, tmp_path, browser):  # noqa: F811
    from selenium.webdriver.common.by import By

    with _store_url(request, kind) as url:
        s = _seed(url, tmp_path)
        env = {"VOXWATCH_PREFERENCE_OUTPUTS_DIR": str(s.outputs)}
        with serving(url, tmp_path / "serve.log", env=env) as base:
            link = f"{base}/rate/{TOKENS['ann']}"
            browser.get(link)
            assert browser.find_element(By.CSS_SELECTOR, '[data-field="total"]').text == "4"
            browser.find_element(By.CSS_SELECTOR, "a.next").click()
            # what the rater answers, in shown terms: B-first pair "first better" (A/B: -2); A-first
            # "second slightly better" (-1); identical "about the same"; A broken "second much better"
            plan = {s.pairs["b_first"].pair_id: 2, s.pairs["a_first"].pair_id: -1,
                    s.pairs["identical"].pair_id: 0, s.pairs["broken"].pair_id: -3}
            seen = []
            for _ in plan:
                pair_id = int(re.search(r"/pair/(\d+)$", browser.current_url).group(1))
                seen.append(pair_id)
                players = browser.find_elements(By.CSS_SELECTOR, "figure.player audio")
                assert [p.find_element(By.XPATH, "..").get_attribute("data-shown") for p in players] == \
                    ["prompt", "first", "second"]
                for audio in players:  # each player loads its audio under the page's security policy
                    deadline = time.monotonic() + 20
                    while browser.execute_script("return arguments[0].readyState", audio) < 1 and \
                            time.monotonic() < deadline:
                        time.sleep(0.1)
                    duration = browser.execute_script("return arguments[0].duration", audio)
                    if audio is players[0]:  # the prompt: a spoken request of a second or more
                        assert duration > 1.0
                    else:
                        assert duration == pytest.approx(0.25, abs=0.01)
                rubrics = [f.get_attribute("data-rubric") for f in browser.find_elements(By.CSS_SELECTOR, "fieldset.rubric")]
                prompt = next(p for p in s.pairs.values() if p.pair_id == pair_id).prompt_id
                assert rubrics == [r.name for r in asked(TAGS[prompt], "clean")]
                for name in rubrics:
                    browser.find_element(By.CSS_SELECTOR, f'input[name="{name}"][value="{plan[pair_id]}"]').click()
                form = browser.find_element(By.CSS_SELECTOR, "form.rating-form")
                form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
                wait_replaced(browser, form)  # the next page has replaced this one
            assert sorted(seen) == sorted(plan)
            assert browser.current_url == link  # the last answer leads back to the progress page
            assert browser.find_element(By.CSS_SELECTOR, '[data-field="rated"]').text == "4"
            assert browser.find_element(By.CSS_SELECTOR, '[data-field="done"]').text.startswith("All pairs are rated")
        stored = _ratings(s, rater_id=s.raters["ann"])
        first = {p.pair_id: p.shown_first for p in s.pairs.values()}
        assert {(r.pair_id, r.cmos, r.shown_first) for r in stored} == {
            (pid, v if first[pid] == "a" else -v, first[pid]) for pid, v in plan.items()}
        by_pair = {pid: sum(1 for r in stored if r.pair_id == pid) for pid in plan}
        assert by_pair == {p.pair_id: len(asked(TAGS[p.prompt_id], "clean")) for p in s.pairs.values()}
        store = open_store(url)
        try:
            assert careless_raters(store, min_answers=1) == set()  # she passed both gold pairs
        finally:
            store.close()


def test_the_rater_hears_the_callers_request_of_the_pairs_prompt(seeded: Seeded):
    """The prompt's own WAV from the bundled set (the version the pair was made from), token-checked."""
    from voxwatch.preference.prompt_catalog import PromptCatalog, bundled_root

    ps = PromptCatalog([bundled_root()]).load(BUNDLED)
    pair = seeded.pairs["b_first"]
    with _client(seeded) as client:
        page = client.get(f"/rate/{TOKENS['ann']}/pair/{pair.pair_id}").text
        assert f'src="/rate/{TOKENS["ann"]}/audio/{pair.pair_id}/prompt.wav"' in page
        heard = client.get(f"/rate/{TOKENS['ann']}/audio/{pair.pair_id}/prompt.wav")
        assert heard.status_code == 200 and heard.headers["content-type"] == "audio/wav"
        assert heard.content == ps.audio_path(ps.prompt(pair.prompt_id)).read_bytes()
        assert client.get(f"/rate/not-a-token/audio/{pair.pair_id}/prompt.wav").status_code == 404
        assert client.get(f"/rate/{TOKENS['ann']}/audio/{pair.pair_id}/caller.wav").status_code == 404
