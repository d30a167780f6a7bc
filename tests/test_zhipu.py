"""Contract tests: the GLM-Realtime adapter (Zhipu AI) against its loopback emulator, over real sockets.

V2V is measured back from the written call recording; the emulator's reply starts `response_ms`
(+ jitter) after the caller's speech end, anchored on the PCM of the first append (the WAV header
stripped: the clip's first 16 kHz chunk). Then the protocol rules the adapter relies on: the WAV
input, the Bearer header, recoverable error events, and a reply that ends other than `completed`.
"""

import asyncio
import base64
import dataclasses
import json
import os

import pytest
import websockets
from support.contract import (KEY, s2s_scenario, assert_failure_row, assert_on_clock, caller_turn, emulator_fixture, measure,
                      measure_three, rows)

from voxwatch.providers.base import ProviderError
from voxwatch.providers.emulators.scenario import S2SScenario
from voxwatch.providers.emulators.s2s.zhipu import PATH, ZhipuScenario
from voxwatch.foundation.events import Timeline
from voxwatch.providers.keys import Secret
from voxwatch.foundation.audio import wav_bytes
from voxwatch.providers.registry import Registry
from voxwatch.providers.s2s.zhipu import GlmRealtimeS2S, _error_of

MODEL = "zhipu/glm-realtime-flash"
zhipu = emulator_fixture("zhipu")


@pytest.fixture(scope="module")
def clean():
    return caller_turn()


@pytest.mark.realtime
@pytest.mark.parametrize("model_id", ["zhipu/glm-realtime-flash", "zhipu/glm-realtime-air"])
def test_glm_v2v_from_the_call_recording(zhipu, tmp_path, clean, model_id):
    ds, clip, first = clean
    scenario = s2s_scenario(clip, first, response_ms=350.0, leading_silence_ms=80.0, jitter_ms=30.0)
    zhipu(scenario)
    streams = measure_three(model_id, ds, clip, recordings_dir=tmp_path)
    assert_on_clock(streams, "v2v_ms", scenario.truth(first)["v2v_ms"], clip=clip,
                    leading_silence_ms=scenario.leading_silence_ms)
    assert all(r.audio_duration_s == pytest.approx((80.0 + 600.0) / 1000, abs=0.001) for r in rows(streams))
    assert streams[0].row.connect_ms is not None and streams[0].row.emulator


@pytest.mark.realtime
@pytest.mark.parametrize("fault", ["unauthorized", "rate_limited", "server_error", "malformed", "disconnect",
                                   "no_final", "inaudible"])
def test_glm_failures_become_rows(zhipu, clean, fault):
    ds, clip, first = clean
    zhipu(s2s_scenario(clip, first, fault=fault))
    assert_failure_row(measure(MODEL, ds, clip, timeout_s=3), fault)


def test_a_wrong_key_is_refused_at_the_upgrade_as_an_auth_error(zhipu, clean):
    ds, clip, _ = clean
    zhipu(S2SScenario(api_key="another-key"))
    row = measure(MODEL, ds, clip)
    assert row.status == "auth_error" and "401" in row.reason and KEY not in row.reason
    assert row.v2v_ms is None and row.connect_ms is None


@pytest.mark.realtime
def test_a_recoverable_error_mid_reply_does_not_end_the_turn(zhipu, clean):
    """Zhipu: "most errors are recoverable and the session stays open" - the reply still completes."""
    ds, clip, first = clean
    zhipu(ZhipuScenario(s2s_scenario(clip, first, response_ms=300.0), error_mid_reply=True))
    row = measure(MODEL, ds, clip)
    assert row.status == "ok" and row.v2v_ms is not None and row.audio_duration_s > 0.6, (row.status, row.reason)


@pytest.mark.realtime
@pytest.mark.parametrize("status", ["cancelled", "failed", "incomplete"])
def test_a_reply_that_ends_other_than_completed_is_a_failure(zhipu, clean, status):
    ds, clip, first = clean
    zhipu(ZhipuScenario(s2s_scenario(clip, first), reply_status=status))
    row = measure(MODEL, ds, clip)
    assert row.status == "error" and repr(status) in row.reason and row.v2v_ms is None


