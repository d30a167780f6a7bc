"""Conversations in the store (voxwatch/store/conversation_rows.py, conversation_records.py, both stores):
written once with their turns, read back into the very score they came from, so the S2S board from
the store is the board computed in memory; a failed turn and an ended conversation keep their
reasons; no key is ever stored. Then `voxwatch run --board s2s` end to end with the local cascade.

The stored conversations are built by hand on the first turns of the bundled clinic-desk scenario
and scored by the runner's own scoring (no audio is played), so these tests take a second.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import replace
from pathlib import Path

import pytest
from support.postgres import fresh_postgres
from support.processes import run_cli

from voxwatch.conversations.scorecards import stored_scorecards
from voxwatch.conversations.records import rows_of, score_of
from voxwatch.conversations.catalog import ScenarioCatalog, bundled_root
from voxwatch.conversations.hold import first_turns
from voxwatch.conversations.runner import ConversationRun, TurnRun, _score
from voxwatch.conversations.scenario_file import LoadedScenario
from voxwatch.metrics.conversation_aggregate import scorecard
from voxwatch.metrics.conversation_timing import TurnTiming
from voxwatch.foundation.conversation import ModelTurn, ToolCall
from voxwatch.foundation.events import Timeline
from voxwatch.providers.keys import Secret
from voxwatch.providers.s2s.scripted_responder import example_value
from voxwatch.store import open_store
from voxwatch.foundation.store_url import parse_store_url

pytestmark = pytest.mark.e2e

KEY = "sk-convstore-9f8e7d6c5b4a"  # a vendor key the model echoed: it must never reach the store
TURNS = 4
MODEL = "local/cascade-scripted-baseline"


@pytest.fixture(scope="module")
def trial() -> LoadedScenario:
    full = ScenarioCatalog([bundled_root()]).load("clinic-desk", verify=False)
    return first_turns(full, TURNS)[0]


def _calls(loaded: LoadedScenario, index: int) -> list[ToolCall]:
    """The calls the turn requires, with values its matchers accept (as the scripted baseline makes them)."""
    turn = loaded.scenario.turns[index]
    calls = []
    for k, e in enumerate(turn.expected_calls):
        props = loaded.scenario.tool(e.name).parameters.get("properties", {})
        calls.append(ToolCall(f"call_{turn.id}_{k}", e.name, {a: example_value(m, props.get(a)) for a, m in e.args.items()}))
    return calls


def _timing(v2v_ms: float, gap_s: float) -> TurnTiming:
    return TurnTiming(1.0, 2.0, 2.0 + gap_s, gap_s, v2v_ms, False, False, gap_s > 3.0)


def held(loaded: LoadedScenario, conversation_id: str, *, fail_at: int | None = None, skip_call_at: int | None = None,
         v2v: float = 700.0) -> ConversationRun:
    """A conversation as the runner leaves it: every turn answered from the script, except that the
    turn `skip_call_at` makes no call (a missed call) and the turn `fail_at` times out and ends the
    call (no new session: the rest not run); scored by the runner's scoring."""
    run = ConversationRun(conversation_id, MODEL, loaded.identity, loaded.pin, [])
    for i, turn in enumerate(loaded.scenario.turns):
        tr = TurnRun(turn.id, Timeline(), b"")
        run.turns.append(tr)
        if fail_at is not None and i > fail_at:
            tr.status, tr.reason = "not_run", run.reason
            continue
        if i == fail_at:
            tr.status, tr.reason = "timeout", f"no finished reply; the model said {KEY}\x00"
            run.status, run.reason = "ended", f"after turn {turn.id} no new session: auth_error: bad key {KEY}"
            run.reconnections.append(f"turn {turn.id}: timeout")
            continue
        calls = [] if i == skip_call_at else _calls(loaded, i)
        tr.model = ModelTurn(f"{turn.reply} (key {KEY})", calls, caller_transcript=turn.text)
        tr.outputs = [(c, {"ok": True, "echo": KEY, "id": c.call_id}) for c in calls]
        tr.timing = _timing(v2v + 10 * i, 0.4 + 0.2 * i)
        if i == 1:  # a barge-in: the agent's clear 251 ms after the caller's first word, its talk heard to 311 ms
            tr.timing = replace(tr.timing, barge_in_stop_ms=251.0, barge_in_answered=True, barge_in_stop_heard_ms=311.0)
    run.score = asyncio.run(_score(run, loaded.scenario, None, None))
    return run


