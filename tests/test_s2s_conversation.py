"""Multi-turn voice-agent sessions (voxwatch/providers/conversation.py) of the OpenAI Realtime and Gemini Live
adapters against their emulators' scripted agents (ConversationScript), over real sockets: function
calls answered through the handler, transcripts, each turn's reply timed from that turn's own
speech end, a rotation with the history replayed, and the two ways a session ends early.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from typing import Iterator

import pytest
from support.contract import KEY, REGISTRY

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.providers.session.agent_turn import Rotation, parse_call
from voxwatch.providers.base import ProviderError
from voxwatch.foundation.conversation import (CALLER_TEXT, MODEL_TEXT, TOOL_CALL, TOOL_RESULT, AgentSetup,
                                              HistoryItem, ToolCall)
from voxwatch.providers.emulators import server
from voxwatch.providers.emulators.ledger import Ledger, seen
from voxwatch.providers.emulators.scenario import ConversationScript, ScriptedTurn
from voxwatch.foundation.events import AUDIO, CHUNK_SENT, Timeline
from voxwatch.providers.keys import key_variable, vendor_variable
from voxwatch.providers.s2s.openai_realtime import Upsampler
from voxwatch.harness.measure import audio_sent
from voxwatch.harness.pacer import chunk_pcm, paced_send

pytestmark = pytest.mark.realtime

MODELS = {"openai": "openai/gpt-realtime-2025-08-28",
          "gemini": "gemini/gemini-2.5-flash-native-audio-preview-12-2025"}
CLIPS = ("u040", "u041", "u042")  # "That works for me.", "Sure, go ahead.", "No thank you."
RESPONSE_MS = 300.0
TURNS = (
    ScriptedTurn(reply="your order A12 ships tomorrow", calls=(("lookup_order", {"order_id": "A12"}),),
                 heard="that works for me"),
    ScriptedTurn(reply="done, the address is changed and you will get a text",
                 calls=(("update_address", {"order_id": "A12", "city": "Lyon"}), ("send_sms", {"to": "+331234"})),
                 heard="sure go ahead"),
    ScriptedTurn(reply="anything else I can do", heard="no thank you"),
)
SETUP = AgentSetup(instructions="You are a shop's support agent.", tools=(
    {"name": "lookup_order", "description": "Find an order", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}},
    {"name": "update_address", "description": "Change an order's address", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"}, "city": {"type": "string"}}}},
    {"name": "send_sms", "description": "Text the caller", "parameters": {
        "type": "object", "properties": {"to": {"type": "string"}}}},
))


@pytest.fixture(scope="module")
def clips():
    ds = Catalog([bundled_root()]).load("stt-starter-clean")
    by_id = {c.id: c for c in ds.clips}
    return ds, [by_id[i] for i in CLIPS]


def first_chunk(vendor: str, ds, clip) -> bytes:
    """A turn's first audio chunk as the vendor's emulator sees it (OpenAI: upsampled to 24 kHz)."""
    chunk = chunk_pcm(audio_sent(ds, clip), clip.sample_rate, 20)[0]
    return Upsampler().push(chunk) if vendor == "openai" else chunk


def script(vendor: str, ds, clips, **kw) -> ConversationScript:
    anchors = tuple((hashlib.sha256(first_chunk(vendor, ds, c)).hexdigest(), c.speech_start, c.speech_end)
                    for c in clips)
    return ConversationScript(turns=TURNS, response_ms=RESPONSE_MS, leading_silence_ms=60.0, speech_ms=300.0,
                              anchors=anchors, api_key=KEY, **kw)


@contextlib.contextmanager
def emulated(vendor: str, scenario, monkeypatch) -> Iterator[Ledger]:
    ledger = Ledger()
    with server.serve(vendor, scenario, ledger=ledger) as url:
        monkeypatch.setenv(vendor_variable(vendor, "BASE_URL"), url)
        monkeypatch.setenv(key_variable(vendor), KEY)
        yield ledger


async def answer(call: ToolCall) -> dict:
    """The runner's tool handler: a result that names the call, so the emulator's copy can be checked."""
    return {"ok": True, "tool": call.name, "n": len(call.arguments)}


async def talk(vendor: str, ds, turn_clips, history=(), session_box: list | None = None, linger_s: float = 0.0,
               gap_s: float = 0.0):
    """A mini runner: one session, each clip paced in as a turn `gap_s` after the last was answered (the
    runner waits for the model's playout), each turn answered, the session kept `linger_s` after the
    last. Returns the (ModelTurn, Timeline) of every turn."""
    adapter = REGISTRY.create(REGISTRY.resolve(MODELS[vendor]))
    session = await adapter.converse(Timeline(), SETUP, history)
    if session_box is not None:
        session_box.append(session)
    done = []
    try:
        for i, clip in enumerate(turn_clips):
            if i:
                await asyncio.sleep(gap_s)
            timeline = Timeline()
            session.start_turn(timeline)
            await paced_send(session, audio_sent(ds, clip), clip.sample_rate, 20, timeline)
            await session.end_audio()
            done.append((await asyncio.wait_for(session.respond(answer), 10), timeline))
        await asyncio.sleep(linger_s)
    finally:
        await session.aclose()
    return done


def reply_delay_ms(timeline: Timeline, clip) -> float:
    """From the end of the caller's speech (the pacer's schedule: the first chunk's deadline plus the
    clip's speech end) to the first reply audio's arrival. The schedule, not the first write: on a busy
    machine the first write can be late while the later chunks keep their absolute deadlines, and
    timing from that write would read the reply early."""
    first = timeline.first(CHUNK_SENT)
    assert first.deadline_ns is not None and first.deadline_ns <= first.t_ns
    return (timeline.first(AUDIO).t_ns - first.deadline_ns) / 1e6 - clip.speech_end * 1000


@pytest.mark.parametrize("vendor", sorted(MODELS))
def test_a_scripted_conversation_with_tool_calls(vendor, clips, monkeypatch):
    ds, turn_clips = clips
    with emulated(vendor, script(vendor, ds, turn_clips), monkeypatch) as ledger:
        done = asyncio.run(talk(vendor, ds, turn_clips))
        records = ledger.drain()
    assert [t.transcript for t, _ in done] == [t.reply for t in TURNS]
    assert [t.caller_transcript for t, _ in done] == [t.heard for t in TURNS]
    assert [[(c.name, c.arguments) for c in t.calls] for t, _ in done] == [list(t.calls) for t in TURNS]
    for (turn, timeline), scripted, clip in zip(done, TURNS, turn_clips):
        calls = [json.loads(e.text) for e in timeline.of(TOOL_CALL)]
        results = [json.loads(e.text) for e in timeline.of(TOOL_RESULT)]
        assert [(c["name"], c["arguments"]) for c in calls] == list(scripted.calls)
        assert [r["call_id"] for r in results] == [c.call_id for c in turn.calls]
        assert all(c.t_ns <= r.t_ns for c, r in zip(timeline.of(TOOL_CALL), timeline.of(TOOL_RESULT)))
        assert [e.text for e in timeline.of(MODEL_TEXT)] == [scripted.reply]
        assert [e.text for e in timeline.of(CALLER_TEXT)] == [scripted.heard]
        # the reply is timed from this turn's own speech end (the emulator's clock starts afresh each
        # turn): never early, whatever the tool round trips; a clock kept from the first turn would
        # put the later turns' replies seconds early
        assert reply_delay_ms(timeline, clip) >= RESPONSE_MS - 5.0
        assert reply_delay_ms(timeline, clip) < RESPONSE_MS + 2000.0
    outputs = seen(records, "tool_output")
    expected = [{"ok": True, "tool": name, "n": len(args)} for t in TURNS for name, args in t.calls]
    got = [json.loads(o["output"]) if vendor == "openai" else o["response"] for o in outputs]
    assert sorted(got, key=json.dumps) == sorted(expected, key=json.dumps)
    assert [t["index"] for t in seen(records, "turn")] == [0, 1, 2]


@pytest.mark.parametrize("vendor", sorted(MODELS))
def test_a_rotated_session_gets_the_history_and_continues_at_the_next_turn(vendor, clips, monkeypatch):
    ds, turn_clips = clips
    with emulated(vendor, script(vendor, ds, turn_clips), monkeypatch) as ledger:
        [(first, _)] = asyncio.run(talk(vendor, ds, turn_clips[:1]))
        ledger.drain()
        [call] = first.calls
        history = (HistoryItem("user", text=first.caller_transcript),
                   HistoryItem("tool", call=call, output={"ok": True}),
                   HistoryItem("assistant", text=first.transcript))
        [(second, _)] = asyncio.run(talk(vendor, ds, turn_clips[1:2], history=history))
        records = ledger.drain()
    assert second.transcript == TURNS[1].reply
    assert [c.name for c in second.calls] == ["update_address", "send_sms"]
    assert seen(records, "turn") == [{"index": 1, "replayed": 1}]
    replayed = json.dumps(seen(records, "history"))
    for text in (TURNS[0].heard, TURNS[0].reply, call.call_id, "lookup_order"):
        assert text in replayed


def test_openai_caller_transcript_that_comes_after_the_reply_goes_to_its_turn(clips, monkeypatch):
    """The Realtime API transcribes the caller asynchronously: a transcript that comes after the turn
    is over belongs to that turn (by its item id), not to the next one."""
    ds, turn_clips = clips
    with emulated("openai", script("openai", ds, turn_clips, heard_after_reply=True), monkeypatch):
        done = asyncio.run(talk("openai", ds, turn_clips[:2], linger_s=1.0))
    assert [t.caller_transcript for t, _ in done] == [TURNS[0].heard, TURNS[1].heard]
    assert [[e.text for e in timeline.of(CALLER_TEXT)] for _, timeline in done] == [[TURNS[0].heard],
                                                                                    [TURNS[1].heard]]


def test_gemini_caller_transcript_that_comes_after_turn_complete_goes_to_its_turn(clips, monkeypatch):
    """Live transcription fragments have no ordering with the model's turn: fragments that come after
    `turnComplete`, before the next turn's activityStart, are the turn just ended; its words are
    marked once, whole, on that turn (the last turn's when the session closes)."""
    ds, turn_clips = clips
    with emulated("gemini", script("gemini", ds, turn_clips, heard_after_reply=True), monkeypatch):
        done = asyncio.run(talk("gemini", ds, turn_clips[:2], gap_s=1.0, linger_s=1.0))
    assert [t.caller_transcript for t, _ in done] == [TURNS[0].heard, TURNS[1].heard]
    assert [[e.text for e in timeline.of(CALLER_TEXT)] for _, timeline in done] == [[TURNS[0].heard],
                                                                                    [TURNS[1].heard]]
    assert [t.transcript for t, _ in done] == [TURNS[0].reply, TURNS[1].reply]


def test_gemini_turn_complete_right_after_a_call_does_not_end_the_turn(clips, monkeypatch):
    """Some Live models send `turnComplete` right after a `toolCall`, before any speech: the turn goes on
    until the model has spoken after the answers, and the next turn gets none of this one's words."""
    ds, turn_clips = clips
    with emulated("gemini", script("gemini", ds, turn_clips, turn_complete_after_call=True), monkeypatch) as ledger:
        done = asyncio.run(talk("gemini", ds, turn_clips))
        records = ledger.drain()
    assert [t.transcript for t, _ in done] == [t.reply for t in TURNS]
    assert [[(c.name, c.arguments) for c in t.calls] for t, _ in done] == [list(t.calls) for t in TURNS]
    for (turn, timeline), scripted in zip(done, TURNS):
        assert [e.text for e in timeline.of(MODEL_TEXT)] == [scripted.reply]
        assert timeline.of(AUDIO), "the reply's audio is on its own turn's timeline"
        assert all(c.t_ns <= timeline.first(AUDIO).t_ns for c in timeline.of(TOOL_RESULT))
    assert len(seen(records, "tool_output")) == sum(len(t.calls) for t in TURNS)


def test_openai_session_expiry_is_an_error_with_its_reason(clips, monkeypatch):
    ds, turn_clips = clips
    with emulated("openai", script("openai", ds, turn_clips, session_expires_s=0.6), monkeypatch):
        with pytest.raises(ProviderError) as failed:
            asyncio.run(talk("openai", ds, turn_clips[:1]))
    assert failed.value.status == "error"
    assert "session_expired" in str(failed.value) and "code 1001" in str(failed.value)


def test_gemini_goaway_asks_for_a_rotation_and_the_end_is_a_disconnect(clips, monkeypatch):
    ds, turn_clips = clips
    box: list = []
    with emulated("gemini", script("gemini", ds, turn_clips, session_expires_s=0.8), monkeypatch):
        with pytest.raises(ProviderError) as failed:
            asyncio.run(talk("gemini", ds, turn_clips[:1], session_box=box))
    assert failed.value.status == "disconnected" and "goAway" in str(failed.value)
    assert "goAway" in (box[0].rotation_due() or "")


@pytest.mark.parametrize("vendor", sorted(MODELS))
def test_a_connection_dropped_mid_turn_is_a_disconnect(vendor, clips, monkeypatch):
    ds, turn_clips = clips
    box: list = []
    with emulated(vendor, script(vendor, ds, turn_clips, drop_on_turn=1), monkeypatch):
        with pytest.raises(ProviderError) as failed:
            asyncio.run(talk(vendor, ds, turn_clips[:2], session_box=box))
    assert failed.value.status == "disconnected", str(failed.value)
    assert "1006" in str(failed.value)


def test_rotation_is_due_before_the_documented_limit():
    now = [0]
    timeline = Timeline(clock=lambda: now[0])
    rotation = Rotation(timeline, limit_s=600, margin_s=120)
    now[0] = int(479e9)
    assert rotation.due() is None
    now[0] = int(480e9)
    assert "600" in rotation.due()
    assert Rotation(timeline, limit_s=None).due() is None


def test_call_arguments_are_parsed_or_kept_raw():
    assert parse_call("c1", "f", '{"a": 1}').arguments == {"a": 1}
    assert parse_call("c1", "f", {"a": 1}).arguments == {"a": 1}
    assert parse_call("c1", "f", '{"a": ').arguments == {"_raw": '{"a": '}
    assert parse_call("c1", "f", "[1]").arguments == {"_raw": "[1]"}
    assert parse_call("c1", "f", "").arguments == {}
