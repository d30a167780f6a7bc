"""Contract tests: the AssemblyAI Universal-Streaming adapter against its loopback emulator, over
real sockets; the metrics computed from its events equal the injected truth (tolerances: contract.py).

AssemblyAI takes 50-1000 ms of audio per frame, so the adapter sends the harness's 20 ms chunks in
threes: the emulator's clock (like AssemblyAI's) starts when the first frame arrives, 40 ms after
t0, and every latency measured carries that batching, as it would against AssemblyAI.
"""

import math

import pytest
from contract import KEY, assert_failure_row, assert_on_clock, measure, measure_three, serve

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.providers.assemblyai import MIN_CHUNK_MS
from voxwatch.providers.emulators.scenario import STTScenario

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
        row = measure(MODEL, ds, clip, timeout_s=2)
    assert_failure_row(row, fault)


def test_a_formatted_copy_of_a_final_is_not_a_second_final(monkeypatch, clean):
    """With format_turns on, AssemblyAI re-sends each final formatted; the first end of turn stays the final."""
    from voxwatch.providers.assemblyai import AssemblyAISTT

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
