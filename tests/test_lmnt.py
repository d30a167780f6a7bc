"""Contract tests: the LMNT adapter against its loopback emulator of the Speech Sessions WebSocket, over
real sockets. The clock (TTFB, TTFA and the leading silence, from the flush), every shared fault as
its row, LMNT's error envelope by kind, the SDK's own fixture frames replayed through the adapter,
and the protocol rules the adapter relies on, straight over the socket (the key in the init, nothing
spoken before a flush).
"""

import asyncio
import json
import os

import pytest
import websockets
from support.contract import (KEY, TTS_FAULTS, failure_rows_test, measure, switched_emulator, synthesize,
                              tts_clock_test, tts_prompts)

from voxwatch.foundation.events import AUDIO, CLOSED, REQUEST_SENT
from voxwatch.providers.base import ProviderError
from voxwatch.providers.emulators.scenario import TTSScenario
from voxwatch.providers.emulators.tts.lmnt import (SDK_AUDIO, SDK_FINISH, SDK_FLUSH, SDK_INIT, SDK_READY, SDK_TEXT,
                                                   LMNTScenario)

pytestmark = pytest.mark.realtime

MODEL = "lmnt/blizzard"
emulator = switched_emulator("lmnt", LMNTScenario(api_key=KEY))


@pytest.fixture(scope="module")
def prompts():
    return tts_prompts()


test_lmnt_ttfa_from_the_flush = tts_clock_test(MODEL, "leah")
test_lmnt_failures_become_rows = failure_rows_test(MODEL, TTS_FAULTS, speech_ms=200.0)


@pytest.mark.parametrize("error_type, status", [
    ("rate_limit_error", "rate_limited"), ("authentication_error", "auth_error"), ("permission_error", "auth_error"),
    ("internal_server_error", "server_error"), ("payment_required_error", "error"), ("invalid_request_error", "error"),
])
def test_an_error_envelope_at_the_init_fails_the_set_up_by_kind(emulator, prompts, error_type, status, monkeypatch):
    emulator.use(monkeypatch, LMNTScenario(api_key=KEY, error_type=error_type))
    row = measure(MODEL, *prompts)
    assert row.status == status and error_type in row.reason and KEY not in row.reason, (row.status, row.reason)
    assert row.ttfb_ms is None and row.ttfa_ms is None


def test_a_wrong_key_in_the_init_is_an_auth_error(emulator, prompts, monkeypatch):
    emulator.use(monkeypatch, TTSScenario(api_key="another-key"))
    row = measure(MODEL, *prompts)
    assert row.status == "auth_error" and "authentication_error" in row.reason and KEY not in row.reason


def test_the_sdk_fixture_frames_replayed_through_the_adapter(emulator, monkeypatch):
    """LMNT's SDK test fixtures (lmnt-com/lmnt-python tests/api_resources/test_sessions.py @ 04ce21ee, quoted
    in the emulator): ready, one binary audio frame, timestamps, flush_complete with nonce 1. The emulator
    checks the adapter's frames have the fixtures' shapes; the adapter marks the frame's bytes as its
    audio, whole samples at the session's rate, and ends at the flush_complete."""
    emulator.use(monkeypatch, LMNTScenario(api_key=KEY, sequence="sdk_speech", ttfb_ms=20.0))
    timeline = synthesize(MODEL, "text-value")
    audio = timeline.of(AUDIO)
    assert b"".join(e.audio for e in audio) == SDK_AUDIO and sum(e.n_samples for e in audio) == 2
    assert all(e.sample_rate == 24000 for e in audio)
    assert timeline.first(REQUEST_SENT).t_ns < audio[0].t_ns <= timeline.first(CLOSED).t_ns


def test_the_sdk_error_fixture_fails_the_synthesis(emulator, monkeypatch):
    """The fixture's error frame (`"error": None`): a failure with the envelope's type unknown, not a crash."""
    emulator.use(monkeypatch, LMNTScenario(api_key=KEY, sequence="sdk_error"))
    with pytest.raises(ProviderError) as failed:
        synthesize(MODEL, "text-value")
    assert failed.value.status == "error" and "unknown" in str(failed.value)


async def _frames(ws, n: int) -> list:
    return [await asyncio.wait_for(ws.recv(), 5) for _ in range(n)]


def test_the_emulator_speaks_lmnt_session_rules(emulator, monkeypatch):
    """Straight over the socket: the SDK's init gets the SDK's ready; text alone is not spoken; a flush
    speaks it (binary frames) and completes with its nonce; finish closes normally; a wrong key is an
    authentication_error envelope and a close."""

    async def session(url: str) -> None:
        async with websockets.connect(f"{url}/v1/ai/speech/stream") as ws:
            await ws.send(json.dumps({**SDK_INIT, "X-API-Key": "wrong", "format": "pcm_s16le"}))
            error = json.loads(await asyncio.wait_for(ws.recv(), 5))
            assert error["type"] == "error" and error["error"]["type"] == "authentication_error"
            with pytest.raises(websockets.ConnectionClosedOK):
                await asyncio.wait_for(ws.recv(), 5)
        async with websockets.connect(f"{url}/v1/ai/speech/stream") as ws:
            await ws.send(json.dumps({**SDK_INIT, "X-API-Key": KEY, "format": "pcm_s16le"}))
            assert json.loads(await asyncio.wait_for(ws.recv(), 5)) == SDK_READY
            await ws.send(json.dumps(SDK_TEXT))
            with pytest.raises(asyncio.TimeoutError):  # buffered, not spoken
                await asyncio.wait_for(ws.recv(), 0.3)
            await ws.send(json.dumps(SDK_FLUSH))
            frames = await _frames(ws, 3)
            assert frames[0] == SDK_AUDIO and json.loads(frames[2]) == {"type": "flush_complete", "nonce": 1}
            await ws.send(json.dumps(SDK_FINISH))
            with pytest.raises(websockets.ConnectionClosedOK):
                await asyncio.wait_for(ws.recv(), 5)

    emulator.use(monkeypatch, LMNTScenario(api_key=KEY, sequence="sdk_speech", ttfb_ms=10.0))
    asyncio.run(session(os.environ["VOXWATCH_LMNT_BASE_URL"]))
