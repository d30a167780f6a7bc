"""Contract tests: the Qwen-Omni-Realtime adapter against its loopback emulator, over real sockets.

V2V is measured back from the written call recording; the emulator's reply starts `response_ms`
(+ jitter) after the caller's speech end, anchored on the turn's first append (its sha256 keys the
clip's speech end). The adapter turns server VAD off and ends the turn itself (Manual mode).
"""

import asyncio
import base64
import json

import pytest
import websockets
from support.contract import (KEY, assert_failure_row, assert_on_clock, caller_turn, emulator_fixture, measure,
                      measure_three, rows, s2s_scenario, serve)

from voxwatch.providers.emulators.scenario import S2SScenario
from voxwatch.foundation.events import AUDIO, Timeline
from voxwatch.providers.s2s.qwen import error_event, unfinished
from voxwatch.providers.registry import Registry

MODEL = "qwen/qwen3-omni-flash-realtime-2025-09-15"
PATH = "/api-ws/v1/realtime?model=qwen3-omni-flash-realtime-2025-09-15"


start = emulator_fixture("qwen")


@pytest.fixture(scope="module")
def clean():
    return caller_turn()


@pytest.mark.realtime
def test_qwen_v2v_from_the_call_recording(start, tmp_path, clean):
    ds, clip, first = clean
    scenario = s2s_scenario(clip, first, response_ms=350.0, leading_silence_ms=80.0, jitter_ms=30.0)
    start(scenario)
    streams = measure_three(MODEL, ds, clip, recordings_dir=tmp_path)
    assert_on_clock(streams, "v2v_ms", scenario.truth(first)["v2v_ms"], clip=clip,
                    leading_silence_ms=scenario.leading_silence_ms)
    assert all(r.audio_duration_s == pytest.approx((80.0 + 600.0) / 1000, abs=0.001) for r in rows(streams))
    assert streams[0].row.connect_ms is not None and streams[0].row.emulator


@pytest.mark.realtime
def test_the_adapter_turns_server_vad_off(start, clean):
    """Manual mode: the server waits for the caller's commit, however long the silence after the speech."""
    ds, clip, first = clean
    registry = Registry.default()

    async def turn() -> tuple[list, list]:
        session = await registry.create(registry.resolve(MODEL)).connect(timeline := Timeline())
        try:
            await session.send_audio(first)
            await asyncio.sleep(clip.speech_end + 1.2)  # server VAD (800 ms window) would have answered by now
            early = timeline.of(AUDIO)
            await session.end_audio()
            await asyncio.wait_for(session.wait_response(), 5)
        finally:
            await session.aclose()
        return early, timeline.of(AUDIO)

    start(s2s_scenario(clip, first, response_ms=50.0))
    early, audio = asyncio.run(turn())
    assert early == [] and audio


@pytest.mark.realtime
@pytest.mark.parametrize("fault", ["unauthorized", "forbidden", "rate_limited", "server_error", "malformed",
                                   "disconnect", "no_final", "inaudible"])
def test_qwen_failures_become_rows(start, clean, fault):
    ds, clip, first = clean
    start(s2s_scenario(clip, first, fault=fault))
    assert_failure_row(measure(MODEL, ds, clip, timeout_s=3), fault)


def test_a_wrong_key_is_refused_at_the_handshake(start, clean):
    ds, clip, _ = clean
    start(S2SScenario(api_key="another-key"))
    row = measure(MODEL, ds, clip)
    assert row.status == "auth_error" and "401" in row.reason and KEY not in row.reason
    assert row.v2v_ms is None and row.connect_ms is None


@pytest.mark.parametrize("code, status", [
    ("InvalidApiKey", "auth_error"), ("invalid_api_key", "auth_error"), ("AccessDenied", "auth_error"),
    ("Throttling.RateQuota", "rate_limited"), ("Throttling.AllocationQuota", "rate_limited"),
    ("insufficient_quota", "rate_limited"), ("InternalError", "server_error"), ("invalid_value", "error"),
])
def test_error_events_become_failure_kinds(code, status):
    err = error_event({"type": "error", "error": {"type": "invalid_request_error", "code": code, "message": "m"}})
    assert err.status == status and code in str(err)


@pytest.mark.parametrize("response, failed", [
    ({"status": "completed"}, False),
    ({"status": "cancelled", "status_details": {"reason": "client_cancelled"}}, True),
    ({"status": "incomplete", "status_details": {"reason": "max_output_tokens"}}, True),
    ({"status": "failed", "status_details": {"error": {"code": "InternalError"}}}, True),
])
def test_only_a_completed_reply_is_a_success(response, failed):
    err = unfinished(response)
    assert (err is not None) == failed
    if failed:
        assert response["status"] in str(err) and err.status == "error"


