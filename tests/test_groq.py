"""Contract tests: Groq's OpenAI-compatible batch transcription and Orpheus speech adapters against their
loopback emulator (one process, both APIs, as Groq serves them from one host), over real sockets; the
metrics computed from their events equal the injected truth (tolerances: contract.py).

The speech body is a WAV container: its header is not audio, its rate is read from it, and a prompt
over Orpheus' 200 characters goes as consecutive requests whose audio runs on without a gap.
"""

import pytest
from support.contract import (KEY, STT_FAULTS, TTS_FAULTS, failure_rows_test, measure, measure_stream, point,
                              stt_batch_clock_test, switched_emulator, tts_clock_test)

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.foundation.events import AUDIO
from voxwatch.providers.emulators import server
from voxwatch.providers.emulators.ledger import Ledger, seen
from voxwatch.providers.emulators.scenario import Scenarios, STTScenario, TTSScenario
from voxwatch.providers.emulators.stt.groq import (DOCUMENTED_SPEECH_REQUEST, DOCUMENTED_TRANSCRIPTION, MAX_INPUT_CHARS,
                                                   GroqScenario)

pytestmark = pytest.mark.realtime

STT = "groq/whisper-large-v3-turbo"
TTS = "groq/orpheus-v1-english"


emulator = switched_emulator("groq", Scenarios())  # one process, both APIs, as Groq serves them


@pytest.fixture(scope="module")
def data():
    catalog = Catalog([bundled_root()])
    clean, prompts = catalog.load("stt-starter-clean"), catalog.load("tts-prompts")
    return clean, {c.id: c for c in clean.clips}, prompts


def _samples_after_the_wav_header(streams, scenario) -> None:
    """The header's 44 bytes are not audio: exactly the scenario's samples, at the header's rate."""
    for s in streams:
        audio = s.timeline.of(AUDIO)
        assert {e.sample_rate for e in audio} == {24000}
        sent_ms = scenario.leading_silence_ms + scenario.speech_ms
        assert sum(e.n_samples for e in audio) == round(24000 * sent_ms / 1000)


test_batch_latency_is_the_processing_time_over_a_reused_connection = stt_batch_clock_test(STT, 210.0)
test_speech_ttfa_from_the_samples_after_the_wav_header = tts_clock_test(TTS, None, check=_samples_after_the_wav_header)


def test_a_prompt_over_the_input_cap_goes_as_consecutive_requests(monkeypatch, data):
    """A 302-character prompt: pieces of at most 200 characters, each a request, in the SDK's fields;
    the audio of the pieces runs on, one sample offset after another."""
    _, _, prompts = data
    prompt = max(prompts.prompts, key=lambda p: len(p.text))
    assert len(prompt.text) > MAX_INPUT_CHARS
    ledger = Ledger()
    with server.serve("groq", TTSScenario(ttfb_ms=40.0, leading_silence_ms=20.0, speech_ms=100.0, api_key=KEY),
                      ledger=ledger) as url:
        point(monkeypatch, "groq", url)
        stream = measure_stream(TTS, prompts, prompt)
        requests = seen(ledger.drain(), "speech")
    assert stream.row.status == "ok", stream.row.reason
    assert len(requests) >= 2 and all(len(r["input"]) <= MAX_INPUT_CHARS for r in requests)
    assert " ".join(r["input"] for r in requests) == " ".join(prompt.text.split())
    # the SDK test's own request fields (groq-python tests/api_resources/audio/test_speech.py)
    assert all(set(r) <= set(DOCUMENTED_SPEECH_REQUEST) and {"input", "model", "voice"} <= set(r) for r in requests)
    audio = stream.timeline.of(AUDIO)
    assert [e.sample_offset for e in audio] == [sum(e.n_samples for e in audio[:i]) for i in range(len(audio))]
    assert sum(e.n_samples for e in audio) == len(requests) * 24000 * 120 // 1000


def test_the_api_references_transcription_object_through_the_adapter(monkeypatch, emulator, data):
    ds, by_id, _ = data
    clip = by_id["u039"]
    scenario = GroqScenario(STTScenario(transcript=clip.text, speech_start_s=0.0, speech_end_s=1.0, final_ms=50.0,
                                        api_key=KEY), documented=True)
    emulator.use(monkeypatch, scenario)
    row = measure(STT, ds, clip)
    assert row.status == "ok", row.reason
    assert row.hypothesis == DOCUMENTED_TRANSCRIPTION["text"] == "Your transcribed text appears here..."


test_stt_failures_become_rows = failure_rows_test(STT, STT_FAULTS, final_ms=50.0)
test_tts_failures_become_rows = failure_rows_test(TTS, TTS_FAULTS, ttfb_ms=30.0, leading_silence_ms=20.0,
                                                  speech_ms=200.0)
