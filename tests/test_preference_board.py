"""The published preference board: `voxwatch preference fit` on real SQLite and Postgres stores stores
a snapshot whose numbers are metrics' own (board, by_group, by_rubric, by_category on the same
ratings, assembled here independently of the reader), `preference board` and the web page and API
show that snapshot, ranks are shared where intervals overlap, careless raters passed in `exclude`
are left out, and an empty store says so."""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pytest
from starlette.testclient import TestClient

from support.processes import run_cli
from test_web_conversations import _store_url
from support.preference_seed import CARELESS, CONFIGS, RATERS, seed_store
from voxwatch.metrics.preference import Ratings, ratings, regroup
from voxwatch.metrics.preference_bootstrap import SEED, board, by_category, by_group
from voxwatch.metrics.ranking import interval_ranks
from voxwatch.preference.standings_format import NO_BOARD, NO_RATINGS, NOT_FITTED, document, to_text
from voxwatch.preference.gold import careless_raters
from voxwatch.preference.standings import fit
from voxwatch.providers.registry import Registry
from voxwatch.store import open_store
from voxwatch.store.preference_fits import FitRow
from voxwatch.web.app import create_app
from voxwatch.web.source import open_source

pytestmark = pytest.mark.e2e

RESAMPLES = 50


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def fitted(request, tmp_path_factory):
    """A seeded store, fitted by the CLI as a user runs it (50 resamples)."""
    with _store_url(request.param, tmp_path_factory.mktemp(request.param)) as url:
        store = open_store(url)
        seed_store(store)
        store.close()
        out = run_cli("preference", "fit", "--resamples", str(RESAMPLES), "--store", url).stdout
        yield url, out


def expected_ratings(store, leave_out: set[int] = frozenset()) -> Ratings:
    """The study's ratings as the test reads them: straight from the rows, gold pairs dropped."""
    pairs = {p.pair_id: p for p in store.preference_pairs()}
    rows = [x for x in store.preference_ratings() if not pairs[x.pair_id].gold and x.rater_id not in leave_out]
    return ratings([str(x.rater_id) for x in rows], [f"sim/{pairs[x.pair_id].prompt_id}" for x in rows],
                   [pairs[x.pair_id].config_a for x in rows], [pairs[x.pair_id].config_b for x in rows],
                   [x.shown_first == "a" for x in rows], [x.cmos for x in rows], [x.rubric for x in rows])


def _section(doc: dict, by: str, key: str = "overall") -> dict:
    return next(s for s in doc["sections"] if s["by"] == by and s["key"] == key)


def _agrees(section: dict, b, r: Ratings) -> None:
    """Every row of a stored board is metrics' entry of the same name, with its counts over `r`."""
    shown = {row["name"]: row for row in section["rows"]}
    assert set(shown) == set(b.configs) and section["ratings"] == b.ratings == len(r)
    for i, name in enumerate(b.configs):
        row = shown[name]
        assert (row["elo"], row["low"], row["high"]) == pytest.approx((b.elo[i], b.low[i], b.high[i]), abs=1e-9)
        assert (row["crossed_low"], row["crossed_high"]) == pytest.approx((b.crossed_low[i], b.crossed_high[i]),
                                                                          abs=1e-9)
        involved = (r.a == i) | (r.b == i)
        assert row["ratings"] == involved.sum() and row["raters"] == len(set(r.rater[involved]))
        assert row["prompts"] == len(set(r.prompt[involved]))
    assert [row["rank"] for row in section["rows"]] == sorted(row["rank"] for row in section["rows"])


def test_the_stored_fit_is_metrics_boards_of_the_stored_ratings(fitted):
    url, printed = fitted
    store = open_store(url)
    row = store.latest_preference_fit()
    r = expected_ratings(store)
    store.close()
    doc = json.loads(row.boards)
    overall = r.of_rubric("overall")
    assert (row.ratings, row.raters, row.resamples) == (len(r), RATERS, RESAMPLES)
    assert row.method_version == doc["method_version"]
    models = {c: c.split("|")[0] for c in CONFIGS}
    _agrees(_section(doc, "model"), by_group(overall, models, RESAMPLES, SEED), regroup(overall, models))
    _agrees(_section(doc, "config"), board(overall, RESAMPLES, SEED), overall)
    _agrees(_section(doc, "rubric", "naturalness"), board(r.of_rubric("naturalness"), RESAMPLES, SEED),
            r.of_rubric("naturalness"))
    voices = {c: f"{c.split('|')[0]}|{c.split('|')[2]}" for c in CONFIGS}
    _agrees(_section(doc, "voice"), by_group(overall, voices, RESAMPLES, SEED), regroup(overall, voices))
    difficulty = {f"sim/q{j:02d}": "L1" if j < 6 else "L3" for j in range(12)}
    label = np.array([difficulty[p] for p in overall.prompts])[overall.prompt]
    _agrees(_section(doc, "category", "difficulty=L3"), by_category(overall, difficulty, RESAMPLES, SEED)["L3"],
            overall.subset(label == "L3"))
    assert {s["key"] for s in doc["sections"] if s["by"] == "category"} == {
        "category=factual", "category=reasoning", "difficulty=L1", "difficulty=L3", "condition=clean",
        "condition=indoor-noise"}
    assert set(doc["engines"]) == {"ordinal~massey", "ordinal~classic", "massey~classic"}
    assert doc["clusters"]["rubrics"] == ["naturalness", "overall", "prosody"] and doc["clusters_reason"] is None
    # the CLI printed the headline board it stored
    top = _section(doc, "model")["rows"][0]
    assert f"stored preference fit {row.fit_id}" in printed and re.search(rf"\b{top['name']}\s+{top['elo']:.0f}\b",
                                                                         printed)


