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
from support.contract import (KEY, TTS_FAULTS, failure_rows_test, measure, switched_emulator, synthesize,
                              tts_clock_test, tts_prompts)

from voxwatch.foundation.events import AUDIO
from voxwatch.providers.base import ProviderError
from voxwatch.providers.emulators.scenario import TTSScenario
from voxwatch.providers.emulators.tts.fishaudio import SDK_CHUNKS, FishAudioScenario

pytestmark = pytest.mark.realtime

MODEL = "fishaudio/s2.1-pro"
emulator = switched_emulator("fishaudio", FishAudioScenario(api_key=KEY))


@pytest.fixture(scope="module")
def prompts():
    return tts_prompts()


def _one_reused_http_1_1_connection(streams, scenario) -> None:
    assert all(s.row.http_version == "HTTP/1.1" and s.row.connection_reused for s in streams)


test_fish_ttfa_from_the_request = tts_clock_test(MODEL, None, check=_one_reused_http_1_1_connection)
test_fish_failures_become_rows = failure_rows_test(MODEL, TTS_FAULTS, speech_ms=200.0)


def test_a_wrong_key_is_refused_with_fishs_json_error(emulator, prompts, monkeypatch):
    emulator.use(monkeypatch, TTSScenario(api_key="another-key"))
    row = measure(MODEL, *prompts)
    assert row.status == "auth_error" and "401" in row.reason and KEY not in row.reason


def test_the_documented_request_and_the_sdk_stream_replayed_through_the_adapter(emulator, monkeypatch):
    """The emulator checks the adapter sends the request of the vendor's docs (fishaudio/docs SKILL.md:
    the Authorization, Content-Type and model headers, text, reference_id, format and latency) and
    answers with the body the SDK's test streams (fish-audio-python tests/unit/test_tts.py:
    chunk1, chunk2, chunk3 and an empty chunk); the adapter's audio is the chunks put together, as the
    SDK's convert returns them."""
    emulator.use(monkeypatch, FishAudioScenario(api_key=KEY, sequence="sdk_stream", ttfb_ms=20.0))
    audio = synthesize(MODEL, "Hello from Fish Audio.").of(AUDIO)
    assert b"".join(e.audio for e in audio) == b"".join(SDK_CHUNKS) == b"chunk1chunk2chunk3"
    assert sum(e.n_samples for e in audio) == 9 and all(e.sample_rate == 24000 for e in audio)


def test_the_documented_error_body_is_a_failure_by_its_status(emulator, monkeypatch):
    emulator.use(monkeypatch, FishAudioScenario(api_key=KEY, sequence="doc_error"))
    with pytest.raises(ProviderError) as failed:
        synthesize(MODEL, "Hello from Fish Audio.")
    assert failed.value.status == "error" and "402" in str(failed.value)


def test_fishs_defaults_would_make_the_numbers_wrong(emulator, monkeypatch):
    """What the adapter's explicit fields avoid, straight over HTTP: with no sample_rate the body is
    44.1 kHz (read as 24 kHz, every duration 1.8 times too long); with the default latency the first
    byte waits for the whole segment."""
    scenario = TTSScenario(api_key=KEY, ttfb_ms=30.0, leading_silence_ms=40.0, speech_ms=200.0, send_every_ms=10.0)
    emulator.use(monkeypatch, scenario)
    base = os.environ["VOXWATCH_FISHAUDIO_BASE_URL"]
    headers = {"Authorization": f"Bearer {KEY}", "model": "s2.1-pro"}
    with httpx.Client(base_url=base, headers=headers, timeout=10) as client:
        default = client.post("/v1/tts", json={"text": "hi", "format": "pcm", "latency": "balanced"})
        assert len(default.content) == round((40.0 + 200.0) * 44.1) * 2
        chunks = 12  # 240 ms in 20 ms chunks
        waits = []  # per latency: ms to the response head (sent with the first audio), then to the body's end
        for latency in ("normal", "balanced"):
            asked = time.perf_counter()
            with client.stream("POST", "/v1/tts", json={"text": "hi", "format": "pcm", "sample_rate": 24000,
                                                        "latency": latency}) as response:
                head = time.perf_counter()
                response.read()
                waits.append(((head - asked) * 1000, (time.perf_counter() - head) * 1000))
        # lower bounds only (a busy machine makes every wait longer, none shorter): "normal" holds its head
        # until the last chunk is due; "balanced" sends the head with the first and the rest as they are due
        (held_head, _), (_, quick_body) = waits
        assert held_head >= (chunks - 1) * 10.0 * 0.8 and quick_body >= (chunks - 1) * 10.0 * 0.8, waits
        mp3 = client.post("/v1/tts", json={"text": "hi", "format": "mp3"})
        assert mp3.status_code == 400
