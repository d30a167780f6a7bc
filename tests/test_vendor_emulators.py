"""Contract tests: each cloud adapter against a loopback emulator of its vendor's protocol, over
real sockets; the metrics computed from its events equal the injected truth (tolerances: contract.py).
"""

import pytest
from support.contract import KEY, fault_timeout_s, assert_failure_row, assert_on_clock, measure, measure_three, rows, serve

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.providers.emulators.scenario import STTScenario, TTSScenario

pytestmark = pytest.mark.realtime


@pytest.fixture(scope="module")
def clean():
    ds = Catalog([bundled_root()]).load("stt-starter-clean")
    return ds, next(c for c in ds.clips if c.id == "u049")


def test_deepgram_partials_and_forced_final(monkeypatch, clean):
    ds, clip = clean
    scenario = STTScenario(transcript=clip.text, speech_start_s=clip.speech_start, speech_end_s=clip.speech_end,
                           first_partial_ms=180.0, final_ms=240.0, api_key=KEY)
    with serve("deepgram", scenario) as url:
        monkeypatch.setenv("VOXWATCH_DEEPGRAM_BASE_URL", url)
        monkeypatch.setenv("VOXWATCH_DEEPGRAM_API_KEY", KEY)
        streams = measure_three("deepgram/nova-3", ds, clip)
    assert_on_clock(streams, "first_partial_ms", 180.0, clip=clip)
    assert_on_clock(streams, "ttfs_ms", 240.0, clip=clip)
    row = streams[0].row
    assert row.hypothesis == clip.text and row.substitutions == row.deletions == row.insertions == 0
    assert row.connect_ms is not None and row.emulator


def test_deepgram_final_before_the_end_of_speech_is_negative(monkeypatch, clean):
    ds, _ = clean
    clip = next(c for c in ds.clips if c.id == "u039")
    scenario = STTScenario(transcript=clip.text, speech_start_s=clip.speech_start, speech_end_s=clip.speech_end,
                           final_ms=-60.0, api_key=KEY)
    with serve("deepgram", scenario) as url:
        monkeypatch.setenv("VOXWATCH_DEEPGRAM_BASE_URL", url)
        monkeypatch.setenv("VOXWATCH_DEEPGRAM_API_KEY", KEY)
        streams = measure_three("deepgram/nova-3", ds, clip)
    assert_on_clock(streams, "ttfs_ms", -60.0, clip=clip)


def test_deepgram_turn_ends_when_finalize_finds_nothing_left(monkeypatch, clean):
    """Endpointing finalized the last words 20 ms after the end of speech, before the Finalize (sent
    with the last chunk, 100 ms after it) arrived; Deepgram need not answer such a Finalize, and here
    it does not. The turn ends anyway, well within the time limit, and TTFS is that endpointed final's."""
    ds, clip = clean
    scenario = STTScenario(transcript=clip.text, speech_start_s=clip.speech_start, speech_end_s=clip.speech_end,
                           final_ms=20.0, empty_finalize_reply=False, api_key=KEY)
    with serve("deepgram", scenario) as url:
        monkeypatch.setenv("VOXWATCH_DEEPGRAM_BASE_URL", url)
        monkeypatch.setenv("VOXWATCH_DEEPGRAM_API_KEY", KEY)
        streams = measure_three("deepgram/nova-3", ds, clip, timeout_s=5)
    assert_on_clock(streams, "ttfs_ms", 20.0, clip=clip)
    assert all(s.row.hypothesis == clip.text for s in streams)


@pytest.mark.parametrize("fault", ["unauthorized", "rate_limited", "server_error", "malformed", "disconnect",
                                   "no_final"])
def test_deepgram_failures_become_rows(monkeypatch, clean, fault):
    ds, clip = clean
    scenario = STTScenario(transcript=clip.text, speech_start_s=clip.speech_start, speech_end_s=clip.speech_end,
                           api_key=KEY, fault=fault)
    with serve("deepgram", scenario) as url:
        monkeypatch.setenv("VOXWATCH_DEEPGRAM_BASE_URL", url)
        monkeypatch.setenv("VOXWATCH_DEEPGRAM_API_KEY", KEY)
        row = measure("deepgram/nova-3", ds, clip, timeout_s=fault_timeout_s(fault))
    assert_failure_row(row, fault)


def test_a_bad_key_is_an_error_row_that_never_shows_the_key(monkeypatch, clean):
    ds, clip = clean
    with serve("deepgram", STTScenario(transcript="x", speech_start_s=0.1, speech_end_s=0.5, api_key="other")) as url:
        monkeypatch.setenv("VOXWATCH_DEEPGRAM_BASE_URL", url)
        monkeypatch.setenv("VOXWATCH_DEEPGRAM_API_KEY", KEY)
        row = measure("deepgram/nova-3", ds, clip)
    assert row.status == "auth_error" and "HTTP 401" in row.reason and KEY not in row.reason
    assert row.ttfs_ms is None and row.connect_ms is None


@pytest.mark.parametrize("scenario", [
    TTSScenario(ttfb_ms=90.0, leading_silence_ms=60.0, api_key=KEY),
    TTSScenario(ttfb_ms=40.0, leading_silence_ms=100.0, gaming_delay_ms=400.0, api_key=KEY),  # silence first, speech late
], ids=["streaming", "gaming"])
def test_cartesia_ttfa_with_its_components(monkeypatch, scenario):
    prompts = Catalog([bundled_root()]).load("tts-prompts")
    prompt = prompts.prompts[3]
    truth = scenario.truth(prompt.text)
    with serve("cartesia", scenario) as url:
        monkeypatch.setenv("VOXWATCH_CARTESIA_BASE_URL", url)
        monkeypatch.setenv("VOXWATCH_CARTESIA_API_KEY", KEY)
        streams = measure_three("cartesia/sonic-3.5-2026-05-04", prompts, prompt)
    assert_on_clock(streams, "ttfb_ms", truth["ttfb_ms"])
    assert all(r.leading_silence_ms == pytest.approx(truth["leading_silence_ms"], abs=1.0) for r in rows(streams))
    assert_on_clock(streams, "ttfa_ms", truth["ttfa_ms"], leading_silence_ms=scenario.leading_silence_ms)


@pytest.mark.parametrize("fault", ["unauthorized", "rate_limited", "server_error", "malformed", "disconnect",
                                   "no_final", "inaudible"])
def test_cartesia_failures_become_rows(monkeypatch, fault):
    prompts = Catalog([bundled_root()]).load("tts-prompts")
    with serve("cartesia", TTSScenario(api_key=KEY, fault=fault)) as url:
        monkeypatch.setenv("VOXWATCH_CARTESIA_BASE_URL", url)
        monkeypatch.setenv("VOXWATCH_CARTESIA_API_KEY", KEY)
        row = measure("cartesia/sonic-3.5-2026-05-04", prompts, prompts.prompts[0], timeout_s=fault_timeout_s(fault))
    assert_failure_row(row, fault)


def test_an_emulator_that_cannot_start_is_said_with_its_exit_code():
    """A spawn that dies before it listens is started once more (server._started); one that cannot start
    dies again, and the error names it and its exit code rather than waiting out STARTUP_S."""
    from voxwatch.providers.emulators import server

    with pytest.raises(RuntimeError, match=r"the no-such-vendor emulator exited before listening \(exit code 1\)"):
        with server.serve("no-such-vendor", STTScenario("hi", 0.0, 1.0)):
            pass
