"""Contract tests: the AssemblyAI Universal-Streaming adapter against its loopback emulator, over
real sockets; the metrics computed from its events equal the injected truth (tolerances: contract.py).

AssemblyAI takes 50-1000 ms of audio per frame, so the adapter sends the harness's 20 ms chunks in
threes: the emulator's clock (like AssemblyAI's) starts when the first frame arrives, 40 ms after
t0, and every latency measured carries that batching, as it would against AssemblyAI.
"""

import asyncio
import math
from http import HTTPStatus

import pytest
import websockets
from support.contract import KEY, fault_timeout_s, REGISTRY, assert_failure_row, assert_on_clock, measure, measure_three, serve

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.metrics.series import NOT_AN_ATTEMPT, RATES
from voxwatch.providers.stt.assemblyai import MIN_CHUNK_MS
from voxwatch.providers.base import ProviderError
from voxwatch.providers.emulators.scenario import STTScenario
from voxwatch.foundation.events import Timeline
from voxwatch.harness import pacer
from voxwatch.harness.measure import CLOCK_FIELDS

pytestmark = pytest.mark.realtime

MODEL = "assemblyai/universal-streaming-english"
CHUNK_MS = 20  # the harness's default chunk
BATCH_LAG_MS = (math.ceil(MIN_CHUNK_MS / CHUNK_MS) - 1) * CHUNK_MS  # the first frame leaves with the 3rd chunk


@pytest.fixture(scope="module")
def clean():
    ds = Catalog([bundled_root()]).load("stt-starter-clean")
    return ds, {c.id: c for c in ds.clips}


def _env(monkeypatch, url: str) -> None:
    monkeypatch.setenv("VOXWATCH_ASSEMBLYAI_BASE_URL", url)
    monkeypatch.setenv("VOXWATCH_ASSEMBLYAI_API_KEY", KEY)


def test_partial_turns_and_the_forced_end_of_turn(monkeypatch, clean):
    ds, clips = clean
    clip = clips["u049"]
    scenario = STTScenario(transcript=clip.text, speech_start_s=clip.speech_start, speech_end_s=clip.speech_end,
                           first_partial_ms=180.0, final_ms=240.0, api_key=KEY)
    with serve("assemblyai", scenario) as url:
        _env(monkeypatch, url)
        streams = measure_three(MODEL, ds, clip)
    assert_on_clock(streams, "first_partial_ms", 180.0 + BATCH_LAG_MS, clip=clip)
    assert_on_clock(streams, "ttfs_ms", 240.0 + BATCH_LAG_MS, clip=clip)
    row = streams[0].row
    assert row.hypothesis == clip.text and row.substitutions == row.deletions == row.insertions == 0
    assert row.connect_ms is not None and row.emulator


def test_a_turn_ended_before_the_end_of_speech_is_flushed_by_terminate(monkeypatch, clean):
    """No turn open at ForceEndpoint: the adapter terminates and takes the turn that already ended."""
    ds, clips = clean
    clip = clips["u039"]
    scenario = STTScenario(transcript=clip.text, speech_start_s=clip.speech_start, speech_end_s=clip.speech_end,
                           final_ms=-60.0, api_key=KEY)
    with serve("assemblyai", scenario) as url:
        _env(monkeypatch, url)
        streams = measure_three(MODEL, ds, clip)
    assert_on_clock(streams, "ttfs_ms", -60.0 + BATCH_LAG_MS, clip=clip)
    assert streams[0].row.hypothesis == clip.text


@pytest.mark.parametrize("fault", ["unauthorized", "rate_limited", "server_error", "malformed", "disconnect",
                                   "no_final"])
def test_failures_become_rows(monkeypatch, clean, fault):
    ds, clips = clean
    clip = clips["u049"]
    scenario = STTScenario(transcript=clip.text, speech_start_s=clip.speech_start, speech_end_s=clip.speech_end,
                           api_key=KEY, fault=fault)
    with serve("assemblyai", scenario) as url:
        _env(monkeypatch, url)
        row = measure(MODEL, ds, clip, timeout_s=fault_timeout_s(fault))
    assert_failure_row(row, fault)


def test_a_formatted_copy_of_a_final_is_not_a_second_final(monkeypatch, clean):
    """With format_turns on, AssemblyAI re-sends each final formatted; the first end of turn stays the final."""
    from voxwatch.providers.stt.assemblyai import AssemblyAISTT

    ds, clips = clean
    clip = clips["u039"]
    monkeypatch.setattr(AssemblyAISTT, "format_turns", True)
    scenario = STTScenario(transcript=clip.text.lower().rstrip("."), speech_start_s=clip.speech_start,
                           speech_end_s=clip.speech_end, final_ms=200.0, api_key=KEY)
    with serve("assemblyai", scenario) as url:
        _env(monkeypatch, url)
        row = measure(MODEL, ds, clip)
    assert row.status == "ok", row.reason
    assert row.hypothesis == scenario.transcript  # unformatted and once, not "Yes please." appended


def test_audio_sent_faster_than_real_time_is_the_harness_fault_not_the_vendors(monkeypatch, clean):
    """AssemblyAI closes 4029 ("Client sent audio too fast") when audio outruns real time. The harness
    paces in real time, so that is the worker's fault (a stall, then a burst; here a pacer that never
    waits): the row is excluded, with the reason, and counts in no rate against the vendor."""
    ds, clips = clean
    clip = clips["u049"]  # 4.3 s of audio: more ahead of real time than the emulator allows, sent at once

    async def no_wait(deadline_ns, clock=None) -> None:
        await asyncio.sleep(0)

    monkeypatch.setattr(pacer, "sleep_until", no_wait)
    scenario = STTScenario(transcript=clip.text, speech_start_s=clip.speech_start, speech_end_s=clip.speech_end,
                           api_key=KEY)
    with serve("assemblyai", scenario) as url:
        _env(monkeypatch, url)
        row = measure(MODEL, ds, clip, timeout_s=5)
    assert row.status == "excluded", (row.status, row.reason)
    assert "4029" in row.reason and "faster than real time" in row.reason and KEY not in row.reason
    assert row.status in NOT_AN_ATTEMPT and not any(row.status in counted for counted in RATES.values())
    assert all(getattr(row, name) is None for name in CLOCK_FIELDS if name != "connect_ms")


def test_the_handshake_carries_the_api_version_the_sdk_sends(monkeypatch):
    """The official SDK sends `AssemblyAI-Version: 2025-05-12` on the v3 handshake; so does the adapter
    (read off a real socket by a server that then refuses the key)."""
    seen = {}

    def refuse(connection, request):
        seen.update(version=request.headers.get("AssemblyAI-Version"), auth=request.headers.get("Authorization"))
        return connection.respond(HTTPStatus.UNAUTHORIZED, "invalid credentials\n")

    async def handshake() -> ProviderError:
        async with websockets.serve(lambda ws: None, "127.0.0.1", 0, process_request=refuse) as server:
            _env(monkeypatch, f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}")
            with pytest.raises(ProviderError) as refused:
                await REGISTRY.create(REGISTRY.resolve(MODEL)).connect(Timeline())
            return refused.value

    assert asyncio.run(handshake()).status == "auth_error"
    assert seen == {"version": "2025-05-12", "auth": KEY}
