"""Conversations out (issue 43): `voxwatch scenarios run --store` keeps what it held as `voxwatch run`
does, `voxwatch export --what conversations|turns` writes every stored field (CSV and JSONL), and the
API's conversation document carries the same fields. One real conversation is held with the no-key
local cascade into Postgres and carried to SQLite through an export and `voxwatch ingest`; the
filters are checked on seeded rows in both stores."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from starlette.testclient import TestClient

from support.conversation_seed import stored_conversation
from support.processes import cli_in_process, run_cli
from voxwatch.conversations.export import TURN_CONTEXT, TURN_LINE_FIELDS
from voxwatch.metrics.published import rounded_seconds
from voxwatch.store import open_store
from voxwatch.store.conversation_rows import ANCHORS, CONVERSATION_FIELDS, TURN_FIELDS
from voxwatch.web.app import create_app

CASCADE = "local/cascade-scripted-baseline"


def _csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def _export(store: str, *args: str) -> str:
    done = cli_in_process("export", "--store", store, "--no-progress", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def held(postgres_store_url, tmp_path_factory) -> tuple[str, Path, str]:
    """One conversation (the first turn of clinic-desk) held by `voxwatch scenarios run --store` into
    Postgres: (the store's URL, the recordings folder, what the command printed)."""
    recordings = tmp_path_factory.mktemp("recordings")
    done = run_cli("scenarios", "run", "clinic-desk", "--turns", "1", "--store", postgres_store_url,
                   "--recordings", str(recordings))
    return postgres_store_url, recordings, done.stdout


@pytest.mark.e2e
@pytest.mark.realtime
def test_scenarios_run_stores_what_it_held_under_a_run_record(held):
    url, recordings, printed = held
    with contextlib.closing(open_store(url, create=False)) as store:
        [(row, turns)] = store.conversations(model_id=CASCADE)
        run = store.run(row.run_id)
    assert f"stored conversation {row.conversation_id} (1 turns)" in printed
    assert f"run {row.run_id}: 1 of 1 conversation(s) stored" in printed
    assert (row.model_id, row.scenario, row.turns, row.whole, row.emulator) == (CASCADE, "clinic-desk", 1, False, False)
    assert run is not None and run.note.startswith("conversations: 1 planned") and (run.rows, run.planned) == (1, 1)
    assert run.status == ("succeeded" if turns[0].status == "ok" else "failed")
    assert (recordings / row.recording).is_file()  # the stored row names the recording it wrote


@pytest.mark.e2e
@pytest.mark.realtime
def test_a_team_exports_each_turn_with_its_anchors_clocks_transcripts_and_verdicts(held):
    url, recordings, _ = held
    text = _export(url, "--what", "turns", "--format", "csv", "--model", CASCADE)
    assert text.splitlines()[0] == ",".join(TURN_LINE_FIELDS)
    [line] = _csv(text)
    with contextlib.closing(open_store(url, create=False)) as store:
        [(row, [turn])] = store.conversations(model_id=CASCADE)
    assert turn.status == "ok", turn.reason
    assert line["model_id"] == CASCADE and line["recording"] == row.recording and (recordings / line["recording"]).is_file()
    assert line["model_transcript"] and line["caller_transcript"]  # the cascade reports both
    verdicts = json.loads(line["verdicts"])
    assert verdicts["tool_use_correct"]["passed"] is True and json.loads(line["calls"])[0]["name"] == "find_patient"
    start, end, onset = (float(line[name]) for name in ANCHORS)
    assert 0 <= start < end < onset  # the caller spoke, stopped, then the agent answered: on one recording
    assert float(line["gap_s"]) == pytest.approx(onset - end, abs=1e-9)  # the gap is read between the anchors
    # V2V is that gap on a turn answered in time (a busy machine's Whisper may take longer: then null)
    assert line["v2v_ms"] == "" if "True" in (line["no_response"], line["interrupted"]) else \
        float(line["v2v_ms"]) == pytest.approx(1000 * (onset - end), abs=1e-6)
    [record] = [json.loads(x) for x in _export(url, "--what", "turns", "--model", CASCADE).splitlines()]
    assert list(record) == sorted(TURN_LINE_FIELDS) and record["model_onset_s"] == turn.model_onset_s


@pytest.mark.e2e
@pytest.mark.realtime
def test_an_export_of_conversations_is_ingested_into_another_store_whole(held, tmp_path):
    url, _, _ = held
    exported = tmp_path / "conversations.jsonl"
    _export(url, "--what", "conversations", "--model", CASCADE, "--out", str(exported))
    sqlite = f"sqlite:///{tmp_path / 'copy.sqlite'}"
    run_cli("ingest", str(exported), "--store", sqlite, "--no-progress")
    for what in ("conversations", "turns"):
        for fmt in ("csv", "jsonl"):
            assert _export(sqlite, "--what", what, "--format", fmt) == _export(url, "--what", what, "--format", fmt,
                                                                               "--model", CASCADE)


@pytest.mark.e2e
@pytest.mark.realtime
def test_the_apis_conversation_document_carries_every_stored_field(held):
    url, recordings, _ = held
    with contextlib.closing(open_store(url, create=False)) as store:
        [(row, [turn])] = store.conversations(model_id=CASCADE)
    with TestClient(create_app(url, recordings_dir=recordings)) as client:
        doc = client.get(f"/api/v1/conversations/{row.conversation_id}").json()
        spec = client.get("/api/v1/openapi.json").json()
    assert set(doc["conversation"]) == set(CONVERSATION_FIELDS) - {"recording"}  # the file is at recording_url
    assert doc["recording_url"] == f"/recording/{row.conversation_id}.wav"
    [shown] = doc["turns"]
    assert set(shown) == set(TURN_FIELDS)
    assert [shown[name] for name in ANCHORS] == [rounded_seconds(getattr(turn, name)) for name in ANCHORS]
    assert None not in [shown[name] for name in ANCHORS]
    schema = spec["paths"]["/api/v1/conversations/{conversation_id}"]["get"]["responses"]["200"]["content"][
        "application/json"]["schema"]
    jsonschema.validate(doc, {**schema, "components": spec["components"]})
    turn_schema = spec["components"]["schemas"]["ConversationTurn"]
    assert set(turn_schema["required"]) >= set(TURN_FIELDS) and "recording" in turn_schema["properties"][
        "model_onset_s"]["description"]


DAY = 86400.0


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.e2e)])
def seeded(request, tmp_path) -> str:
    """A store of each kind holding three seeded conversations: two of model a (days 1 and 3), one of
    b (day 2); the Postgres store is the module's, beside the held conversation (another model)."""
    url = f"sqlite:///{tmp_path / 'seeded.sqlite'}" if request.param == "sqlite" \
        else request.getfixturevalue("postgres_store_url")
    rng = np.random.default_rng(7)
    with contextlib.closing(open_store(url)) as store:
        for cid, model, day, turns in (("conv-a1", "vendor/a", 1, 3), ("conv-b", "vendor/b", 2, 2),
                                       ("conv-a3", "vendor/a", 3, 4)):
            row, rows = stored_conversation(rng, cid, model=model, scenario="clinic-desk", persona="default",
                                            region="eu", started_at=day * DAY, turns=turns)
            rows[0].caller_speech_start_s, rows[0].caller_speech_end_s, rows[0].model_onset_s = 0.25, 1.5, 2.25
            store.add_conversation(row, rows)
    return url


