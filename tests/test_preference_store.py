"""The preference tables on real SQLite and Postgres stores: outputs kept or retried, pairs, raters
known only by their token's hash, ratings checked (range, gate, pair, rater; a batch all or none),
the pairs a rater is shown next, and ratings exported and imported as CSV and JSONL."""

from __future__ import annotations

import json

import pytest
from support.postgres import fresh_postgres
from support.processes import run_cli

from voxwatch.preference.pairs import PairSettings, PairsError, make_pairs
from voxwatch.preference.ratings_io import dumps, export_records, import_file
from voxwatch.store.preference_rows import OutputRow, PromptRow, RatingRow
from voxwatch.foundation.rubrics import RatingError
from voxwatch.store import open_store
from voxwatch.store.preference import token_digest
from test_preference_pairs import outputs_on_disk

pytestmark = pytest.mark.e2e


@pytest.fixture(params=["sqlite", "postgres"])
def url(request, tmp_path):
    if request.param == "sqlite":
        yield request.getfixturevalue("store_url")
    else:
        with fresh_postgres() as pg:
            run_cli("db", "upgrade", "--store", pg)
            yield pg


def seeded(url, tmp_path):
    """A store holding set's 6 prompts (p1 needs reasoning, p2 degraded), 4 configurations' outputs
    (one failed first, then retried), and pairs of seed 0."""
    store = open_store(url)
    tags = {"p1": ["needs_reasoning"]}
    store.add_prompts([PromptRow("set", f"p{j}", "pin", "sha", "text", "cat", "L1", "far-field" if j == 2 else "clean",
                                 json.dumps(tags.get(f"p{j}", [])), True) for j in range(6)])
    outputs = outputs_on_disk(tmp_path)
    first = outputs[0]
    failed = OutputRow(None, first.prompt_set, first.prompt_id, first.config_id, first.model_id, "none", "v",
                       "timeout", "no reply", 0.0)
    assert store.put_output(failed) == 1
    for o in outputs:
        o.output_id = None
        store.put_output(o)
    pairs = make_pairs(store, "set", PairSettings(2, 0.25, 0), tmp_path)
    return store, pairs


def test_outputs_pairs_raters_and_ratings(url, tmp_path):
    store, pairs = seeded(url, tmp_path)
    stored = store.preference_outputs("set")
    retried = next(o for o in stored if o.output_id == 1)
    assert retried.status == "ok" and retried.attempts == 2  # the failure was replaced, and counted
    assert store.put_output(OutputRow(None, "set", "p0", retried.config_id, "m", "none", "v", "error", "x", 0.0)) == 1
    assert store.preference_output(1).status == "ok"  # an ok output is never overwritten
    assert len({o.output_id for o in stored if o.status != "ok"}) == 1  # the failed c9 row is kept
    assert [p.pair_id for p in store.preference_pairs("set:seed0:n2:gold0.25")] == [p.pair_id for p in pairs]
    with pytest.raises(PairsError, match="already stored"):
        make_pairs(store, "set", PairSettings(2, 0.25, 0), tmp_path)

    rater = store.add_rater("secret-token", 1.0, "ann")
    assert rater.token_sha256 == token_digest("secret-token") != "secret-token"
    assert store.rater_by_token("secret-token").rater_id == rater.rater_id and store.rater_by_token("nope") is None
    p1 = next(p for p in pairs if p.prompt_id == "p1")
    p0 = next(p for p in pairs if p.prompt_id == "p0")
    assert store.add_ratings([RatingRow(None, rater.rater_id, p1.pair_id, "reasoning", -2, 5.0, "b"),
                              RatingRow(None, rater.rater_id, p1.pair_id, "overall", 3, 5.0, "b")]) == 2
    bad = [(RatingRow(None, rater.rater_id, p0.pair_id, "reasoning", 1, 6.0, "a"), "asked only on prompts tagged"),
           (RatingRow(None, rater.rater_id, p0.pair_id, "overall", 4, 6.0, "a"), "an integer from -3 to 3"),
           (RatingRow(None, rater.rater_id, 99999, "overall", 1, 6.0, "a"), "no pair 99999"),
           (RatingRow(None, 99999, p0.pair_id, "overall", 1, 6.0, "a"), "no rater 99999"),
           (RatingRow(None, rater.rater_id, p0.pair_id, "overall", 1, 6.0, "left"), "shown_first"),
           (RatingRow(None, rater.rater_id, p1.pair_id, "overall", -3, 6.0, "b"), "already answered")]
    for row, message in bad:
        good = RatingRow(None, rater.rater_id, p0.pair_id, "naturalness", 1, 6.0, "a")
        with pytest.raises(RatingError, match=message):
            store.add_ratings([good, row])
        assert not store.preference_ratings(pair_id=p0.pair_id)  # all or none: the good one was not kept
    assert store.add_ratings([RatingRow(None, rater.rater_id, p1.pair_id, "overall", 3, 5.0, "b")]) == 0  # same answer
    p2 = next(p for p in pairs if p.prompt_id == "p2")
    store.add_ratings([RatingRow(None, rater.rater_id, p2.pair_id, "noise_robustness", 1, 7.0, "a")])  # far-field
    other = store.add_rater("another-token", 2.0)
    store.add_ratings([RatingRow(None, other.rater_id, p0.pair_id, "overall", 0, 8.0, "a")])
    shown = store.pairs_for_rater(rater.rater_id, limit=100)
    assert {p.pair_id for p in shown} == {p.pair_id for p in pairs} - {p1.pair_id, p2.pair_id}
    assert shown[-1].pair_id == p0.pair_id  # the pair someone rated already comes last
    store.close()