def stored(run: ConversationRun, loaded: LoadedScenario, started_at: float, emulator: bool = False):
    return rows_of(run, loaded, run_id="run-1", region="local", started_at=started_at, finished_at=started_at + 30,
                   whole=False, secrets=(Secret(KEY),), emulator=emulator)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def store(request, tmp_path_factory):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('convstore') / 'voxwatch.sqlite'}"
        s = open_store(url)
        yield s
        s.close()
        return
    with fresh_postgres() as url:
        s = open_store(url)
        yield s
        s.close()


@pytest.fixture(scope="module")
def conversations(trial, store):
    """Two conversations stored: one whole trial with a missed call, one ended by a failed turn."""
    now = time.time()
    runs = [held(trial, "conv-a", skip_call_at=1), held(trial, "conv-b", fail_at=2, v2v=900.0)]
    for k, run in enumerate(runs):
        row, turns = stored(run, trial, now - 100 + k)
        assert store.add_conversation(row, turns) is True
    return runs


def test_a_conversation_is_stored_once_and_read_back_into_its_score(trial, store, conversations):
    a = conversations[0]
    row, turns = stored(a, trial, time.time())
    assert store.add_conversation(row, turns) is False  # a rewrite of the same id changes nothing
    got_row, got_turns = store.conversation("conv-a")
    assert got_row.started_at < row.started_at and len(got_turns) == TURNS  # the first write's
    assert (got_row.model_id, got_row.scenario, got_row.scenario_version, got_row.scenario_pin, got_row.persona) == \
        (MODEL, "clinic-desk", trial.scenario.version, trial.pin, "default")
    assert (got_row.turns, got_row.failed_turns, got_row.whole, got_row.status) == (TURNS, 0, False, "ok")
    assert score_of(got_row, got_turns) == a.score  # every verdict, fate, call and timing, as scored
    assert (got_turns[1].barge_in_stop_ms, got_turns[1].barge_in_stop_heard_ms) == (251.0, 311.0)
    missed = got_turns[1]
    # t02 made no call and its reply asks the caller a question: over-clarification, charged to tool use
    assert missed.tool_use_correct is False and json.loads(missed.verdicts)["tool_use_correct"]["rule"] == \
        "over_clarification"
    assert got_turns[0].tool_use_correct is True and got_turns[0].state_tracking is None  # not in scope on t01
    calls = json.loads(got_turns[0].calls)
    assert [c["counted_as"] for c in calls] == ["made"] and calls[0]["output"]["id"] == calls[0]["call_id"]
    assert store.conversation("no-such-id") is None


def test_the_board_from_the_store_is_the_board_in_memory(store, conversations):
    boards = stored_scorecards(store.conversations(since=time.time() - 3600))
    assert len(boards) == 1  # one model, scenario, persona and trial length
    assert next(iter(boards.values())) == scorecard([c.score for c in conversations])
    assert [r.conversation_id for r, _ in store.conversations(model_id=MODEL)] == ["conv-a", "conv-b"]
    assert store.conversations(model_id="openai/gpt-realtime-2025-08-28") == []
    assert store.conversations(since=time.time() + 60) == []


