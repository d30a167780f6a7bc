"""A team's own deployed agent through both transports, against the reference agent on loopback
(`voxwatch emulate --vendors agent`): Twilio Media Streams with voxwatch as the phone network, and
raw PCM frames. The agent reports neither its calls nor its words: those verdicts are null with the
reason, its end state is its own backend's (the state endpoint), and its timing comes from the
recording as every agent's does."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from dataclasses import replace
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest
import websockets

from support.processes import cli_in_process, run_cli
from support.reference_agent import BOOKED, FAST, STATE_ENV, booking_trial, reference_agent
from voxwatch.conversations.hold import first_turns
from voxwatch.conversations.runner import run_conversation
from voxwatch.conversations.scorecards import turns_table
from voxwatch.conversations.state_endpoint import endpoint_end_state
from voxwatch.foundation.conversation import CALLS, WORDS
from voxwatch.foundation.events import AUDIO, CLEARED
from voxwatch.foundation.persona import Persona
from voxwatch.foundation.mulaw import to_wire
from voxwatch.metrics.conversation import RULE_UNREPORTED, UNREPORTED
from voxwatch.providers.agents.line import token_variable, url_variable
from voxwatch.providers.registry import Registry
from voxwatch.store import open_store

pytestmark = pytest.mark.realtime

REFERENCE = Path(str(files("voxwatch.providers.emulators.agents").joinpath("reference_agents.toml")))
AGENT_WAITS_MS = 700 + 100  # the quick agent's end-of-turn silence plus its reply delay (support.reference_agent.FAST)


def _registry() -> Registry:
    return Registry.default(files=[REFERENCE])


def _ws(url: str) -> str:
    return url.replace("http://", "ws://", 1)


def _http(url: str) -> str:
    return url.replace("ws://", "http://", 1)


@pytest.fixture(scope="module")
def scenarios_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("scenarios")


@pytest.fixture(scope="module")
def trial(scenarios_dir):
    return booking_trial(scenarios_dir / "clinic-booking")


def test_a_booking_over_twilio_media_streams_is_judged_by_the_agents_own_backend(trial, monkeypatch):
    with reference_agent(trial) as url:
        monkeypatch.setenv(url_variable("reference-twilio"), _ws(url) + "/twilio")
        monkeypatch.setenv(STATE_ENV, _http(url) + "/state")
        registry = _registry()
        model = registry.resolve("agent/reference-twilio")
        adapter = registry.create(model)
        run = asyncio.run(run_conversation(adapter, model.id, model.vendor, trial))
        wrong = {"appointments": [*trial.scenario.initial_state["appointments"],
                                  {"patient_id": "P-1001", "slot_id": "SHAH-0612-0900"}]}
        _, (wrong_ok, wrong_reason) = asyncio.run(endpoint_end_state(trial.scenario.state_endpoint, wrong))
    assert adapter.emulator  # a loopback agent's rows are an emulator's
    assert run.status == "ok" and [t.status for t in run.turns] == ["ok"] * 3, [t.reason for t in run.turns]
    for turn in run.turns:
        assert turn.model is not None and turn.model.unreported == (CALLS, WORDS)
        assert turn.timing is not None and turn.timing.no_response is False
        # the agent waits out the caller's silence, then its reply delay: V2V cannot be shorter
        assert turn.timing.v2v_ms is not None and turn.timing.v2v_ms >= AGENT_WAITS_MS - 100
        assert {e.sample_rate for e in turn.timeline.of(AUDIO)} == {8000}  # mu-law at 8 kHz, as it came
    for score in run.score.turns:
        tool = score.verdicts["tool_use_correct"]
        assert (tool.passed, tool.reason, tool.rule) == (None, UNREPORTED[CALLS], RULE_UNREPORTED)
        assert score.verdicts["kb_grounding"].reason == UNREPORTED[WORDS] and score.expected == ()
        assert score.verdicts["turn_taking"].passed is True
    # the booking happened in the agent's backend, which the state endpoint reported
    assert run.score.end_state_ok is True and run.score.end_state_reason.startswith("state endpoint")
    assert any(r["slot_id"] == BOOKED["slot_id"] for r in run.end_state["appointments"])
    # an answer that does not meet the expectation fails, naming the record it lacks and what it held
    assert wrong_ok is False
    assert "no record matches" in wrong_reason and "SHAH-0612-0900" in wrong_reason
    assert "SHAH-0611-1130" in wrong_reason


def test_one_turn_over_raw_pcm_at_24_khz_with_a_bearer_token(trial, monkeypatch):
    one, whole = first_turns(trial, 1)
    registry = _registry()
    model = replace(registry.resolve("agent/reference-pcm"), sample_rate=24000)
    token = "agent-token-6f1d"
    with reference_agent(trial, pcm_rate=24000, token=token) as url:
        monkeypatch.setenv(url_variable("reference-pcm"), _ws(url) + "/pcm")
        refused = asyncio.run(run_conversation(registry.create(model), model.id, model.vendor, one, whole=whole))
        monkeypatch.setenv(token_variable("reference-pcm"), token)
        run = asyncio.run(run_conversation(registry.create(model), model.id, model.vendor, one, whole=whole))
    assert refused.status == "ended" and "auth_error" in refused.reason and "401" in refused.reason
    assert run.status == "ok" and run.turns[0].status == "ok", run.turns[0].reason
    timing = run.turns[0].timing
    assert timing is not None and timing.v2v_ms is not None and timing.v2v_ms >= AGENT_WAITS_MS - 100
    assert {e.sample_rate for e in run.turns[0].timeline.of(AUDIO)} == {24000}
    assert run.score.end_state_ok is None  # a trial of the first turn cannot reach the end state


def test_a_caller_that_pauses_and_barges_in_is_measured_from_the_recording(trial, monkeypatch):
    """A persona pausing 1.2 s mid-turn (longer than the agent's 0.7 s end-of-turn silence: it answers
    inside the pause) and barging in 300 ms into each reply, against an agent that stops 250 ms
    after the caller's first word: every fact of the behaviours comes from the call recording."""
    options = replace(FAST, barge_in_stop_ms=250.0)
    persona = Persona("pausing-barger", barge_in_ms=300, pause_ms=1200)
    with reference_agent(trial, options) as url:
        monkeypatch.setenv(url_variable("reference-twilio"), _ws(url) + "/twilio")
        registry = _registry()
        model = registry.resolve("agent/reference-twilio")
        run = asyncio.run(run_conversation(registry.create(model), model.id, model.vendor, trial, persona=persona))
    assert [t.status for t in run.turns] == ["ok"] * 3, [t.reason for t in run.turns]
    assert [t.barge_in for t in run.turns] == [False, True, True]
    for turn in run.turns:
        assert turn.pause is not None and turn.timing.pause_ms == 1200
        assert turn.timing.premature is True and turn.timing.interrupted is True  # it answered inside the pause
    for turn in run.turns[1:]:
        # the agent stopped 250 ms after the caller's first word (give or take a busy machine), then answered
        assert 150 <= turn.timing.barge_in_stop_ms <= 400, turn.timing
        assert turn.timing.barge_in_answered is True
    assert run.score.turns[1].behaviour.barge_in_stop_ms == run.turns[1].timing.barge_in_stop_ms
    assert run.persona == persona.identity != Persona("pausing", pause_ms=1200).identity
    assert "barge-in stop ms" in turns_table(run).splitlines()[0]  # `voxwatch scenarios run` shows them per turn