SEEDED = ("--model", "vendor/a,vendor/b")


def test_the_filters_select_conversations_and_turns_in_both_stores(seeded):
    turns = _csv(_export(seeded, "--what", "turns", "--format", "csv", *SEEDED))
    assert len(turns) == 9 and list(turns[0]) == list(TURN_LINE_FIELDS)
    assert {t["model_id"] for t in turns} == {"vendor/a", "vendor/b"}
    first = next(t for t in turns if t["conversation_id"] == "conv-a1" and t["turn_index"] == "0")
    assert [first[name] for name in ANCHORS] == ["0.25", "1.5", "2.25"]
    assert all(t[name] == "" for t in turns if t["turn_index"] != "0" for name in ANCHORS)  # not measured: empty
    only_a = _csv(_export(seeded, "--what", "conversations", "--format", "csv", "--model", "vendor/a"))
    assert [c["conversation_id"] for c in only_a] == ["conv-a1", "conv-a3"] and list(only_a[0]) == list(CONVERSATION_FIELDS)
    span = _export(seeded, "--what", "conversations", "--since", "1970-01-02T12:00Z", "--until", "1970-01-03T12:00Z")
    [record] = [json.loads(x) for x in span.splitlines()]
    assert set(record) == {"record", "conversation", "turns"} and record["conversation"]["conversation_id"] == "conv-b"
    assert [t["turn_index"] for t in record["turns"]] == [0, 1]
    jsonl = [json.loads(x) for x in _export(seeded, "--what", "turns", *SEEDED).splitlines()]
    assert len(jsonl) == 9 and all(set(t) == set(TURN_CONTEXT) | set(TURN_FIELDS) for t in jsonl)
    assert all(isinstance(t["interrupted"], bool) for t in jsonl)  # SQLite's integers leave as booleans


