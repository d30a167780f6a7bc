"""Contract tests: the Cartesia Ink STT adapter against the Cartesia emulator's `/stt/websocket` (the
same process serves `/tts/websocket`, as api.cartesia.ai does), over real sockets; the metrics equal
the injected truth (tolerances: contract.py), every fault gives its row, and the SDK's own test
fixture (quoted in emulators/tts/cartesia.py) is replayed through the adapter.
"""

import asyncio
import dataclasses

import pytest
from support.contract import REGISTRY, failure_rows_test, measure, measure_stream, one_port, replayed, shortest, \
    stt_clock_test, stt_scenario, switched_emulator, tts_prompts

from voxwatch.foundation.events import FINAL, Timeline
from voxwatch.providers.emulators.replay import Replay
from voxwatch.providers.emulators.tts.cartesia import INK_DOCUMENTED

pytestmark = pytest.mark.realtime

INK = "cartesia/ink-2"
SONIC = "cartesia/sonic-3.5-2026-05-04"


@pytest.fixture(scope="module")
def short():
    return shortest()


emulator = switched_emulator("cartesia", one_port())


def _sonic_served_beside(streams, clip) -> None:
    prompts, prompt = tts_prompts()
    speech = measure(SONIC, prompts, prompt)
    assert speech.status == "ok", speech.reason


test_ink_partials_and_the_finalized_final_beside_sonic = stt_clock_test(
    INK, first_partial_ms=120.0, clip_id="u039", check=_sonic_served_beside)


def test_ink_2_finalizes_only_when_asked(monkeypatch, short, emulator):
    """The manual endpoint has no turn detection: a final the scenario would send before the end of
    speech comes only once `finalize` arrives, after the audio (TTFS > 0); the adapter's finalize is
    what makes it come at all."""
    ds, clip, _, _ = short
    emulator.use(monkeypatch, one_port(stt=stt_scenario(clip, first_partial_ms=60.0, final_ms=-300.0)))
    stream = measure_stream(INK, ds, clip, timeout_s=3)
    assert stream.row.status == "ok", stream.row.reason
    assert stream.row.hypothesis == clip.text and stream.row.ttfs_ms > 0


test_failures_become_rows = failure_rows_test(
    INK, ["unauthorized", "rate_limited", "server_error", "malformed", "disconnect", "no_final"])


def test_an_unknown_model_is_the_documented_error_message(monkeypatch, short, emulator):
    """The API reference's error example (model_not_found, status_code 400) becomes an error row."""
    ds, clip, _, _ = short
    model = dataclasses.replace(REGISTRY.resolve(INK), id="cartesia/ink-0")
    emulator.use(monkeypatch, one_port(stt=stt_scenario(clip)))

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
