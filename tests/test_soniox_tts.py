"""Contract tests: the Soniox real-time TTS adapter against its emulator, over real sockets. The
emulator sends audio faster than real time, so no test here waits on a clock.
"""

import asyncio
import json
import os

import pytest
import websockets
from support.contract import KEY, failure_rows_test, measure, spoken, switched_emulator, tts_clock_test

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.providers.emulators.scenario import TTSScenario
from voxwatch.providers.emulators.tts.soniox import DOC_CONFIG, DOC_ERROR_TERMINATION, SonioxTTSScenario

pytestmark = pytest.mark.realtime

MODEL = "soniox/tts-rt-v1"
emulator = switched_emulator("soniox", TTSScenario(api_key=KEY))  # one process for the file, its scenario switched per test


@pytest.fixture(scope="module")
def prompts():
    return Catalog([bundled_root()]).load("tts-prompts")


test_ttfa_with_its_components = tts_clock_test(MODEL, "Adrian")
test_failures_become_rows = failure_rows_test(
    MODEL, ["unauthorized", "rate_limited", "server_error", "malformed", "disconnect", "no_final", "inaudible"])


def test_a_key_refused_in_band_is_an_auth_error(monkeypatch, emulator, prompts):
    """Soniox's key travels in the config, so a refused key is an error message (401), not a refused upgrade."""
    emulator.use(monkeypatch, TTSScenario(api_key="another-key"))
    row = measure(MODEL, prompts, prompts.prompts[0])
    assert row.status == "auth_error" and "401" in row.reason and KEY not in row.reason
    assert row.ttfb_ms is None


def test_the_documented_error_termination_through_the_adapter(monkeypatch, emulator, prompts):
    """DOC_ERROR_TERMINATION (Soniox's "Stream termination" page) replayed for the adapter's stream."""
    emulator.use(monkeypatch, SonioxTTSScenario(api_key=KEY, refuse=True))
    row = measure(MODEL, prompts, prompts.prompts[0])
    assert row.status == "error" and row.reason == "Soniox error 400: Missing required field: model"


def test_the_adapter_sends_the_documented_config_and_termination(monkeypatch):
    """Two utterances on one connection: each a new stream whose config has DOC_CONFIG's fields (the
    key sent in-band, pcm_s16le at 24 kHz in place of the example's wav) and whose one text ends it."""
    timeline, received = spoken(monkeypatch, MODEL, TTSScenario(ttfb_ms=5.0, api_key=KEY),
                                ["Final chunk of text.", "Final chunk of text."])
    assert len(received) == 2 and received[0]["config"]["stream_id"] != received[1]["config"]["stream_id"]
    for got in received:
        assert set(got["config"]) == set(DOC_CONFIG)
        assert {k: got["config"][k] for k in ("model", "language", "voice", "audio_format", "sample_rate")} == {
            "model": "tts-rt-v1", "language": "en", "voice": "Adrian", "audio_format": "pcm_s16le", "sample_rate": 24000}
        assert got["text"] == {"text": "Final chunk of text.", "text_end": True, "stream_id": got["config"]["stream_id"]}
    assert len(timeline.of("request_sent")) == 2 and len(timeline.of("closed")) == 2


def test_the_emulator_speaks_the_documented_termination(monkeypatch, emulator):
    """Straight over the socket: the documented error termination for a config without a model (the
    connection stays open), then the normal one: audio, the last with audio_end, then terminated."""
    emulator.use(monkeypatch, TTSScenario(ttfb_ms=5.0, api_key=KEY))

    async def session(url: str) -> None:
        async with websockets.connect(f"{url}/tts-websocket") as ws:
            config = {**DOC_CONFIG, "api_key": KEY, "audio_format": "pcm_s16le"}
            await ws.send(json.dumps({k: v for k, v in config.items() if k != "model"}))
            assert tuple([json.loads(await ws.recv()) for _ in DOC_ERROR_TERMINATION]) == DOC_ERROR_TERMINATION
            await ws.send(json.dumps(config))
            await ws.send(json.dumps({"text": "Final chunk of text.", "text_end": True, "stream_id": "stream-001"}))
            events = []
            while not events or not events[-1].get("terminated"):
                events.append(json.loads(await asyncio.wait_for(ws.recv(), 5)))
            assert [e.get("audio_end", False) for e in events[:-1]] == [False] * (len(events) - 2) + [True]
            assert events[-1] == {"terminated": True, "stream_id": "stream-001"}

    asyncio.run(session(os.environ["VOXWATCH_SONIOX_BASE_URL"]))
