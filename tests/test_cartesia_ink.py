"""Contract tests: the Cartesia Ink STT adapter against the Cartesia emulator's `/stt/websocket` (the
same process serves `/tts/websocket`, as api.cartesia.ai does), over real sockets; the metrics equal
the injected truth (tolerances: contract.py), every fault gives its row, and the SDK's own test
fixture (quoted in emulators/tts/cartesia.py) is replayed through the adapter.
"""

import asyncio
import dataclasses

import pytest
from support.contract import KEY, REGISTRY, assert_failure_row, assert_on_clock, fault_timeout_s, measure, \
    measure_stream, measure_three, point, replayed, serve, shortest, switched_fixture

from voxwatch.foundation.events import FINAL, Timeline
from voxwatch.providers.emulators.replay import Replay
from voxwatch.providers.emulators.scenario import Scenarios, STTScenario, TTSScenario
from voxwatch.providers.emulators.tts.cartesia import INK_DOCUMENTED

pytestmark = pytest.mark.realtime

INK = "cartesia/ink-2"
SONIC = "cartesia/sonic-3.5-2026-05-04"


@pytest.fixture(scope="module")
def short():
    return shortest()


switched = switched_fixture("cartesia", Scenarios(tts=TTSScenario(api_key=KEY)))


def _stt(clip, **kw) -> STTScenario:
    return STTScenario(transcript=clip.text, speech_start_s=clip.speech_start, speech_end_s=clip.speech_end,
                       api_key=KEY, **kw)


def test_ink_partials_and_the_finalized_final_beside_sonic(monkeypatch, short):
    ds, clip, prompts, prompt = short
    tts = TTSScenario(ttfb_ms=70.0, leading_silence_ms=40.0, api_key=KEY)
    with serve("cartesia", Scenarios(stt=_stt(clip, first_partial_ms=120.0, final_ms=240.0), tts=tts)) as url:
        point(monkeypatch, "cartesia", url)
        text = measure_three(INK, ds, clip)
        speech = measure(SONIC, prompts, prompt)
    assert_on_clock(text, "first_partial_ms", 120.0, clip=clip)
    assert_on_clock(text, "ttfs_ms", 240.0, clip=clip)
    assert all(s.row.hypothesis == clip.text and s.row.emulator for s in text)
    assert speech.status == "ok", speech.reason


def test_ink_2_finalizes_only_when_asked(monkeypatch, short, switched):
    """The manual endpoint has no turn detection: a final the scenario would send before the end of
    speech comes only once `finalize` arrives, after the audio (TTFS > 0); the adapter's finalize is
    what makes it come at all."""
    ds, clip, _, _ = short
    url, switch = switched
    point(monkeypatch, "cartesia", url)
    switch.use(Scenarios(stt=_stt(clip, first_partial_ms=60.0, final_ms=-300.0), tts=TTSScenario(api_key=KEY)))
    stream = measure_stream(INK, ds, clip, timeout_s=3)
    assert stream.row.status == "ok", stream.row.reason
    assert stream.row.hypothesis == clip.text and stream.row.ttfs_ms > 0


@pytest.mark.parametrize("fault", ["unauthorized", "rate_limited", "server_error", "malformed", "disconnect",
                                   "no_final"])
def test_failures_become_rows(monkeypatch, short, switched, fault):
    ds, clip, _, _ = short
    url, switch = switched
    point(monkeypatch, "cartesia", url)
    switch.use(Scenarios(stt=_stt(clip, first_partial_ms=60.0, final_ms=100.0, fault=fault),
                         tts=TTSScenario(api_key=KEY)))
    assert_failure_row(measure(INK, ds, clip, timeout_s=fault_timeout_s(fault)), fault)


def test_an_unknown_model_is_the_documented_error_message(monkeypatch, short, switched):
    """The API reference's error example (model_not_found, status_code 400) becomes an error row."""
    ds, clip, _, _ = short
    model = dataclasses.replace(REGISTRY.resolve(INK), id="cartesia/ink-0")
    url, switch = switched
    point(monkeypatch, "cartesia", url)
    switch.use(Scenarios(stt=_stt(clip), tts=TTSScenario(api_key=KEY)))

    async def run() -> Exception:
        session = await REGISTRY.create(model).connect(Timeline())
        try:
            with pytest.raises(Exception) as failed:
                await session.wait_final()
            return failed.value
        finally:
            await session.aclose()

    error = asyncio.run(run())
    assert getattr(error, "status", None) == "error" and "model_not_found" in str(error)


def test_the_sdk_fixture_replayed_through_the_adapter(monkeypatch):
    """cartesia-python's test_manual_finalize fixture: "finalize" -> transcript "hello ", flush_done;
    "close" -> done: the final is marked, the turn ends at flush_done, the session at done."""
    replay = Replay(list(INK_DOCUMENTED))
    timeline = Timeline()

    async def run() -> None:
        session = await REGISTRY.create(REGISTRY.resolve(INK)).connect(timeline)
        try:
            await session.send_audio(b"\x00\x00" * 1600)
            await session.end_audio()
            await session.wait_final()
        finally:
            await session.aclose()

    asyncio.run(replayed(monkeypatch, "cartesia", replay, run))
    assert replay.missed is None and replay.audio_bytes == 3200
    assert [m for m in replay.received if isinstance(m, str)] == ["finalize", "close"]
    assert [e.text for e in timeline.events if e.kind == FINAL] == ["hello "]