def test_ratings_export_and_import_round_trip(url, tmp_path, store_url):
    store, pairs = seeded(url, tmp_path)
    rater = store.add_rater("t1", 1.0)
    rows = [RatingRow(None, rater.rater_id, p.pair_id, "overall", (i % 7) - 3, 10.0 + i, p.shown_first)
            for i, p in enumerate(pairs)]
    store.add_ratings(rows)
    for fmt in ("csv", "jsonl"):
        path = tmp_path / f"ratings.{fmt}"
        path.write_text(dumps(export_records(store), fmt))
        assert import_file(store, path) == (0, len(rows))  # the same store: nothing new
    exported = export_records(store)
    assert [(r["pair_id"], r["cmos"], r["answered_at"], r["shown_first"]) for r in exported] == \
        [(r.pair_id, r.cmos, r.answered_at, r.shown_first) for r in rows]
    store.close()
    twin, twin_pairs = seeded(store_url.replace("voxwatch.sqlite", "twin.sqlite"), tmp_path / "twin-audio")
    twin.add_rater("t1", 1.0)
    for fmt in ("jsonl", "csv"):
        assert import_file(twin, tmp_path / f"ratings.{fmt}")[0] == (len(rows) if fmt == "jsonl" else 0)
    assert dumps(export_records(twin), "csv") == (tmp_path / "ratings.csv").read_text()
    assert len(twin_pairs) == len(pairs)
    broken = tmp_path / "broken.jsonl"
    lines = (tmp_path / "ratings.jsonl").read_text().splitlines()
    good = json.loads(lines[0]) | {"rubric": "naturalness"}
    broken.write_text(json.dumps(good) + "\n" + json.dumps(json.loads(lines[1]) | {"cmos": 9, "rubric": "prosody"}) + "\n")
    with pytest.raises(RatingError, match="broken.jsonl:2"):
        import_file(twin, broken)
    assert not [r for r in twin.preference_ratings() if r.rubric == "naturalness"]  # nothing half-imported
    wrong = tmp_path / "wrong.csv"
    wrong.write_text((tmp_path / "ratings.csv").read_text().replace(",set,", ",other,", 1))
    with pytest.raises(RatingError, match="prompt_set 'other' is not pair"):
        import_file(twin, wrong)
    twin.close()