def test_ranks_are_shared_where_intervals_overlap(fitted):
    assert interval_ranks([990, 1000, 1030, float("nan")], [1010, 1020, 1050, float("nan")]) == [2, 2, 1, None]
    assert interval_ranks([900, 905], [950, 960]) == [1, 1]  # two overlapping intervals tie
    store = open_store(fitted[0])
    doc = json.loads(store.latest_preference_fit().boards)
    store.close()
    config = _section(doc, "config")["rows"]
    ranks = {x["name"]: x["rank"] for x in config}
    for x in config:  # the rule itself, on every stored row
        assert x["rank"] == 1 + sum(1 for y in config if y["low"] > x["high"])
    alto, bass = (next(x for x in config if x["name"] == n) for n in ("m1|none|alto", "m1|none|bass"))
    assert alto["low"] < bass["high"] and bass["low"] < alto["high"]  # 0.1 logits apart: they overlap
    top = [n for n, k in ranks.items() if k == 1]
    assert len(top) >= 2  # the best configurations' intervals overlap: they share rank 1


def test_the_cli_prints_the_stored_board_as_text_csv_and_json(fitted):
    url, _ = fitted
    store = open_store(url)
    doc = document(store.latest_preference_fit(), "rubric")
    store.close()
    as_json = json.loads(run_cli("preference", "board", "--by", "rubric", "--format", "json", "--store", url).stdout)
    assert as_json == doc and {s["key"] for s in doc["sections"]} == {"overall", "naturalness", "prosody"}
    lines = list(csv.DictReader(io.StringIO(run_cli("preference", "board", "--by", "rubric", "--format", "csv",
                                                    "--store", url).stdout)))
    assert len(lines) == sum(len(s["rows"]) for s in doc["sections"])
    first = doc["sections"][0]["rows"][0]
    assert float(lines[0]["elo"]) == first["elo"] and int(lines[0]["ratings"]) == first["ratings"]
    text = run_cli("preference", "board", "--by", "voice", "--store", url).stdout
    assert "Per voice" in text and f"{doc['ratings']} ratings by {doc['raters']} raters" in text


def test_careless_raters_passed_in_exclude_are_left_out(store_url):
    store = open_store(store_url)
    seed_store(store)
    everyone = json.loads(fit(store, resamples=RESAMPLES).boards)
    row = fit(store, exclude={CARELESS}, resamples=RESAMPLES)
    careful = json.loads(row.boards)
    r = expected_ratings(store, {CARELESS})
    store.close()
    assert row.raters == RATERS - 1 and everyone["raters"] == RATERS
    assert careful["excluded_ratings"] > 0 and careful["ratings"] == len(r)
    config = _section(careful, "config")
    assert config["raters"] == RATERS - 1 and all(x["raters"] <= RATERS - 1 for x in config["rows"])
    _agrees(config, board(r.of_rubric("overall"), RESAMPLES, SEED), r.of_rubric("overall"))
    before = {x["name"]: x["elo"] for x in _section(everyone, "config")["rows"]}
    assert any(abs(x["elo"] - before[x["name"]]) > 1 for x in config["rows"])
    run_cli("preference", "fit", "--resamples", "5", "--exclude-raters", str(CARELESS), "--store", store_url)
    store = open_store(store_url)
    assert store.latest_preference_fit().raters == RATERS - 1
    store.close()
    refused = run_cli("preference", "fit", "--exclude-raters", "ann", "--store", store_url, check=False)
    assert refused.returncode != 0 and "rater ids" in refused.stderr + refused.stdout


def test_the_page_and_the_api_show_the_stored_fit(fitted):
    url, _ = fitted
    store = open_store(url)
    row = store.latest_preference_fit()
    store.close()
    doc = document(row)
    with TestClient(create_app(url)) as client:
        page = client.get("/board/preference")
        assert page.status_code == 200
        html = page.text
        assert f"v{row.method_version}" in html and f">{row.ratings}<" in html and f">{row.raters}<" in html
        assert "multiway variance" in html and "Rubric clusters" in html
        for x in _section(doc, "model")["rows"]:
            cells = re.search(rf'<tr data-name="{x["name"]}">(.*?)</tr>', html, re.S).group(1)
            assert f'data-field="rank">{x["rank"]}<' in cells and f'data-field="elo">{x["elo"]:.0f}<' in cells
            assert f'{x["low"]:.0f} .. {x["high"]:.0f}' in cells and f'data-field="raters">{x["raters"]}<' in cells
        rubric_page = client.get("/board/preference?by=rubric").text
        assert 'data-key="naturalness"' in rubric_page and 'data-by="model"' not in rubric_page
        assert client.get("/api/v1/preference").json() == doc
        assert client.get("/api/v1/preference?by=voice").json() == document(row, "voice")
        got = client.get("/api/v1/preference?by=config&format=csv")
        assert got.headers["content-type"].startswith("text/csv")
        lines = list(csv.DictReader(io.StringIO(got.text)))
        assert [(x["name"], float(x["elo"])) for x in lines] == [(x["name"], x["elo"])
                                                                 for x in _section(doc, "config")["rows"]]
        assert client.get("/api/v1/preference?by=nope").status_code == 400
        assert client.get("/board/preference?by=nope").status_code == 400


