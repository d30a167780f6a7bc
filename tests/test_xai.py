"""Contract tests: the xAI Voice Agent adapter against its loopback emulator, over real sockets.

V2V is measured back from the written call recording; the emulator's reply starts `response_ms`
(+ jitter) after the caller's speech end, anchored on the session's first append (the clip's first
16 kHz chunk, sent as it is: the adapter asks xAI for 16 kHz input). Then the protocol rules the
adapter relies on: the key on the upgrade, the audio formats xAI takes, commit only with server VAD
off, and which `error` events end a turn.
"""

import asyncio
import json
import os

import pytest
import websockets
from support.contract import (KEY, assert_failure_row, assert_on_clock, caller_turn, emulator_fixture, measure, measure_three,
                      rows)

from voxwatch.providers.emulators.scenario import S2SScenario
from voxwatch.providers.emulators.s2s.xai import XAIScenario

pytestmark = pytest.mark.realtime

MODEL = "xai/grok-voice-think-fast-2.0"
emulator = emulator_fixture("xai")


@pytest.fixture(scope="module")
def turn():
    return caller_turn()


def _scenario(turn, **kw) -> XAIScenario:
    return XAIScenario(api_key=KEY, anchors=turn.anchors(), speech_end_s=0.0, **kw)


def _measure(emulator, turn, timeout_s: float = 3, **kw):
    emulator(_scenario(turn, **kw))
    return measure(MODEL, turn.dataset, turn.clip, timeout_s=timeout_s)


def test_xai_v2v_from_the_call_recording(emulator, tmp_path, turn):
    scenario = _scenario(turn, response_ms=380.0, leading_silence_ms=60.0, jitter_ms=30.0)
    emulator(scenario)
    streams = measure_three(MODEL, turn.dataset, turn.clip, recordings_dir=tmp_path)
    assert_on_clock(streams, "v2v_ms", scenario.truth(turn.first)["v2v_ms"], clip=turn.clip,
                    leading_silence_ms=scenario.leading_silence_ms)
    assert all(r.audio_duration_s == pytest.approx((60.0 + 600.0) / 1000, abs=0.001) for r in rows(streams))
    assert streams[0].row.connect_ms is not None and streams[0].row.emulator


@pytest.mark.parametrize("fault", ["unauthorized", "rate_limited", "server_error", "malformed", "disconnect",
                                   "no_final", "inaudible"])
def test_xai_failures_become_rows(emulator, turn, fault):
    """The shared faults, on a plain S2SScenario (as `voxwatch emulate` serves it)."""
    emulator(S2SScenario(api_key=KEY, anchors=turn.anchors(), speech_end_s=0.0, fault=fault))
    assert_failure_row(measure(MODEL, turn.dataset, turn.clip, timeout_s=3), fault)


def test_a_recoverable_error_does_not_end_the_turn(emulator, turn):
    row = _measure(emulator, turn, error_event="recoverable")
    assert row.status == "ok" and row.v2v_ms is not None


@pytest.mark.parametrize("behaviour, named", [
    (dict(error_event="refused"), "invalid_request_error"),
    (dict(error_event="max_duration"), "max_duration"),
    (dict(response_status="cancelled"), "cancelled"),
    (dict(response_status="failed"), "failed"),
    (dict(response_status="incomplete"), "incomplete"),
])
def test_a_refused_request_an_ended_session_or_an_unfinished_reply_is_an_error_row(emulator, turn, behaviour, named):
    row = _measure(emulator, turn, timeout_s=10, **behaviour)
    assert row.status == "error" and named in row.reason and KEY not in row.reason, (row.status, row.reason)
    assert row.v2v_ms is None


def test_a_wrong_key_is_refused_at_the_upgrade(emulator, turn):
    emulator(XAIScenario(api_key="another-key"))
    row = measure(MODEL, turn.dataset, turn.clip)
    assert row.status == "auth_error" and "401" in row.reason and KEY not in row.reason
    assert row.connect_ms is None


async def _events(ws, until: str) -> list[dict]:
    """Server events up to and including the first of type `until`."""
    seen = []
    while not seen or seen[-1]["type"] != until:
        seen.append(json.loads(await asyncio.wait_for(ws.recv(), 5)))
    return seen


def test_the_emulator_speaks_xai_session_rules(emulator):
    """What the adapter relies on, straight over the socket: no key, no upgrade; a rate xAI does not
    take is an error event on a session that stays open; commit needs turn_detection type null."""

    async def session(url: str) -> None:
        with pytest.raises(websockets.InvalidStatus) as refused:
            await websockets.connect(f"{url}/v1/realtime?model=grok-voice-think-fast-2.0")
        assert refused.value.response.status_code == 401
        async with websockets.connect(f"{url}/v1/realtime?model=grok-voice-think-fast-2.0",
                                      additional_headers={"Authorization": f"Bearer {KEY}"}) as ws:
            opened = await _events(ws, "conversation.created")
            assert [e["type"] for e in opened] == ["session.created", "conversation.created"]
            assert opened[0]["session"]["model"] == "grok-voice-think-fast-2.0"
            await ws.send(json.dumps({"type": "session.update", "event_id": "e1", "session": {
                "audio": {"input": {"format": {"type": "audio/pcm", "rate": 11025}}}}}))
            error = (await _events(ws, "error"))[-1]["error"]
            assert error["type"] == "invalid_request_error" and error["event_id"] == "e1"
            assert error["param"] == "session.audio.input.format"
            await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": "AAAA"}))
            await ws.send(json.dumps({"type": "input_audio_buffer.commit", "event_id": "e2"}))
            error = (await _events(ws, "error"))[-1]["error"]
            assert error["event_id"] == "e2" and "turn_detection" in error["message"]
            await ws.send(json.dumps({"type": "session.update", "session": {"turn_detection": {"type": None},
                                      "audio": {"input": {"format": {"type": "audio/pcm", "rate": 16000}}}}}))
            updated = (await _events(ws, "session.updated"))[-1]["session"]
            assert updated["turn_detection"] == {"type": None}
            assert updated["audio"]["input"]["format"] == {"type": "audio/pcm", "rate": 16000}
            assert updated["audio"]["output"]["format"] == {"type": "audio/pcm", "rate": 24000}
            await ws.send(json.dumps({"type": "input_audio_buffer.commit"}))
            assert (await _events(ws, "input_audio_buffer.committed"))[-1]["item_id"]

    emulator(XAIScenario(api_key=KEY))
    asyncio.run(session(os.environ["VOXWATCH_XAI_BASE_URL"]))
