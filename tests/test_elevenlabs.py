"""Contract tests: the ElevenLabs adapters (TTS over the stream-input WebSocket and over HTTP
streaming, Scribe v2 Realtime STT) against one loopback emulator of all three endpoints, over real
sockets; the metrics equal the injected truth (tolerances: contract.py) and every fault gives its row.
"""

import asyncio
import pytest
from contract import KEY, REGISTRY, assert_failure_row, assert_on_clock, emulator_fixture, measure, measure_three, rows

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.providers.emulators.scenario import Scenarios, STTScenario, TTSScenario
from voxwatch.providers.keys import Secret
from voxwatch.workers.measure import MeasureContext, measure_item

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
        assert_failure_row(measure(model_id, prompts, prompts.prompts[0], timeout_s=2), fault)
    if fault != "inaudible":  # TTS only
        assert_failure_row(measure(STT, ds, clip, timeout_s=2), fault)


def test_a_wrong_key_is_refused_on_every_endpoint_and_never_shown(elevenlabs, prompts, clean):
    ds, clip = clean
    elevenlabs(Scenarios(tts=TTSScenario(api_key="another-key"),
                         stt=STTScenario(transcript="x", speech_start_s=0.1, speech_end_s=0.5, api_key="another-key")))
    refused = [measure(WS, prompts, prompts.prompts[0]), measure(HTTP, prompts, prompts.prompts[0]),
               measure(STT, ds, clip)]
    for row in refused:
        assert row.status == "auth_error" and "HTTP 401" in row.reason and KEY not in repr(row)
