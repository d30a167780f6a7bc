"""Contract tests: the Deepgram Flux adapter (`/v2/listen`) against the Deepgram emulator's Flux route,
over real sockets; the metrics equal the injected truth (tolerances: contract.py), every fault is its
row, CloseStream alone finalizes nothing, and the Turn Lifecycle Example of Deepgram's Flux docs
(emulators/stt/deepgram_flux.py DOCUMENTED) is replayed through the adapter.

Kept fast: the shortest clip over a second; the other cases share one emulator process that switches
scenarios between streams."""

import asyncio
from urllib.parse import parse_qs, urlsplit

import pytest
import websockets
from support.contract import (KEY, REGISTRY, STT_FAULTS, failure_rows_test, measure_stream, replayed, shortest,
                              stt_clock_test, stt_scenario, switched_emulator, the_one_final)

from voxwatch.datasets.catalog import Catalog, bundled_root

from voxwatch.foundation.events import END_OF_TURN, FINAL, PARTIAL, Timeline
from voxwatch.harness.measure import audio_sent
from voxwatch.providers.emulators.replay import Replay
from voxwatch.providers.emulators.scenario import STTScenario
from voxwatch.providers.emulators.stt.deepgram_flux import DOCUMENTED

pytestmark = pytest.mark.realtime

MODEL = "deepgram/flux-general-en"
PLEASE = "Hi I need to cancel my subscription please."


@pytest.fixture(scope="module")
def short():
    return shortest()


emulator = switched_emulator("deepgram", STTScenario(transcript="", speech_start_s=0.0, speech_end_s=0.0, api_key=KEY))


# StartOfTurn from the first word, Updates after it, the EndOfTurn final_ms after the end of speech,
# forced by ForceEndTurn at the end of the audio; its transcript is the hypothesis
test_turn_updates_and_the_forced_end_of_turn_on_the_clock = stt_clock_test(MODEL, first_partial_ms=120.0,
                                                                           clip_id="u039", check=the_one_final)


def test_close_stream_alone_finalizes_nothing_and_closes_without_a_status(monkeypatch, short, emulator):
    """As documented: CloseStream decodes what it has (a trailing Update), sends no EndOfTurn, and
    the server closes with no close status (1005), which ends the session normally."""
    ds, clip, _, _ = short
    emulator.use(monkeypatch, stt_scenario(clip, first_partial_ms=10.0, final_ms=240.0))
    timeline = Timeline()

    async def run():
        session = await REGISTRY.create(REGISTRY.resolve(MODEL)).connect(timeline)
        query = parse_qs(urlsplit(session.ws.request.path).query)
        assert query == {"model": ["flux-general-en"], "encoding": ["linear16"], "sample_rate": ["16000"]}
        await session.send_audio(audio_sent(ds, clip)[:2560])  # 80 ms, the recommended chunk
        await session._close_stream()
        await session.wait_final()
        await session.aclose()
        return session.ws.close_code

    assert asyncio.run(run()) == 1005
    assert not timeline.of(FINAL)


def test_the_phone_line_goes_as_8_khz_mulaw(monkeypatch, emulator, unpaced):
    """Flux takes raw mulaw at 8000 Hz (both declared in the query): the phone condition's stored
    mu-law is measured as it is, and the emulator (which refuses an undeclared format) transcribes it."""
    ds = Catalog([bundled_root()]).load("stt-starter-phone-mulaw")
    clip = next(c for c in ds.clips if c.id == "u039")
    wired = REGISTRY.create(REGISTRY.resolve(MODEL)).on_wire(ds.wire)
    assert (wired.encoding, wired.sample_rate) == ("mulaw", 8000)
    emulator.use(monkeypatch, stt_scenario(clip, first_partial_ms=60.0, final_ms=120.0))
    row = measure_stream(MODEL, ds, clip).row
    assert row.status == "ok", row.reason
    assert row.condition == "phone-mulaw" and row.hypothesis == clip.text


test_failures_become_rows = failure_rows_test(MODEL, STT_FAULTS)


def test_v1_only_parameters_are_refused_before_the_upgrade(short, emulator, monkeypatch):
    """/v2/listen takes v2's query only: a v1 parameter (here `interim_results`) is HTTP 400."""
    _, clip, _, _ = short
    emulator.use(monkeypatch, stt_scenario(clip))

    async def connect(query: str) -> int:
        try:
            async with websockets.connect(f"{emulator.url}/v2/listen?{query}",
                                          additional_headers={"Authorization": f"Token {KEY}"}):
                return 101
        except websockets.InvalidStatus as exc:
            return exc.response.status_code

    base = "model=flux-general-en&encoding=linear16&sample_rate=16000"
    assert asyncio.run(connect(base)) == 101
    assert asyncio.run(connect(base + "&interim_results=true")) == 400
    assert asyncio.run(connect("model=nova-3&encoding=linear16&sample_rate=16000")) == 400


def test_the_documented_turn_lifecycle_replayed_through_the_adapter(monkeypatch):
    """Deepgram's Turn Lifecycle Example: the empty Updates mark nothing, StartOfTurn, Updates,
    EagerEndOfTurn and TurnResumed are partials (the transcript replaced, never appended), and the
    EndOfTurn is the one final, equal to the last EagerEndOfTurn; the adapter ends with ForceEndTurn
    and CloseStream, and the close without a status ends the session normally."""
    replay = Replay(list(DOCUMENTED))
    timeline = Timeline()

    async def run() -> None:
        session = await REGISTRY.create(REGISTRY.resolve(MODEL)).connect(timeline)
        try:
            for _ in range(3):
                await session.send_audio(b"\x00\x00" * 1280)  # 80 ms frames
            await session.end_audio()
            await session.wait_final()
        finally:
            await session.aclose()

    asyncio.run(replayed(monkeypatch, "deepgram", replay, run))
    assert replay.missed is None and replay.audio_bytes == 3 * 2560
    assert [m for m in replay.received if not isinstance(m, bytes)] == [{"type": "ForceEndTurn"},
                                                                        {"type": "CloseStream"}]
    assert [e.text for e in timeline.of(PARTIAL)] == [
        "Hi I", "Hi I need to", "Hi I need to cancel my subscription.", "Hi I need to cancel my subscription.",
        "Hi I need to cancel my subscription please", PLEASE, PLEASE, PLEASE]
    assert [e.text for e in timeline.of(FINAL)] == [PLEASE]
    # the EndOfTurn with `"trigger": "model"` is Flux's own end of turn, stamped with the final; no eager one is
    assert [e.t_ns for e in timeline.of(END_OF_TURN)] == [timeline.of(FINAL)[0].t_ns]
