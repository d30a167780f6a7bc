"""Contract tests: the Fish Audio adapter against its loopback emulator of `POST /v1/tts`, over real
sockets. The clock (TTFB, TTFA and the leading silence, from the request's write), every shared fault
as its row, the request the vendor's docs give and the body the SDK's test streams replayed through
the adapter, and the behaviours that would make numbers wrong if the adapter left Fish's defaults
(a 44.1 kHz body, `latency: normal` holding whole segments).
"""

import os
import time

import httpx
import pytest
from support.contract import (KEY, TTS_FAULTS, TTS_SCENARIOS, assert_failure_row, assert_tts_on_clock, fault_timeout_s,
                              measure, measure_three, rows, switched_emulator_fixtures, synthesize, tts_prompts)

from voxwatch.foundation.events import AUDIO
from voxwatch.providers.base import ProviderError
from voxwatch.providers.emulators.scenario import TTSScenario
from voxwatch.providers.emulators.tts.fishaudio import SDK_CHUNKS, FishAudioScenario

pytestmark = pytest.mark.realtime

MODEL = "fishaudio/s2.1-pro"
fishaudio_emulator_process, fishaudio = switched_emulator_fixtures("fishaudio", FishAudioScenario(api_key=KEY))


@pytest.fixture(scope="module")
def prompts():
    return tts_prompts()


@pytest.mark.parametrize("case", TTS_SCENARIOS)
def test_fish_ttfa_from_the_request(fishaudio, prompts, case):
    dataset, prompt = prompts
    scenario = TTSScenario(api_key=KEY, **TTS_SCENARIOS[case])
    fishaudio(scenario)
    streams = measure_three(MODEL, dataset, prompt)
    assert_tts_on_clock(streams, scenario, prompt.text)
    assert all(r.http_version == "HTTP/1.1" and r.connection_reused for r in rows(streams))


@pytest.mark.parametrize("fault", TTS_FAULTS)
def test_fish_failures_become_rows(fishaudio, prompts, fault):
    fishaudio(TTSScenario(api_key=KEY, fault=fault, speech_ms=200.0))
    assert_failure_row(measure(MODEL, *prompts, timeout_s=fault_timeout_s(fault)), fault)


def test_a_wrong_key_is_refused_with_fishs_json_error(fishaudio, prompts):
    fishaudio(TTSScenario(api_key="another-key"))
    row = measure(MODEL, *prompts)
    assert row.status == "auth_error" and "401" in row.reason and KEY not in row.reason


def test_the_documented_request_and_the_sdk_stream_replayed_through_the_adapter(fishaudio):
    """The emulator checks the adapter sends the request of the vendor's docs (fishaudio/docs SKILL.md:
    the Authorization, Content-Type and model headers, text, reference_id, format and latency) and
    answers with the body the SDK's test streams (fish-audio-python tests/unit/test_tts.py:
    chunk1, chunk2, chunk3 and an empty chunk); the adapter's audio is the chunks put together, as the
    SDK's convert returns them."""
    fishaudio(FishAudioScenario(api_key=KEY, sequence="sdk_stream", ttfb_ms=20.0))
    audio = synthesize(MODEL, "Hello from Fish Audio.").of(AUDIO)
    assert b"".join(e.audio for e in audio) == b"".join(SDK_CHUNKS) == b"chunk1chunk2chunk3"
    assert sum(e.n_samples for e in audio) == 9 and all(e.sample_rate == 24000 for e in audio)


def test_the_documented_error_body_is_a_failure_by_its_status(fishaudio):
    fishaudio(FishAudioScenario(api_key=KEY, sequence="doc_error"))
    with pytest.raises(ProviderError) as failed:
        synthesize(MODEL, "Hello from Fish Audio.")
    assert failed.value.status == "error" and "402" in str(failed.value)


def test_fishs_defaults_would_make_the_numbers_wrong(fishaudio):
    """What the adapter's explicit fields avoid, straight over HTTP: with no sample_rate the body is
    44.1 kHz (read as 24 kHz, every duration 1.8 times too long); with the default latency the first
    byte waits for the whole segment."""
    scenario = TTSScenario(api_key=KEY, ttfb_ms=30.0, leading_silence_ms=40.0, speech_ms=200.0, send_every_ms=10.0)
    fishaudio(scenario)
    base = os.environ["VOXWATCH_FISHAUDIO_BASE_URL"]
    headers = {"Authorization": f"Bearer {KEY}", "model": "s2.1-pro"}
    with httpx.Client(base_url=base, headers=headers, timeout=10) as client:
        default = client.post("/v1/tts", json={"text": "hi", "format": "pcm", "latency": "balanced"})
        assert len(default.content) == round((40.0 + 200.0) * 44.1) * 2
        chunks = 12  # 240 ms in 20 ms chunks
        waits = []
        for latency in ("normal", "balanced"):
            asked = time.perf_counter()
            with client.stream("POST", "/v1/tts", json={"text": "hi", "format": "pcm", "sample_rate": 24000,
                                                        "latency": latency}) as response:
                waits.append((time.perf_counter() - asked) * 1000)  # to the response head, sent with the first audio
                response.read()
        held, quick = waits
        assert held - quick >= (chunks - 1) * 10.0 * 0.8, waits
        mp3 = client.post("/v1/tts", json={"text": "hi", "format": "mp3"})
        assert mp3.status_code == 400