def test_an_agent_streaming_ahead_stops_at_its_clear_and_the_recording_keeps_what_the_network_dropped(trial, monkeypatch):
    """The agent streams each reply 60 ms ahead of real time and stops 250 ms after the caller's first
    word. Over Twilio its `clear` drops the 40-60 ms still queued: the stop is the clear and the
    recording, which keeps every sample received, hears that much more. Over raw PCM nothing is
    dropped: the agent's stop is the end of the audio it sent, the same figure as heard."""
    options = replace(FAST, barge_in_stop_ms=250.0, ahead_ms=60.0)
    persona = Persona("barger", barge_in_ms=150)  # its stop 400 ms into the 600 ms reply, which was all sent by 540
    registry = _registry()
    with reference_agent(trial, options) as url:
        for transport in ("twilio", "pcm"):
            monkeypatch.setenv(url_variable(f"reference-{transport}"), f"{_ws(url)}/{transport}")

        async def both():
            models = [registry.resolve(f"agent/reference-{t}") for t in ("twilio", "pcm")]
            return await asyncio.gather(*(run_conversation(registry.create(m), m.id, m.vendor, trial, persona=persona,
                                                           whole=False) for m in models))

        twilio, pcm = asyncio.run(both())
    for run in (twilio, pcm):
        assert [t.status for t in run.turns] == ["ok"] * 3, [t.reason for t in run.turns]
        assert [t.barge_in for t in run.turns] == [False, True, True]
    for turn in twilio.turns[1:]:
        t = turn.timing
        assert turn.timeline.of(CLEARED), "the line marks the agent's clear"
        assert 150 <= t.barge_in_stop_ms <= 400, t
        assert 25 <= t.barge_in_stop_heard_ms - t.barge_in_stop_ms <= 100, t  # 40-60 ms queued, on a busy machine
    for turn in pcm.turns[1:]:
        t = turn.timing
        assert not turn.timeline.of(CLEARED) and t.barge_in_stop_ms == t.barge_in_stop_heard_ms
        assert 190 <= t.barge_in_stop_ms <= 460, t  # its 250 ms plus the 40-60 ms it had sent ahead
    behaviour = twilio.score.turns[1].behaviour
    assert (behaviour.barge_in_stop_ms, behaviour.barge_in_stop_heard_ms) == \
        (twilio.turns[1].timing.barge_in_stop_ms, twilio.turns[1].timing.barge_in_stop_heard_ms)


