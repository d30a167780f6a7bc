"""Contract tests: the Deepgram Aura-2 TTS adapter against the Deepgram emulator's `/v1/speak`,
over real sockets; the metrics equal the injected truth (tolerances: contract.py), every fault
gives its row, and one emulator process serves `/v1/listen` and `/v1/speak` together.
"""

import pytest
from support.contract import KEY, fault_timeout_s, assert_failure_row, assert_on_clock, emulator_fixture, measure, measure_three, rows

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.providers.emulators.scenario import Scenarios, STTScenario, TTSScenario

pytestmark = pytest.mark.realtime

AURA = "deepgram/aura-2-thalia-en"


@pytest.fixture(scope="module")
def prompts():
    return Catalog([bundled_root()]).load("tts-prompts")


deepgram = emulator_fixture("deepgram")


@pytest.mark.parametrize("scenario", [
    TTSScenario(ttfb_ms=90.0, leading_silence_ms=60.0, api_key=KEY),
    TTSScenario(ttfb_ms=40.0, leading_silence_ms=100.0, gaming_delay_ms=400.0, api_key=KEY),  # silence first, speech late
], ids=["streaming", "gaming"])
def test_aura_ttfa_with_its_components(deepgram, prompts, scenario):
    prompt = prompts.prompts[3]
    truth = scenario.truth(prompt.text)
    deepgram(scenario)
    streams = measure_three(AURA, prompts, prompt)
    assert_on_clock(streams, "ttfb_ms", truth["ttfb_ms"])
    assert all(r.leading_silence_ms == pytest.approx(truth["leading_silence_ms"], abs=1.0) for r in rows(streams))
    assert_on_clock(streams, "ttfa_ms", truth["ttfa_ms"], leading_silence_ms=scenario.leading_silence_ms)
    assert all(r.voice == "thalia" and r.connect_ms is not None and r.emulator for r in rows(streams))


def test_one_process_serves_listen_and_speak(deepgram, prompts):
    ds = Catalog([bundled_root()]).load("stt-starter-clean")
    clip = next(c for c in ds.clips if c.id == "u049")
    tts = TTSScenario(ttfb_ms=70.0, leading_silence_ms=40.0, api_key=KEY)
    deepgram(Scenarios(stt=STTScenario(transcript=clip.text, speech_start_s=clip.speech_start,
                                       speech_end_s=clip.speech_end, first_partial_ms=180.0, final_ms=240.0,
                                       api_key=KEY), tts=tts))
    speech = measure_three(AURA, prompts, prompts.prompts[1])
    text = measure_three("deepgram/nova-3", ds, clip)
    assert_on_clock(speech, "ttfa_ms", tts.truth(prompts.prompts[1].text)["ttfa_ms"],
                    leading_silence_ms=tts.leading_silence_ms)
    assert_on_clock(text, "first_partial_ms", 180.0, clip=clip)
    assert_on_clock(text, "ttfs_ms", 240.0, clip=clip)
    assert text[0].row.hypothesis == clip.text


def test_a_bundle_without_tts_refuses_speak(deepgram, prompts):
    deepgram(STTScenario(transcript="x", speech_start_s=0.1, speech_end_s=0.5, api_key=KEY))
    row = measure(AURA, prompts, prompts.prompts[0])
    assert row.status == "error" and "HTTP 404" in row.reason


@pytest.mark.parametrize("fault", ["unauthorized", "rate_limited", "server_error", "malformed", "disconnect",
                                   "no_final", "inaudible"])
def test_aura_failures_become_rows(deepgram, prompts, fault):
    deepgram(TTSScenario(api_key=KEY, fault=fault))
    assert_failure_row(measure(AURA, prompts, prompts.prompts[0], timeout_s=fault_timeout_s(fault)), fault)
