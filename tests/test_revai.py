"""Contract tests: the Rev AI streaming adapter against its loopback emulator, over real sockets; the
metrics computed from its events equal the injected truth (tolerances: contract.py), every fault and
documented close code is its row, and the example session of Rev AI's documentation reads as documented."""

import asyncio

import pytest
import websockets
from support.contract import KEY, REGISTRY, assert_failure_row, assert_on_clock, fault_timeout_s, measure, \
    measure_three, serve, switched_emulator

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.foundation.events import FINAL, PARTIAL, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.emulators.scenario import STTScenario
from voxwatch.providers.emulators.stt.revai import CLOSING, RevAIEmulator

pytestmark = pytest.mark.realtime

MODEL = "revai/machine_v2"


@pytest.fixture(scope="module")
def clean():
    ds = Catalog([bundled_root()]).load("stt-starter-clean")
    return ds, {c.id: c for c in ds.clips}


faulty = switched_emulator("revai", STTScenario(transcript="", speech_start_s=0.0, speech_end_s=0.0, api_key=KEY))


def _env(monkeypatch, url: str) -> None:
    monkeypatch.setenv("VOXWATCH_REVAI_BASE_URL", url)
    monkeypatch.setenv("VOXWATCH_REVAI_API_KEY", KEY)


def _scenario(clip, **kw) -> STTScenario:
    return STTScenario(transcript=clip.text, speech_start_s=clip.speech_start, speech_end_s=clip.speech_end,
                       api_key=KEY, **kw)


def test_segments_on_the_clock_and_eos_flushes_the_last_final(monkeypatch, clean):
    """Four words: the first segment's final comes mid-speech, the last one's `final_ms` after the
    end of speech; finals carry their punctuation and spaces as elements, and read back whole."""
    ds, clips = clean
    clip = clips["u040"]
    with serve("revai", _scenario(clip, first_partial_ms=180.0, final_ms=240.0)) as url:
        _env(monkeypatch, url)
        streams = measure_three(MODEL, ds, clip)
    assert_on_clock(streams, "first_partial_ms", 180.0, clip=clip)
    assert_on_clock(streams, "ttfs_ms", 240.0, clip=clip)
    row = streams[0].row
    assert row.hypothesis == clip.text and row.substitutions == row.deletions == row.insertions == 0
    assert len([e for e in streams[0].timeline.of(FINAL) if e.text]) == 2  # two segments
    assert row.connect_ms is not None and row.emulator


def test_a_segment_final_before_eos_stays_the_final(monkeypatch, clean):
    """The final came before the caller's audio ended: EOS finds nothing to finalize and closes."""
    ds, clips = clean
    clip = clips["u039"]
    with serve("revai", _scenario(clip, final_ms=-60.0)) as url:
        _env(monkeypatch, url)
        streams = measure_three(MODEL, ds, clip)
    assert_on_clock(streams, "ttfs_ms", -60.0, clip=clip)
    assert streams[0].row.hypothesis == clip.text


@pytest.mark.parametrize("fault", ["unauthorized", "rate_limited", "server_error", "malformed", "disconnect",
                                   "no_final"])
def test_failures_become_rows(monkeypatch, clean, faulty, fault):
    ds, clips = clean
    clip = clips["u039"]
    faulty.use(monkeypatch, _scenario(clip, first_partial_ms=10.0, fault=fault))
    row = measure(MODEL, ds, clip, timeout_s=fault_timeout_s(fault))
    assert_failure_row(row, fault)


def test_a_wrong_token_is_closed_4001_after_the_upgrade(monkeypatch, clean, faulty):
    """Rev AI checks the access token after the upgrade and closes with 4001: a refused key, and the
    key (in the query string) is nowhere in the row."""
    ds, clips = clean
    clip = clips["u039"]
    faulty.use(monkeypatch, STTScenario(transcript=clip.text, speech_start_s=0.0, speech_end_s=1.0,
                                        api_key="another-key"))
    row = measure(MODEL, ds, clip, timeout_s=10)
    assert row.status == "auth_error" and "4001" in row.reason and KEY not in repr(row), row.reason


async def _doc_session(monkeypatch) -> tuple[RevAIEmulator, Timeline, ProviderError | None, tuple]:
    """The documented example session, served in process: the client sends three audio frames (one
    before each of the page's groups of replies), then EOS."""
    emulator = RevAIEmulator(STTScenario(transcript="", speech_start_s=0.0, speech_end_s=0.0, api_key=KEY),
                             replay=True)
    async with websockets.serve(emulator.handle, "127.0.0.1", 0, process_request=emulator.process_request) as server:
        _env(monkeypatch, f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}")
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