def _frame(level: float) -> str:
    """20 ms of a 440 Hz tone at `level` (0: silence) as a Media Streams payload."""
    t = np.arange(160) / 8000
    pcm = (level * 32767 * np.sin(2 * np.pi * 440 * t)).astype("<i2")
    return base64.b64encode(to_wire(pcm.tobytes())).decode()


async def _barge_in(url: str) -> tuple[list[str], int, int]:
    """A raw Media Stream: the caller speaks, waits for the agent's reply, then talks over it. The
    events the agent sent, and how many `media` came after its `clear` while the caller kept talking."""
    events: list[str] = []
    async with websockets.connect(_ws(url) + "/twilio") as ws:
        sid = "MZ" + "1" * 32
        await ws.send(json.dumps({"event": "connected", "protocol": "Call", "version": "1.0.0"}))
        await ws.send(json.dumps({"event": "start", "sequenceNumber": "1", "streamSid": sid, "start": {
            "streamSid": sid, "callSid": "CA" + "1" * 32, "tracks": ["inbound"],
            "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}}}))

        async def send(level: float, frames: int) -> None:
            for _ in range(frames):
                await ws.send(json.dumps({"event": "media", "streamSid": sid, "media": {"payload": _frame(level)}}))
                await asyncio.sleep(0.02)

        async def until_media() -> None:
            while True:
                message = json.loads(await ws.recv())
                events.append(message["event"])
                if message["event"] == "media":
                    return

        await send(0.3, 25)  # half a second of the caller
        waiting = asyncio.create_task(until_media())
        while not waiting.done():
            await send(0.0, 1)  # the line carries silence until the agent answers
        talking = asyncio.create_task(send(0.3, 30))  # the caller talks over the reply for 0.6 s
        after_clear = before_clear = 0
        deadline = time.monotonic() + 3
        while not talking.done() and time.monotonic() < deadline:
            try:
                message = json.loads(await asyncio.wait_for(ws.recv(), 0.1))
            except asyncio.TimeoutError:
                continue
            events.append(message["event"])
            if message["event"] == "media":
                if "clear" in events:
                    after_clear += 1
                else:
                    before_clear += 1
        await talking
    return events, before_clear, after_clear


def test_the_reference_agent_stops_and_clears_when_the_caller_talks_over_it(trial):
    with reference_agent(trial) as url:
        events, before, after = asyncio.run(_barge_in(url))
    assert events[0] == "media" and "clear" in events
    assert after == 0  # not one frame of its reply once it cleared, while the caller went on talking
    assert before < 30  # it stopped within the first 0.6 s of being talked over


@pytest.mark.e2e
def test_voxwatch_holds_stores_and_prints_the_board_of_a_deployed_agent(trial, scenarios_dir, store_url, tmp_path):
    with reference_agent(trial) as url:
        env = {"VOXWATCH_REGISTRY_FILES": str(REFERENCE), url_variable("reference-twilio"): _ws(url) + "/twilio",
               url_variable("reference-pcm"): _ws(url) + "/pcm", STATE_ENV: _http(url) + "/state",
               "VOXWATCH_SCENARIOS_DIR": str(scenarios_dir), "VOXWATCH_RUN_RECORDINGS_DIR": str(tmp_path / "rec"),
               "VOXWATCH_BOARDS_S2S_CONVERSATION_MODELS": "agent/reference-twilio",
               "VOXWATCH_BOARDS_S2S_SCENARIOS": "clinic-booking"}
        done = run_cli("run", "--board", "s2s", "--conversation-turns", "0", "--store", store_url, "--no-progress",
                       env=env)
        # the other transport, held once and not stored: its own board
        held = cli_in_process("scenarios", "run", "clinic-booking", "--model", "agent/reference-pcm", "--turns", "1",
                              env=env)
    assert held.returncode == 0, held.stderr
    assert "S2S conversation board: agent/reference-pcm [baseline: a script, not a model] on clinic-booking@v1#" \
        in held.stdout and "turn_taking" in held.stdout
    assert "agent/reference-twilio on clinic-booking@v1#" in done.stdout and "3 turns (0 failed)" in done.stdout
    assert "1 conversation(s) held against a loopback address are stored but kept off the board" in done.stdout
    store = open_store(store_url, create=False)
    try:
        [(row, turns)] = store.conversations()
    finally:
        store.close()
    assert (row.model_id, row.whole, row.emulator, row.end_state_ok) == ("agent/reference-twilio", True, True, True)
    assert row.end_state_reason == "state endpoint: end state matches"
    assert [t.status for t in turns] == ["ok"] * 3 and all(t.v2v_ms is not None for t in turns)
    assert {t.tool_use_correct for t in turns} == {None}  # the agent reports no calls: null, never failed
    assert (tmp_path / "rec" / row.recording).is_file()


async def _line_against(agent) -> tuple[list[dict], object, float, BaseException | None]:
    """A TwilioLine (quick to give up: no reply within 0.3 s, a reply over after 0.2 s of quiet) to
    an in-process agent that runs `agent(ws, heard)`: what it heard, the turn, how long `respond`
    took, and what it raised."""
    from voxwatch.foundation.events import Timeline
    from voxwatch.providers.agents.twilio import TwilioLine
    from voxwatch.providers.session.endpoints import open_websocket

    heard: list[dict] = []
    async with websockets.serve(lambda ws: agent(ws, heard), "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        timeline = Timeline()
        ws = await open_websocket(f"ws://127.0.0.1:{port}", {}, "agent test", clock=timeline.clock)
        line = await TwilioLine(ws, timeline, quiet_s=0.2, no_reply_s=0.3).opened()
        await asyncio.sleep(0.2)  # the caller has not spoken yet: the line carries silence
        line.start_turn(timeline)
        await line.send_audio(b"\x10\x00" * 320)
        await line.end_audio()
        started = time.monotonic()
        turn, error = None, None
        try:
            turn = await line.respond(None)
        except Exception as exc:  # noqa: BLE001 - the test reads it
            error = exc
        took = time.monotonic() - started
        await line.aclose()
    return heard, turn, took, error


async def _silent_agent(ws, heard) -> None:
    async for message in ws:
        heard.append(json.loads(message))


async def _speaking_agent(ws, heard) -> None:
    """Answers its first caller frame with 100 ms of audio and a mark."""
    async for message in ws:
        heard.append(json.loads(message))
        if heard[-1]["event"] == "media" and heard[-1]["media"]["payload"] != _frame(0.0) and len(heard) > 2:
            sid = heard[1]["streamSid"]
            for _ in range(5):
                await ws.send(json.dumps({"event": "media", "streamSid": sid, "media": {"payload": _frame(0.3)}}))
            await ws.send(json.dumps({"event": "mark", "streamSid": sid, "mark": {"name": "said"}}))


async def _garbling_agent(ws, heard) -> None:
    async for message in ws:
        heard.append(json.loads(message))
        if len(heard) == 3:
            await ws.send(json.dumps({"event": "media", "media": {}}))  # no payload


def test_the_twilio_line_speaks_as_the_network_and_ends_a_turn_by_quiet_or_no_reply():
    heard, turn, took, error = asyncio.run(_line_against(_silent_agent))
    assert error is None and turn.unreported == (CALLS, WORDS) and 0.3 <= took < 1.5  # no reply: an empty turn
    connected, start, *media, stop = heard
    assert connected == {"event": "connected", "protocol": "Call", "version": "1.0.0"}
    assert start["event"] == "start" and start["sequenceNumber"] == "1" and start["streamSid"].startswith("MZ")
    assert start["start"]["mediaFormat"] == {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}
    assert start["start"]["callSid"].startswith("CA") and start["start"]["tracks"] == ["inbound"]
    assert len(media) >= 10 and all(m["event"] == "media" and m["streamSid"] == start["streamSid"] for m in media)
    assert [int(m["sequenceNumber"]) for m in media] == list(range(2, 2 + len(media)))  # numbered after start
    assert [int(m["media"]["chunk"]) for m in media] == list(range(1, 1 + len(media)))
    assert all(len(base64.b64decode(m["media"]["payload"])) == 160 for m in media)  # 20 ms of 8 kHz mu-law
    assert int(media[0]["media"]["timestamp"]) < 100  # milliseconds since the stream started
    assert stop["event"] == "stop" and stop["stop"]["callSid"] == start["start"]["callSid"]  # hung up at the end

    heard, turn, took, error = asyncio.run(_line_against(_speaking_agent))
    assert error is None and 0.2 <= took < 1.5
    assert any(m["event"] == "mark" and m["mark"]["name"] == "said" for m in heard)  # echoed once it played

    heard, turn, took, error = asyncio.run(_line_against(_garbling_agent))
    assert turn is None and getattr(error, "status", None) == "malformed" and "agent" in str(error)