def test_a_filter_of_observations_or_an_unknown_model_is_refused_in_one_line(seeded, tmp_path):
    out = tmp_path / "turns.csv"
    for args, said in ((("--dataset", "librispeech"), "--dataset: filters of observations"),
                       (("--board", "stt", "--speaker", "s1"), "--board, --speaker: filters of observations"),
                       (("--model", "vendor/nope"), "--model: no stored conversation of vendor/nope")):
        done = cli_in_process("export", "--store", seeded, "--what", "turns", "--out", str(out), *args)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and said in done.stderr, done.stderr
        assert not out.exists()  # refused before a byte


def test_scenarios_run_refuses_a_store_it_cannot_read_before_holding_anything():
    done = cli_in_process("scenarios", "run", "clinic-desk", "--turns", "1", "--store", "mysql://host/db")
    assert done.returncode == 2 and done.stderr.startswith("voxwatch: error: --store:") and done.stdout == ""
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1


def test_a_run_record_is_finished_whatever_ends_its_conversations(tmp_path):
    from dataclasses import replace

    from voxwatch.conversations.tick import ConversationRunRecord, Held, conversation_id

    url = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    row, turns = stored_conversation(np.random.default_rng(3), "conv-1", model="vendor/a", scenario="clinic-desk",
                                     persona="default", region="eu", started_at=DAY, turns=2)
    turns[0].status, turns[1].status = "ok", "timeout"
    row.failed_turns = 1
    with contextlib.closing(open_store(url)) as store:
        with pytest.raises(KeyboardInterrupt):
            with ConversationRunRecord(store, [tmp_path / "spool"], "eu", planned_turns=4, conversations=2) as record:
                assert record.keep(Held(None, replace(row, run_id=record.run.run_id), turns)) is None
                raise KeyboardInterrupt  # Ctrl-C before the second conversation
        run = store.run(record.run.run_id)
        [(kept, _)] = store.conversations()
    assert kept.run_id == run.run_id and (run.rows, run.failed_rows, run.planned) == (2, 1, 4)
    assert run.status == "partial" and run.finished_at is not None
    assert run.note == "conversations: 2 planned; interrupted: KeyboardInterrupt; 1 stored"
    # each repeat of `scenarios run --repeats` is a conversation of its own; the first keeps the id it always had
    ids = [conversation_id("run", "vendor/a", "clinic-desk", "default", repeat) for repeat in range(3)]
    assert len(set(ids)) == 3 and ids[0] == conversation_id("run", "vendor/a", "clinic-desk", "default")
    assert ids[0] == "3cc6958fba6b56f298ca83fa274bbe70"  # a planned conversation's id as stores already hold it
