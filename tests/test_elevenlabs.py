"""Contract tests: the ElevenLabs adapters (TTS over the stream-input WebSocket and over HTTP
streaming, Scribe v2 Realtime STT) against one loopback emulator of all three endpoints, over real
sockets; the metrics equal the injected truth (tolerances: contract.py) and every fault gives its row.
"""

import asyncio
import json
import os
import time

import pytest
import websockets
from support.contract import (KEY, REGISTRY, assert_failure_row, assert_on_clock, emulator_fixture,
                      fault_timeout_s, measure, measure_three, rows)

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.providers.emulators.tts.elevenlabs import ElevenLabsScenario
from voxwatch.providers.emulators.scenario import Scenarios, STTScenario, TTSScenario
from voxwatch.providers.session.endpoints import ws_url
from voxwatch.providers.keys import Secret
from voxwatch.harness.measure import MeasureContext, measure_item

pytestmark = pytest.mark.realtime

WS, HTTP, STT = "elevenlabs/eleven_flash_v2_5:ws", "elevenlabs/eleven_flash_v2_5:http", "elevenlabs/scribe_v2_realtime"


@pytest.fixture(scope="module")
def prompts():
    return Catalog([bundled_root()]).load("tts-prompts")


@pytest.fixture(scope="module")
def clean():
    ds = Catalog([bundled_root()]).load("stt-starter-clean")
    return ds, next(c for c in ds.clips if c.id == "u049")


elevenlabs = emulator_fixture("elevenlabs")


@pytest.mark.parametrize("scenario", [
    TTSScenario(ttfb_ms=90.0, leading_silence_ms=60.0, api_key=KEY),
    TTSScenario(ttfb_ms=40.0, leading_silence_ms=100.0, gaming_delay_ms=400.0, api_key=KEY),  # silence first, speech late
], ids=["streaming", "gaming"])
def test_tts_ttfa_with_its_components_over_websocket_and_http(elevenlabs, prompts, scenario):
    prompt = prompts.prompts[3]
    truth = scenario.truth(prompt.text)
    elevenlabs(scenario)
    for model_id in (WS, HTTP):
        streams = measure_three(model_id, prompts, prompt)
        assert_on_clock(streams, "ttfb_ms", truth["ttfb_ms"])
        assert all(r.leading_silence_ms == pytest.approx(truth["leading_silence_ms"], abs=1.0) for r in rows(streams))
        assert_on_clock(streams, "ttfa_ms", truth["ttfa_ms"], leading_silence_ms=scenario.leading_silence_ms)
        assert all(r.connect_ms is not None and r.emulator for r in rows(streams))


def test_http_rows_record_the_http_version_and_a_reused_connection(elevenlabs, prompts):
    """One adapter across items, as the runner uses it: every timed request after the warm-up rides a
    warm connection (the emulator, under uvicorn, speaks HTTP/1.1)."""
    elevenlabs(TTSScenario(api_key=KEY))
    model = REGISTRY.resolve(HTTP)
    ctx = MeasureContext(run_id="r", seed=1, region="test", timeout_s=10, secrets=(Secret(KEY),), emulator=True)

    async def items():
        adapter = REGISTRY.create(model)
        try:
            return [await measure_item(model, adapter, prompts, p, ctx) for p in prompts.prompts[:3]]
        finally:
            await adapter.aclose()

    measured = asyncio.run(items())
    assert all(r.status == "ok" for r in measured), [r.reason for r in measured]
    assert all(r.http_version == "HTTP/1.1" and r.connection_reused is True for r in measured)
    assert all(r.ttfb_ms is not None and r.ttfa_ms is not None and r.reason is None for r in measured)
    ws_row = measure(WS, prompts, prompts.prompts[0])
    assert ws_row.status == "ok" and ws_row.http_version is None and ws_row.connection_reused is None


def test_scribe_partials_and_the_committed_final(elevenlabs, clean):
    ds, clip = clean
    elevenlabs(STTScenario(transcript=clip.text, speech_start_s=clip.speech_start, speech_end_s=clip.speech_end,
                           first_partial_ms=180.0, final_ms=240.0, api_key=KEY))
    streams = measure_three(STT, ds, clip)
    assert_on_clock(streams, "first_partial_ms", 180.0, clip=clip)
    assert_on_clock(streams, "ttfs_ms", 240.0, clip=clip)
    row = streams[0].row
    assert row.hypothesis == clip.text and row.substitutions == row.deletions == row.insertions == 0


@pytest.mark.parametrize("fault", ["unauthorized", "rate_limited", "server_error", "malformed", "disconnect",
                                   "no_final", "inaudible"])
