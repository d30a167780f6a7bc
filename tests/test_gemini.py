"""Contract tests: the Gemini Live adapter against its loopback emulator, over real sockets.

V2V is measured back from the written two-channel call recording; the emulator's reply starts
`response_ms` (+ jitter) after the caller's speech end, which it anchors on the turn's first audio
chunk (its sha256 keys the clip's speech end, as benchmarks/clock_truth.py keys Deepgram's anchors).
"""

import pytest
from support.contract import (KEY, assert_failure_row, assert_on_clock, caller_turn, measure, measure_three, rows,
                      s2s_scenario, serve)

from voxwatch.providers.emulators.scenario import S2SScenario

MODEL = "gemini/gemini-2.5-flash-native-audio-preview-12-2025"


@pytest.fixture(scope="module")
def clean():
    return caller_turn()


@pytest.mark.realtime
def test_gemini_v2v_from_the_call_recording(monkeypatch, tmp_path, clean):
    ds, clip, first = clean
    scenario = s2s_scenario(clip, first, response_ms=350.0, leading_silence_ms=80.0, jitter_ms=30.0)
    truth = scenario.truth(first)["v2v_ms"]
    with serve("gemini", scenario) as url:
        monkeypatch.setenv("VOXWATCH_GEMINI_BASE_URL", url)
        monkeypatch.setenv("VOXWATCH_GEMINI_API_KEY", KEY)
        streams = measure_three(MODEL, ds, clip, recordings_dir=tmp_path)
    assert_on_clock(streams, "v2v_ms", truth, clip=clip, leading_silence_ms=scenario.leading_silence_ms)
    assert all(r.audio_duration_s == pytest.approx((80.0 + 600.0) / 1000, abs=0.001) for r in rows(streams))
    assert streams[0].row.connect_ms is not None and streams[0].row.emulator
    assert len(list(tmp_path.rglob("*.wav"))) == 1  # the recording is kept, one file per item


@pytest.mark.realtime
@pytest.mark.parametrize("fault", ["unauthorized", "rate_limited", "server_error", "malformed", "disconnect",
                                   "no_final", "inaudible"])
def test_gemini_failures_become_rows(monkeypatch, clean, fault):
    ds, clip, first = clean
    with serve("gemini", s2s_scenario(clip, first, fault=fault)) as url:
        monkeypatch.setenv("VOXWATCH_GEMINI_BASE_URL", url)
        monkeypatch.setenv("VOXWATCH_GEMINI_API_KEY", KEY)
        row = measure(MODEL, ds, clip, timeout_s=3)
    assert_failure_row(row, fault)


def test_a_wrong_key_closes_the_session_as_an_auth_error(monkeypatch, clean):
    ds, clip, first = clean
    with serve("gemini", S2SScenario(api_key="another-key")) as url:
        monkeypatch.setenv("VOXWATCH_GEMINI_BASE_URL", url)
        monkeypatch.setenv("VOXWATCH_GEMINI_API_KEY", KEY)
        row = measure(MODEL, ds, clip)
    assert row.status == "auth_error" and "1007" in row.reason and KEY not in row.reason
    assert row.v2v_ms is None and row.connect_ms is None


@pytest.mark.parametrize("code, reason, status", [
    (1011, "You exceeded your current quota (RESOURCE_EXHAUSTED)", "rate_limited"),
    (1011, "Internal error occurred.", "server_error"),
    (1008, "Permission denied for " + KEY, "auth_error"),
    (1007, "Request contains an invalid argument.", "error"),
    (1000, "", "disconnected"),
])
def test_close_frames_become_failure_kinds_without_the_key(code, reason, status):
    import websockets
    from websockets.frames import Close

    from voxwatch.providers.s2s.gemini import _closed_error
    from voxwatch.providers.keys import Secret

    err = _closed_error(websockets.ConnectionClosedError(Close(code, reason), None), Secret(KEY))
    assert err.status == status and str(code) in str(err) and KEY not in str(err)
