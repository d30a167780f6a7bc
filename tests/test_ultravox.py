"""Contract tests: the Ultravox Realtime adapter against its loopback emulator, over real sockets.

A call is created over REST and joined over the WebSocket its `joinUrl` names. V2V is measured back from
the written call recording; the emulator's reply starts `response_ms` (+ jitter) after the caller's
speech end, anchored on the call's first audio message (the clip's first 16 kHz chunk, sent as it is),
and only once Ultravox's turn detection has had the audio to hear that end: the adapter's line goes on
sending silence after the clip. Then Ultravox's own behaviours: the key on the call's creation, the
agent's greeting unless the caller speaks first, a call ended by its time limit, an interrupted reply,
and the data messages of Ultravox's documentation replayed through the adapter.

Every test shares one emulator process, switching its scenario between streams.
"""

import asyncio
import json

import httpx
import pytest
import websockets
from support.contract import KEY, S2S_FAULTS, caller_turn, failure_rows_test, measure, s2s_clock_test, switched_emulator

from voxwatch.providers.emulators.s2s.ultravox import DOCUMENTED, UltravoxScenario
from voxwatch.providers.registry import Registry
from voxwatch.providers.s2s.ultravox import call_body, with_api_version

pytestmark = pytest.mark.realtime

MODEL = "ultravox/ultravox-v0.7"


@pytest.fixture(scope="module")
def turn():
    return caller_turn()


emulator = switched_emulator("ultravox", UltravoxScenario(api_key=KEY))


def _scenario(turn, **kw) -> UltravoxScenario:
    return UltravoxScenario(api_key=KEY, anchors=turn.anchors(), speech_end_s=0.0, **kw)


def test_the_call_request_is_ultravoxs_documented_websocket_call():
    body = call_body(Registry.default().resolve(MODEL))
    assert body["model"] == "ultravox-v0.7" and body["firstSpeakerSettings"] == {"user": {}}
    assert body["medium"] == {"serverWebSocket": {"inputSampleRate": 16000, "outputSampleRate": 24000,
                                                  "clientBufferSizeMs": 30000}}
    assert with_api_version("wss://host/calls/abc/join?token=t") == "wss://host/calls/abc/join?token=t&apiVersion=1"


test_ultravox_v2v_from_the_call_recording = s2s_clock_test(MODEL, 450.0, scenario=UltravoxScenario)
# the shared faults, on a plain S2SScenario (as `voxwatch emulate` serves it)
test_ultravox_failures_become_rows = failure_rows_test(MODEL, S2S_FAULTS)


@pytest.mark.parametrize("ending, status, named", [
    ("max_duration", "disconnected", "code 1000"),  # the server ends the call: a clean close, mid-reply
    ("clear_buffer", "error", "interrupted"),  # playback_clear_buffer: the agent was cut off
])
def test_a_call_ended_or_a_reply_cut_off_is_a_failure_row(emulator, turn, ending, status, named, monkeypatch, unpaced):
    emulator.use(monkeypatch, _scenario(turn, response_ms=400.0, ending=ending))
    row = measure(MODEL, turn.dataset, turn.clip, timeout_s=10)
    assert row.status == status and named in row.reason and KEY not in row.reason, (row.status, row.reason)
    assert row.v2v_ms is None


def test_a_wrong_key_is_refused_at_the_calls_creation(emulator, turn, monkeypatch):
    emulator.use(monkeypatch, UltravoxScenario(api_key="another-key"))
    row = measure(MODEL, turn.dataset, turn.clip)
    assert row.status == "auth_error" and "401" in row.reason and KEY not in row.reason
    assert row.connect_ms is None


def test_the_documented_data_messages_replayed_through_the_adapter(emulator, turn, monkeypatch, unpaced):
    """Ultravox's "Protocol & Data Messages" page, as given (DOCUMENTED): the documented call_started and
    listening state, then a reply whose first transcript is the page's example (an agent transcript, not
    final) and a debug message: the adapter keeps reading through them to the round's final transcript."""
    emulator.use(monkeypatch, _scenario(turn, response_ms=400.0, documented=True))
    row = measure(MODEL, turn.dataset, turn.clip, timeout_s=10)
    assert row.status == "ok" and row.v2v_ms is not None, (row.status, row.reason)
    assert row.audio_duration_s == pytest.approx((60.0 + 600.0) / 1000, abs=0.001)  # not cut at the example