# The protocol rules the adapter relies on, spoken to the emulator directly.

async def _session(url: str, headers: dict | None = None):
    ws = await websockets.connect(url + PATH, additional_headers={"Authorization": f"Bearer {KEY}"}
                                  if headers is None else headers)
    created = json.loads(await ws.recv())
    assert created["type"] == "session.created" and created["session"]["turn_detection"]["type"] == "server_vad"
    return ws


async def _next(ws, kind: str, timeout: float = 5.0) -> dict:
    while True:
        event = json.loads(await asyncio.wait_for(ws.recv(), timeout))
        if event["type"] in (kind, "error"):
            return event


def test_the_emulator_refuses_a_missing_key_and_a_missing_model(clean):
    ds, clip, first = clean

    async def talk(url: str) -> None:
        with pytest.raises(websockets.InvalidStatus) as refused:
            await _session(url, headers={})
        assert refused.value.response.status_code == 401 and b"InvalidApiKey" in refused.value.response.body
        with pytest.raises(websockets.InvalidStatus) as refused:
            await websockets.connect(url + "/api-ws/v1/realtime", additional_headers={"Authorization": f"Bearer {KEY}"})
        assert refused.value.response.status_code == 400

    with serve("qwen", s2s_scenario(clip, first)) as url:
        asyncio.run(talk(url))


@pytest.mark.parametrize("session, param", [
    ({"input_audio_format": "g711_ulaw"}, "session.input_audio_format"),
    ({"output_audio_format": "mp3"}, "session.output_audio_format"),
    ({"modalities": ["audio"]}, "session.modalities"),
])
def test_the_emulator_refuses_formats_the_api_does_not_take(clean, session, param):
    ds, clip, first = clean

    async def talk(url: str) -> dict:
        ws = await _session(url)
        await ws.send(json.dumps({"type": "session.update", "session": session}))
        answer = await _next(ws, "session.updated")
        await ws.close()
        return answer

    with serve("qwen", s2s_scenario(clip, first)) as url:
        answer = asyncio.run(talk(url))
    assert answer["type"] == "error" and answer["error"]["code"] == "invalid_value" and answer["error"]["param"] == param


@pytest.mark.realtime
def test_manual_mode_answers_only_a_committed_turn_and_response_create(clean):
    """turn_detection null: nothing comes back for audio alone; the commit and response.create bring the reply."""
    ds, clip, first = clean

    async def talk(url: str) -> list[str]:
        ws = await _session(url)
        await ws.send(json.dumps({"type": "input_audio_buffer.commit"}))
        empty = await _next(ws, "input_audio_buffer.committed")
        await ws.send(json.dumps({"type": "session.update", "session": {"turn_detection": None}}))
        assert (await _next(ws, "session.updated"))["session"]["turn_detection"] is None
        await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": base64.b64encode(first).decode()}))
        with pytest.raises(asyncio.TimeoutError):  # no VAD: the turn stays open (reply truth: 50 ms after speech end)
            await asyncio.wait_for(ws.recv(), clip.speech_end + 0.5)
        await ws.send(json.dumps({"type": "input_audio_buffer.commit"}))
        await ws.send(json.dumps({"type": "response.create"}))
        seen = []
        while not seen or seen[-1] != "response.done":
            seen.append(json.loads(await asyncio.wait_for(ws.recv(), 5))["type"])
        await ws.close()
        return [empty["error"]["code"], *seen]

    with serve("qwen", s2s_scenario(clip, first, response_ms=50.0)) as url:
        seen = asyncio.run(talk(url))
    assert seen[0] == "input_audio_buffer_commit_empty"
    assert seen[1:4] == ["input_audio_buffer.committed", "conversation.item.created", "response.created"]
    assert "response.audio.delta" in seen and seen[-2:] == ["response.output_item.done", "response.done"]


@pytest.mark.realtime
def test_server_vad_commits_and_answers_the_turn_by_itself(clean):
    ds, clip, first = clean

    async def talk(url: str) -> list[str]:
        ws = await _session(url)
        await ws.send(json.dumps({"type": "session.update", "session": {
            "turn_detection": {"type": "server_vad", "silence_duration_ms": 200}}}))
        await _next(ws, "session.updated")
        await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": base64.b64encode(first).decode()}))
        seen = []
        while not seen or seen[-1] != "response.done":
            seen.append(json.loads(await asyncio.wait_for(ws.recv(), clip.speech_end + 5))["type"])
        await ws.close()
        return seen

    with serve("qwen", s2s_scenario(clip, first, response_ms=50.0)) as url:
        seen = asyncio.run(talk(url))
    assert seen[:3] == ["input_audio_buffer.committed", "conversation.item.created", "response.created"]
    assert seen[-1] == "response.done"
