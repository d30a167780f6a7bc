"""Contract tests: the Rev AI streaming adapter against its loopback emulator, over real sockets; the
metrics computed from its events equal the injected truth (tolerances: contract.py), every fault and
documented close code is its row, and the example session of Rev AI's documentation reads as documented."""

import asyncio

import pytest
import websockets
from support.contract import KEY, REGISTRY, failure_rows_test, measure, point, starter_clean, stt_clock_test, \
    stt_early_final_test, switched_emulator

from voxwatch.foundation.events import FINAL, PARTIAL, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.emulators.scenario import STTScenario
from voxwatch.providers.emulators.stt.revai import CLOSING, RevAIEmulator

pytestmark = pytest.mark.realtime

MODEL = "revai/machine_v2"


@pytest.fixture(scope="module")
def clean():
    return starter_clean()


emulator = switched_emulator("revai", STTScenario(transcript="", speech_start_s=0.0, speech_end_s=0.0, api_key=KEY))


def _two_segments(streams, clip) -> None:
    """Four words in two segments: the first one's final comes mid-speech, the last one's at EOS."""
    assert all(len([e for e in s.timeline.of(FINAL) if e.text]) == 2 for s in streams)


# finals carry their punctuation and spaces as elements, and read back whole; EOS flushes the last final
test_segments_on_the_clock_and_eos_flushes_the_last_final = stt_clock_test(MODEL, check=_two_segments)
# the final came before the caller's audio ended: EOS finds nothing to finalize and closes
test_a_segment_final_before_eos_stays_the_final = stt_early_final_test(MODEL)
test_failures_become_rows = failure_rows_test(
    MODEL, ["unauthorized", "rate_limited", "server_error", "malformed", "disconnect", "no_final"])


def test_a_wrong_token_is_closed_4001_after_the_upgrade(monkeypatch, clean, emulator):
    """Rev AI checks the access token after the upgrade and closes with 4001: a refused key, and the
    key (in the query string) is nowhere in the row."""
    ds, clips = clean
    clip = clips["u039"]
    emulator.use(monkeypatch, STTScenario(transcript=clip.text, speech_start_s=0.0, speech_end_s=1.0,
                                          api_key="another-key"))
    row = measure(MODEL, ds, clip, timeout_s=10)
    assert row.status == "auth_error" and "4001" in row.reason and KEY not in repr(row), row.reason


async def _doc_session(monkeypatch) -> tuple[RevAIEmulator, Timeline, ProviderError | None, tuple]:
    """The documented example session, served in process: the client sends three audio frames (one
    before each of the page's groups of replies), then EOS."""
    emulator = RevAIEmulator(STTScenario(transcript="", speech_start_s=0.0, speech_end_s=0.0, api_key=KEY),
                             replay=True)
    async with websockets.serve(emulator.handle, "127.0.0.1", 0, process_request=emulator.process_request) as server:
        point(monkeypatch, "revai", f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}")
        timeline = Timeline()
        session = await REGISTRY.create(REGISTRY.resolve(MODEL)).connect(timeline)
        for _ in range(3):
            await session.send_audio(b"\x00\x00" * 4000)  # 250 ms, as Rev AI advises
            await asyncio.sleep(0.02)
        await session.end_audio()
        failure = None
        try:
            await asyncio.wait_for(session.wait_final(), 5)
        except ProviderError as exc:
            failure = exc
        close = session.ws.close_code, session.ws.close_reason
        await session.aclose()
    return emulator, timeline, failure, close


def test_the_documented_example_session_reads_as_documented(monkeypatch):
    emulator, timeline, failure, close = asyncio.run(_doc_session(monkeypatch))
    assert failure is None
    # the page's GET: the content type of its example, language en, the key in access_token
    query = emulator.queries[0]
    assert query["content_type"] == "audio/x-raw;layout=interleaved;rate=16000;format=S16LE;channels=1"
    assert query["language"] == "en" and query["access_token"] == KEY and query["transcriber"] == "machine_v2"
    assert [m if isinstance(m, str) else "audio" for m in emulator.received] == ["audio"] * 3 + ["EOS"]
    # partials repeat their segment (replaced, never appended); the final is the text the page gives,
    # its punctuation and spaces from the punct elements
    assert [e.text for e in timeline.of(PARTIAL)] == ["one", "one tooth", "one tooth three", "five sticks"]
    assert [e.text for e in timeline.of(FINAL)] == ["One two."]
    assert close == (1000, CLOSING)  # the SDK fixture's close: the stream's normal end after EOS
