"""Contract tests: the Soniox real-time adapter against its loopback emulator, over real sockets; the
metrics computed from its events equal the injected truth (tolerances: contract.py), every fault is
its row, and a message sequence from Soniox's own SDK test fixtures reads as the SDK reads it."""

import asyncio
import json

import pytest
import websockets
from support.contract import (KEY, REGISTRY, failure_rows_test, point, starter_clean, stt_clock_test,
                              stt_early_final_test, stt_scenario, switched_emulator)

from voxwatch.foundation.events import FINAL, PARTIAL, Timeline
from voxwatch.harness.measure import MeasureContext, measure_item
from voxwatch.providers.base import ProviderError
from voxwatch.providers.emulators.scenario import STTScenario
from voxwatch.providers.emulators.stt.soniox import MAX_CONCURRENT, PATH, SDK_CASES, SonioxEmulator
from voxwatch.providers.keys import Secret

pytestmark = pytest.mark.realtime

MODEL = "soniox/stt-rt-v6"


@pytest.fixture(scope="module")
def clean():
    return starter_clean()


emulator = switched_emulator("soniox", STTScenario(transcript="", speech_start_s=0.0, speech_end_s=0.0, api_key=KEY))


def _finals_read_back_without_fin(streams, clip) -> None:
    """Sub-word tokens carry their spaces, so the finals read back as the transcript, `<fin>` never in them."""
    for s in streams:
        finals = " ".join(e.text for e in s.timeline.of(FINAL))
        assert finals == clip.text and "<fin>" not in finals


# partials from the first non-final token, the final at the result that finalizes the last word (with `<fin>`)
test_tokens_on_the_clock_and_the_finalized_transcript = stt_clock_test(MODEL, check=_finals_read_back_without_fin)
# the last word went final before the caller's audio ended: `finalize` is answered by `<fin>` at once,
# and the final stays the earlier result (an empty marker message is no final)
test_a_finalize_after_the_last_final_gets_fin_alone = stt_early_final_test(MODEL)
test_failures_become_rows = failure_rows_test(
    MODEL, ["unauthorized", "rate_limited", "server_error", "malformed", "disconnect", "no_final"])


def test_the_eleventh_concurrent_session_is_refused_with_the_documented_429(monkeypatch, clean, emulator):
    """Soniox allows 10 concurrent requests; the next gets an error 429 message and a close: a
    rate-limited row, with Soniox's message and never the key."""
    ds, clips = clean
    clip = clips["u039"]
    emulator.use(monkeypatch, stt_scenario(clip))
    url = emulator.url

    async def crowded():
        held = [await websockets.connect(f"{url}{PATH}", additional_headers={"Authorization": f"Bearer {KEY}"})
                for _ in range(MAX_CONCURRENT)]
        try:
            for ws in held:
                await ws.send(json.dumps({"model": "stt-rt-v6", "audio_format": "auto"}))
            model = REGISTRY.resolve(MODEL)
            return await measure_item(model, REGISTRY.create(model), ds, clip, MeasureContext(
                run_id="r", seed=1, region="test", timeout_s=10, secrets=(Secret(KEY),), emulator=True))
        finally:
            for ws in held:
                await ws.close()

    row = asyncio.run(crowded())
    assert row.status == "rate_limited", (row.status, row.reason)
    assert "429" in row.reason and KEY not in row.reason and row.ttfs_ms is None


async def _replay(case: str, monkeypatch) -> tuple[SonioxEmulator, Timeline, ProviderError | None]:
    """Serve one SDK case in process and drive the adapter as the SDK's test drives its client: the
    config, the case's audio frames, then the FINISH message ("", sent by aclose)."""
    emulator = SonioxEmulator(STTScenario(transcript="", speech_start_s=0.0, speech_end_s=0.0, api_key=KEY), case)
    async with websockets.serve(emulator.handle, "127.0.0.1", 0, process_request=emulator.process_request) as server:
        point(monkeypatch, "soniox", f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}")
        timeline = Timeline()
        session = await REGISTRY.create(REGISTRY.resolve(MODEL)).connect(timeline)
        for frame in SDK_CASES[case]["expected_sent"][:-1]:
            await session.send_audio(frame)
        await asyncio.sleep(0.05)  # the SDK's client reads each event as it comes
        await session.aclose()
        failure = None
        try:
            await session.wait_final()
        except ProviderError as exc:
            failure = exc
    return emulator, timeline, failure


def test_the_sdk_fixtures_happy_path_reads_as_hello_world(monkeypatch):
    emulator, timeline, failure = asyncio.run(_replay("happy_path_simple", monkeypatch))
    assert failure is None
    assert emulator.received == SDK_CASES["happy_path_simple"]["expected_sent"]  # audio, then "" (FINISH)
    # the SDK's _HAPPY_CONFIG, but for its placeholder model; the key is in the header, not the config
    config = emulator.configs[0]
    assert {k: config[k] for k in ("audio_format", "sample_rate", "num_channels")} == {
        "audio_format": "pcm_s16le", "sample_rate": 16000, "num_channels": 1}
    assert config["model"] == "stt-rt-v6" and "api_key" not in config
    # "Hello" is held until " world" shows the word ended; the finals read back as the SDK's text
    assert " ".join(e.text for e in timeline.of(FINAL)) == "Hello world"


def test_the_sdk_fixtures_partials_replace_each_other_and_the_final_is_whole(monkeypatch):
    emulator, timeline, failure = asyncio.run(_replay("multi_partial_then_final", monkeypatch))
    assert failure is None
    assert emulator.received == SDK_CASES["multi_partial_then_final"]["expected_sent"]
    assert [e.text for e in timeline.of(PARTIAL)] == ["Hel", "Hello"]  # re-sent whole, never appended
    assert " ".join(e.text for e in timeline.of(FINAL)) == "Hello world"


def test_the_sdk_fixtures_error_event_is_the_sessions_failure(monkeypatch):
    emulator, timeline, failure = asyncio.run(_replay("server_sends_error_event", monkeypatch))
    assert emulator.received == [""]
    assert failure is not None and failure.status == "error"
    assert "400" in str(failure) and "Invalid audio format" in str(failure)
    assert not timeline.of(FINAL)