def test_a_new_fit_changes_the_sources_version(fitted):
    url, _ = fitted
    source = open_source(url, Registry.default())
    try:
        before, shown = source.version(), source.preference_fit()
        store = open_store(url)
        store.add_preference_fit(type(shown)(None, shown.fitted_at + 1, shown.method_version, shown.ratings,
                                             shown.raters, shown.resamples, shown.boards))
        store.close()
        assert source.version() != before and source.preference_fit().fit_id == shown.fit_id + 1
    finally:
        source.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_an_empty_store_says_there_are_no_ratings_yet(kind, tmp_path):
    with _store_url(kind, tmp_path) as url:
        open_store(url).close()
        with TestClient(create_app(url)) as client:
            page = client.get("/board/preference")
            assert page.status_code == 200 and NOT_FITTED.split(":")[0] in page.text
            assert client.get("/api/v1/preference").json()["fitted"] is False
            run_cli("preference", "fit", "--resamples", "5", "--store", url)
            page = client.get("/board/preference")
            assert page.status_code == 200 and NO_RATINGS in page.text
            assert client.get("/api/v1/preference").json()["reason"] == NO_RATINGS
        assert NO_RATINGS in run_cli("preference", "board", "--store", url).stdout


def test_names_on_the_page_are_escaped(store_url):
    """A configuration id is text from the store: the page shows it, never runs it."""
    hostile = "<script>alert('x')</script>|none|v&"
    rows = [{"rank": 1, "name": hostile, "elo": 1010.0, "low": 990.0, "high": 1030.0, "crossed_low": 985.0,
             "crossed_high": 1035.0, "missing": 0, "ratings": 4, "raters": 2, "prompts": 2}]
    doc = {"method_version": "6", "ratings": 4, "raters": 2, "excluded_ratings": 0, "resamples": 5, "seed": SEED,
           "interval": "the interval", "headline": "model", "engines": {}, "clusters": None,
           "clusters_reason": "<b>too few</b>",
           "sections": [{"by": "model", "key": "overall", "title": "Models <i>", "ratings": 4, "raters": 2,
                         "prompts": 2, "resamples": 5, "first": 0.0, "rows": rows}]}
    store = open_store(store_url)
    store.add_preference_fit(FitRow(None, 1.0, "6", 4, 2, 5, json.dumps(doc)))
    store.close()
    with TestClient(create_app(store_url)) as client:
        html = client.get("/board/preference").text
    assert "<script>" not in html and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;|none|v&amp;" in html
    assert "<b>too few</b>" not in html and "&lt;b&gt;too few&lt;/b&gt;" in html and "Models &lt;i&gt;" in html


def test_the_fit_leaves_out_the_raters_their_gold_pairs_caught(store_url):
    """`preference fit` asks preference/gold.py for the careless raters and leaves them out by itself:
    with one gold answer enough to judge a rater, everyone who rated the identical gold pair's
    overall beyond +-1 is careless."""
    store = open_store(store_url)
    seed_store(store)
    careless = careless_raters(store, pass_share=0.8, min_answers=1)
    store.close()
    assert 0 < len(careless) < RATERS  # the seeded gold answers are random: some pass, some do not
    out = run_cli("preference", "fit", "--resamples", "5", "--store", store_url,
                  env={"VOXWATCH_PREFERENCE_GOLD_MIN_ANSWERS": "1"}).stdout
    assert f"leaving out {len(careless)} careless rater(s)" in out
    store = open_store(store_url)
    assert store.latest_preference_fit().raters == RATERS - len(careless)
    store.close()


def test_a_breakdown_the_fit_has_no_board_for_says_why():
    """Ratings between configurations of one model only: there is no model board, and the headline
    says so (and where to look) rather than showing nothing."""
    config = {"by": "config", "key": "overall", "title": "Configurations", "ratings": 4, "raters": 2, "prompts": 2,
              "resamples": 5, "first": 0.0, "rows": []}
    boards = {"excluded_ratings": 0, "interval": "the interval", "engines": {}, "clusters": None,
              "clusters_reason": None, "sections": [config]}
    row = FitRow(1, 1.0, "6", 4, 2, 5, json.dumps(boards))
    assert document(row, "model")["reason"] == NO_BOARD.format(by="model")
    assert document(row, "config")["reason"] is None and document(row)["reason"] is None
    assert "No model board in this fit" in to_text(document(row, "model"))