async def _create(url: str, body: dict, key: str = KEY) -> httpx.Response:
    async with httpx.AsyncClient(base_url=url) as client:
        return await client.post("/api/calls", json=body, headers={"X-API-Key": key})


async def _until(ws, stop) -> list:
    """Messages (dicts, or bytes) up to and including the first for which `stop` is true."""
    seen = []
    while not seen or not stop(seen[-1]):
        message = await asyncio.wait_for(ws.recv(), 5)
        seen.append(message if isinstance(message, bytes) else json.loads(message))
    return seen


def test_the_emulator_speaks_ultravoxs_call_rules(emulator, turn, monkeypatch):
    """What the adapter relies on, straight over the sockets: a call needs its key and its input rate;
    left at the default, the agent greets as the call is joined; a join URL is joined once; Ultravox's
    turn detection answers only once audio up to the end of speech plus turnEndpointDelay has come."""
    url = emulator.url
    emulator.use(monkeypatch, _scenario(turn, response_ms=100.0))
    websocket_call = {"serverWebSocket": {"inputSampleRate": 16000}}

    async def rules() -> None:
        assert (await _create(url, {"medium": websocket_call}, key="wrong")).status_code == 401
        refused = await _create(url, {"medium": {"serverWebSocket": {}}})
        assert refused.status_code == 400 and "inputSampleRate" in refused.json()["detail"]
        assert (await _create(url, {"model": "ultravox-v9", "medium": websocket_call})).status_code == 400

        created = await _create(url, {"model": "ultravox-v0.7", "medium": websocket_call})
        assert created.status_code == 201 and created.json()["firstSpeakerSettings"] == {"agent": {}}
        join = created.json()["joinUrl"]
        async with websockets.connect(join) as ws:  # the default: the agent speaks first, unasked
            greeting = await _until(ws, lambda m: isinstance(m, bytes))
            assert [m["type"] for m in greeting[:-1]] == ["call_started", "state"]
            assert greeting[1]["state"] == "speaking"
        with pytest.raises(websockets.InvalidStatus) as again:
            await websockets.connect(join)
        assert again.value.response.status_code == 404

        created = await _create(url, {"firstSpeakerSettings": {"user": {}}, "medium": websocket_call})
        async with websockets.connect(with_api_version(created.json()["joinUrl"])) as ws:
            opened = await _until(ws, lambda m: m.get("type") == "state")
            assert opened[-1] == {"type": "state", "state": "listening"}
            await ws.send(turn.first)  # the call's first audio message: the emulator's anchor for this clip
            await ws.send(bytes(int(turn.clip.speech_end * 16000) * 2 - len(turn.first)))  # audio to the speech end
            with pytest.raises(asyncio.TimeoutError):  # no audio after the speech: no end of turn heard
                await asyncio.wait_for(ws.recv(), 0.6)
            await ws.send(bytes(int(0.4 * 16000) * 2))  # 0.4 s of silence: past the 0.384 s endpoint delay
            answered = await _until(ws, lambda m: isinstance(m, dict) and m["type"] == "transcript"
                                    and m["role"] == "agent" and m["final"])
            kinds = [m if isinstance(m, bytes) else (m["type"], m.get("state") or m.get("role")) for m in answered]
            assert kinds[:3] == [("state", "thinking"), ("transcript", "user"), ("state", "speaking")]
            assert any(isinstance(m, bytes) for m in answered)
            await ws.send(json.dumps({"type": "ping", "timestamp": 12.5}))
            assert (await _until(ws, lambda m: m["type"] == "pong"))[-1] == {"type": "pong", "timestamp": 12.5}

    asyncio.run(rules())


def test_the_documented_messages_are_the_pages_own():
    """The replayed messages are the page's examples word for word (a test that they were not edited)."""
    assert DOCUMENTED["transcript"] == {"type": "transcript", "role": "agent", "medium": "voice",
                                        "text": "Full transcript so far", "delta": None, "final": False, "ordinal": 1}
    assert DOCUMENTED["call_started"]["callId"] == "550e8400-e29b-41d4-a716-446655440000"