def _connect(url: str, headers: dict):
    return websockets.connect(url.replace("http", "ws") + PATH, additional_headers=headers)


async def _events(ws, *kinds: str) -> list[dict]:
    """Server events up to and including the first of `kinds` (heartbeats skipped)."""
    out = []
    while True:
        event = json.loads(await ws.recv())
        if event["type"] != "heartbeat":
            out.append(event)
        if event["type"] in kinds:
            return out


def _append(audio: bytes) -> str:
    return json.dumps({"type": "input_audio_buffer.append", "audio": base64.b64encode(audio).decode()})


def test_the_emulator_refuses_a_missing_or_wrong_bearer_header(zhipu):
    zhipu(S2SScenario(api_key=KEY))
    url = os.environ["VOXWATCH_ZHIPU_BASE_URL"]

    async def refused(headers: dict) -> tuple[int, str]:
        with pytest.raises(websockets.InvalidStatus) as info:
            async with _connect(url, headers):
                pass
        response = info.value.response
        return response.status_code, json.loads(response.body)["error"]["code"]

    assert asyncio.run(refused({})) == (401, "1001")
    assert asyncio.run(refused({"Authorization": KEY})) == (401, "1000")  # the key without "Bearer "
    assert asyncio.run(refused({"Authorization": "Bearer wrong"})) == (401, "1000")


def test_the_emulator_takes_only_wav_at_the_session_rate(zhipu):
    zhipu(S2SScenario(api_key=KEY))
    url = os.environ["VOXWATCH_ZHIPU_BASE_URL"]
    pcm = b"\x01\x00" * 320

    async def talk() -> list[str]:
        codes = []
        async with _connect(url, {"Authorization": f"Bearer {KEY}"}) as ws:
            await _events(ws, "session.created")
            for session in ({"input_audio_format": "pcm"}, {"output_audio_format": "mp3"},
                            {"turn_detection": {"type": "server_vad"}}, {"model": "glm-realtime"}):
                await ws.send(json.dumps({"type": "session.update", "session": session}))
                codes.append((await _events(ws, "error", "session.updated"))[-1]["error"]["code"])
            for audio in (pcm, wav_bytes(pcm, 24000)):  # raw PCM; a WAV at another rate
                await ws.send(_append(audio))
                codes.append((await _events(ws, "error"))[-1]["error"]["code"])
            await ws.send(json.dumps({"type": "input_audio_buffer.commit"}))  # nothing valid was appended
            codes.append((await _events(ws, "error"))[-1]["error"]["code"])
            await ws.send(_append(wav_bytes(pcm, 16000)))
            await ws.send(json.dumps({"type": "input_audio_buffer.commit"}))
            codes.append((await _events(ws, "input_audio_buffer.committed", "error"))[-1]["type"])
        return codes

    assert asyncio.run(talk()) == ["1214", "1214", "1214", "1211", "invalid_audio", "invalid_audio",
                                   "input_audio_buffer_commit_empty", "input_audio_buffer.committed"]


def test_a_refused_session_update_fails_the_connect(zhipu):
    """An error answering the set-up ends it: here a model code Zhipu does not list (1211)."""
    zhipu(S2SScenario(api_key=KEY))
    model = Registry.default().resolve(MODEL)
    adapter = GlmRealtimeS2S(dataclasses.replace(model, id="zhipu/glm-realtime-pro"))
    with pytest.raises(ProviderError) as info:
        asyncio.run(adapter.connect(Timeline()))
    assert info.value.status == "error" and "1211" in str(info.value)


@pytest.mark.parametrize("code, kind, status", [
    ("1000", "invalid_request_error", "auth_error"),
    ("1002", "invalid_request_error", "auth_error"),
    ("1302", "invalid_request_error", "rate_limited"),
    ("1305", "server_error", "rate_limited"),
    ("500", "server_error", "server_error"),
    ("", "server_error", "server_error"),
    ("invalid_event", "invalid_request_error", "error"),
])
def test_error_events_become_failure_kinds_without_the_key(code, kind, status):
    err = _error_of({"type": "error", "error": {"type": kind, "code": code, "message": "bad " + KEY}}, Secret(KEY))
    assert err.status == status and KEY not in str(err) and kind in str(err)
