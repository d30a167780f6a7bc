"""Contract tests: the Modulate Velma-2 streaming adapter against its loopback emulator, over real
sockets; the metrics equal the injected truth (tolerances: contract.py), every fault is its row, and
Modulate's documented session (emulators/stt/modulate.py DOCUMENTED) is replayed through the adapter.

Kept fast: the shortest clip over a second; the fault cases share one emulator process that switches
scenarios between streams."""

import asyncio
from urllib.parse import parse_qs, urlsplit

import pytest
import websockets
from support.contract import (KEY, REGISTRY, STT_FAULTS, failure_rows_test, measure_stream, replayed, shortest,
                              stt_clock_test, stt_scenario, switched_emulator, the_one_final)

from voxwatch.foundation.events import FINAL, PARTIAL, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.emulators.replay import Replay
from voxwatch.providers.emulators.scenario import STTScenario
from voxwatch.providers.emulators.stt.modulate import DOCUMENTED

pytestmark = pytest.mark.realtime

MODEL = "modulate/velma-2-stt-streaming"
ENGLISH = "modulate/velma-2-stt-streaming-english-v2"


@pytest.fixture(scope="module")
def short():
    return shortest()


emulator = switched_emulator("modulate", STTScenario(transcript="", speech_start_s=0.0, speech_end_s=0.0, api_key=KEY))


# partial_utterance from the first word, the utterance final_ms after the end of speech; the utterance's
# text is the hypothesis
test_partials_and_the_utterance_on_the_clock = stt_clock_test(MODEL, first_partial_ms=120.0, clip_id="u039",
                                                              check=the_one_final)


def test_english_v2_sends_its_one_final_after_the_end_of_the_audio(monkeypatch, short, emulator):
    """English v2's final comes at the end of the stream: a final the scenario puts before the end of
    speech still waits for the empty text frame, so TTFS is after the end of speech, never before."""
    ds, clip, _, _ = short
    emulator.use(monkeypatch, stt_scenario(clip, first_partial_ms=60.0, final_ms=-300.0))
    stream = measure_stream(ENGLISH, ds, clip)
    assert stream.row.status == "ok", stream.row.reason
    assert stream.row.hypothesis == clip.text and stream.row.ttfs_ms > 0
    assert stream.timeline.of(PARTIAL)  # English v2 always sends partials


test_failures_become_rows = failure_rows_test(MODEL, STT_FAULTS)


def test_the_key_goes_in_the_query_and_a_bad_audio_format_is_an_error_message(monkeypatch, short, emulator):
    """The key rides in the query (Modulate takes no header on the stream); an audio setting the
    server refuses comes back as its `error` message, which is the session's failure, keyless."""
    _, clip, _, _ = short
    emulator.use(monkeypatch, stt_scenario(clip))

    async def refused() -> str:
        async with websockets.connect(f"{emulator.url}/api/velma-2-stt-streaming?api_key={KEY}&audio_format=s16le"
                                      "&sample_rate=12345&num_channels=1") as ws:
            return await ws.recv()

    assert '"type": "error"' in asyncio.run(refused())
    adapter = REGISTRY.create(REGISTRY.resolve(MODEL))
    adapter.sample_rate = 12345

    async def session_failure() -> ProviderError:
        session = await adapter.connect(Timeline())
        query = parse_qs(urlsplit(session.ws.request.path).query)
        assert query["api_key"] == [KEY] and query["partial_results"] == ["true"]
        assert query["speaker_diarization"] == ["false"] and "Authorization" not in session.ws.request.headers
        with pytest.raises(ProviderError) as failed:
            await session.wait_final()
        await session.aclose()
        return failed.value

    failure = asyncio.run(session_failure())
    assert failure.status == "error" and "sample_rate" in str(failure) and KEY not in str(failure)


def test_the_documented_session_replayed_through_the_adapter(monkeypatch):
    """Modulate's documented flow: audio frames of any size, the empty text frame, then the utterance
    and `done`, and the server closes; the utterance's text is the one final."""
    replay = Replay(list(DOCUMENTED))
    timeline = Timeline()

    async def run() -> None:
        session = await REGISTRY.create(REGISTRY.resolve(MODEL)).connect(timeline)
        try:
            for size in (3200, 1000, 3200):  # "Frames can be any size."
                await session.send_audio(b"\x00" * size)
            await session.end_audio()
            await session.wait_final()
        finally:
            await session.aclose()

    asyncio.run(replayed(monkeypatch, "modulate", replay, run))
    assert replay.missed is None and replay.audio_bytes == 7400
    assert replay.received[-1] == "" and replay.received.count("") == 1  # one end of audio, sent last
    assert [e.text for e in timeline.of(FINAL)] == ["Hello everyone. Welcome to the meeting."]
    assert not timeline.of(PARTIAL)