def test_failures_become_rows_on_every_endpoint(elevenlabs, prompts, clean, fault):
    """One emulator process serves the TTS and STT scenarios of a fault; each adapter gives its row."""
    ds, clip = clean
    elevenlabs(Scenarios(tts=TTSScenario(api_key=KEY, fault=fault),
                         stt=STTScenario(transcript=clip.text, speech_start_s=clip.speech_start,
                                         speech_end_s=clip.speech_end, api_key=KEY, fault=fault)))
    for model_id in (WS, HTTP):
        assert_failure_row(measure(model_id, prompts, prompts.prompts[0], timeout_s=fault_timeout_s(fault)), fault)
    if fault != "inaudible":  # TTS only
        assert_failure_row(measure(STT, ds, clip, timeout_s=fault_timeout_s(fault)), fault)


def test_a_wrong_key_is_refused_on_every_endpoint_and_never_shown(elevenlabs, prompts, clean):
    ds, clip = clean
    elevenlabs(Scenarios(tts=TTSScenario(api_key="another-key"),
                         stt=STTScenario(transcript="x", speech_start_s=0.1, speech_end_s=0.5, api_key="another-key")))
    refused = [measure(WS, prompts, prompts.prompts[0]), measure(HTTP, prompts, prompts.prompts[0]),
               measure(STT, ds, clip)]
    for row in refused:
        assert row.status == "auth_error" and "HTTP 401" in row.reason and KEY not in repr(row)


# --- the stream-input inactivity timeout (issue 14) ---

SCALE = 0.02  # emulator seconds per vendor second: the default 20 s timeout becomes 0.4 s, the maximum 180 s 3.6 s
LATE_S = 1.5  # between the connection and the synthesis: past the default timeout, within the maximum


class LateSynthesis:
    """An adapter whose synthesis starts LATE_S after its connection opened, as in a long run where
    the harness connects first: the clock still starts at the synthesis request."""

    def __init__(self, adapter) -> None:
        self.adapter = adapter

    async def connect(self, timeline, voice=None):
        return _Late(await self.adapter.connect(timeline, voice))


class _Late:
    def __init__(self, session) -> None:
        self.session = session

    async def synthesize(self, text: str) -> None:
        await asyncio.sleep(LATE_S)
        await self.session.synthesize(text)

    async def aclose(self) -> None:
        await self.session.aclose()


def test_the_stream_input_closes_after_its_inactivity_timeout_as_documented(elevenlabs):
    """Opener, then silence: `input_timeout_exceeded` and close 1008 after the default 20 s (scaled),
    and no sooner than the `inactivity_timeout` the connection asked for."""
    elevenlabs(ElevenLabsScenario(TTSScenario(api_key=KEY), inactivity_scale=SCALE))
    url = ws_url(os.environ["VOXWATCH_ELEVENLABS_BASE_URL"])

    async def idle(query: str) -> tuple[dict, int | None, float]:
        async with websockets.connect(f"{url}/v1/text-to-speech/voice/stream-input?model_id=m&output_format=pcm_24000"
                                      f"{query}", additional_headers={"xi-api-key": KEY}) as ws:
            await ws.send(json.dumps({"text": " "}))
            opened = time.monotonic()
            message = json.loads(await ws.recv())
            with pytest.raises(websockets.ConnectionClosedError):
                await ws.recv()
            return message, ws.close_code, time.monotonic() - opened

    async def both():
        return await asyncio.gather(idle(""), idle("&inactivity_timeout=60"))

    (default, default_code, default_s), (asked, asked_code, asked_s) = asyncio.run(both())
    for message, code in ((default, default_code), (asked, asked_code)):
        assert message["error"] == "input_timeout_exceeded" and message["code"] == code == 1008
    assert "within the timeout of 20 seconds" in default["message"] and "of 60 seconds" in asked["message"]
    assert default_s < asked_s and asked_s >= 0.9 * 60 * SCALE


def test_a_synthesis_that_starts_after_the_default_inactivity_timeout_still_completes(elevenlabs, prompts):
    """The harness connects first (the opener goes then, outside the clock) and synthesizes LATE_S
    later, past ElevenLabs' default 20 s: the connection asked for the longest timeout, so the row
    is ok and its TTFB runs from the synthesis request (an adapter that left the default got the
    vendor's 1008 close instead)."""
    scenario = TTSScenario(ttfb_ms=90.0, leading_silence_ms=60.0, api_key=KEY)
    elevenlabs(ElevenLabsScenario(scenario, inactivity_scale=SCALE))
    prompt = prompts.prompts[3]
    model = REGISTRY.resolve(WS)
    ctx = MeasureContext(run_id="r", seed=1, region="test", timeout_s=10, secrets=(Secret(KEY),), emulator=True)
    row = asyncio.run(measure_item(model, LateSynthesis(REGISTRY.create(model)), prompts, prompt, ctx))
    assert row.status == "ok", (row.status, row.reason)
    # from the synthesis request, not the connection LATE_S before it (scheduling moves it far less)
    assert abs(row.ttfb_ms - scenario.truth(prompt.text)["ttfb_ms"]) < LATE_S * 1000 / 2
    assert row.connect_ms is not None and row.connect_ms < LATE_S * 1000  # the wait is in neither clock