def test_a_failed_turn_and_an_ended_conversation_keep_their_reasons(store, conversations):
    row, turns = store.conversation("conv-b")
    assert row.status == "ended" and row.reason.startswith("after turn t03 no new session: auth_error")
    assert (row.failed_turns, row.reconnections, json.loads(row.reconnection_reasons)) == (2, 1, ["turn t03: timeout"])
    assert row.end_state_ok is None  # a trial's end state is not checked
    assert [t.status for t in turns] == ["ok", "ok", "timeout", "not_run"]
    assert turns[2].reason.startswith("no finished reply") and "\x00" not in turns[2].reason
    assert turns[2].no_response is True and turns[2].turn_taking is False and turns[2].turn_taking_failed is True
    assert turns[3].reason == row.reason


def test_no_key_is_stored(store, conversations):
    everything = repr([store.conversation(c.conversation_id) for c in conversations])
    assert KEY not in everything and "***" in everything  # scrubbed, not dropped
    if hasattr(store, "path"):  # SQLite: nor anywhere in its files (the write-ahead log included)
        raw = b"".join(p.read_bytes() for p in Path(store.path).parent.glob(Path(store.path).name + "*"))
        assert b"conv-a" in raw and KEY.encode() not in raw


def test_conversations_against_an_emulator_are_stored_but_not_on_the_board(trial, store, conversations):
    row, turns = stored(held(trial, "conv-emulated"), trial, time.time() - 50, emulator=True)
    assert store.add_conversation(row, turns) is True and store.conversation("conv-emulated")[0].emulator is True
    boards = stored_scorecards(store.conversations())
    assert [s.conversations for s in boards.values()] == [2]


def test_voxwatch_run_holds_stores_and_prints_the_conversation_board(store_url: str, tmp_path: Path):
    env = {"VOXWATCH_RUN_RECORDINGS_DIR": str(tmp_path / "recordings")}
    done = run_cli("run", "--board", "s2s", "--conversation-turns", "1", "--store", store_url, "--no-progress", env=env)
    assert "S2S conversation board: local/cascade-scripted-baseline [baseline: a script, not a model] on clinic-desk@v1#" in done.stdout
    assert "first 1 turns (end state not checked); persona default" in done.stdout
    for name in ("instruction adherence", "tool_use_correct", "kb_grounding", "turn_taking", "V2V per turn"):
        assert name in done.stdout, name
    assert "STT board" not in done.stdout  # one board only
    assert not [line for line in done.stdout.splitlines() if line.startswith("{")]  # no JSON line in the tables
    assert re.search(r"^conversation [0-9a-f]{32}: local/cascade-scripted-baseline on clinic-desk@v1#\w+, persona "
                     r"default: ok, 1 turns \(0 failed\), 0 rotations, 0 reconnections\nturn  status", done.stdout, re.M)
    s = open_store(store_url, create=False)
    try:
        [(row, turns)] = s.conversations()
        record = s.run(row.run_id)
    finally:
        s.close()
    assert (row.turns, row.whole, len(turns), turns[0].status) == (1, False, 1, "ok")
    assert (record.status, record.rows, record.note.split(":")[0]) == ("succeeded", 1, "conversations")
    assert (tmp_path / "recordings" / row.recording).is_file()
    assert turns[0].v2v_ms is not None and turns[0].tool_use_correct is True
    board = run_cli("leaderboard", "--store", store_url).stdout  # the rolling board, from the stored rows
    assert "S2S conversations - rolling 30d" in board and "tool_use_correct" in board
    assert parse_store_url(store_url).path.is_file()


def test_conversation_turns_is_checked_like_every_key():
    bad = run_cli("run", "--conversation-turns", "-1", check=False)
    assert bad.returncode == 2 and "(as [boards.s2s] conversation_turns)" in bad.stderr
    env = run_cli("run", check=False, env={"VOXWATCH_BOARDS_S2S_CONVERSATION_TURNS": "x"})
    assert env.returncode == 2 and "[boards.s2s] conversation_turns = 'x'" in env.stderr
