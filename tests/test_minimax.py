"""Contract tests: the MiniMax T2A v2 adapter against its loopback emulator of `POST /v1/t2a_v2` streamed
as server-sent events, over real sockets. The clock (TTFB, TTFA and the leading silence, from the
request's write), every shared fault as its row, MiniMax's in-band failures (HTTP 200 with a
`base_resp` code) by kind, the vendor's documented event stream replayed through the adapter, and the
aggregated last event the adapter asks to leave out and never counts.
"""

import json
import os

import httpx
import pytest
from support.contract import (KEY, TTS_FAULTS, failure_rows_test, measure, switched_emulator, synthesize,
                              tts_clock_test, tts_prompts)

from voxwatch.foundation.events import AUDIO
from voxwatch.providers.base import ProviderError
from voxwatch.providers.emulators.scenario import TTSScenario
from voxwatch.providers.emulators.tts.minimax import DOC_AUDIO, DOC_STREAM, MiniMaxScenario
from voxwatch.providers.session.sse import split_events

pytestmark = pytest.mark.realtime

MODEL = "minimax/speech-2.8-turbo"
emulator = switched_emulator("minimax", MiniMaxScenario(api_key=KEY))


@pytest.fixture(scope="module")
def prompts():
    return tts_prompts()


test_minimax_ttfa_from_the_request = tts_clock_test(MODEL, "English_expressive_narrator")
test_minimax_failures_become_rows = failure_rows_test(MODEL, TTS_FAULTS, speech_ms=200.0)


@pytest.mark.parametrize("behaviour, status", [
    (dict(in_band_error=1002), "rate_limited"), (dict(in_band_error=1039), "rate_limited"),
    (dict(in_band_error=1004), "auth_error"), (dict(in_band_error=1001), "server_error"),
    (dict(in_band_error=2013), "error"), (dict(mid_stream_error=1002), "rate_limited"),
    (dict(mid_stream_error=1000), "error"),
])
def test_in_band_failures_with_http_200_are_failure_rows_by_kind(emulator, prompts, behaviour, status, monkeypatch):
    emulator.use(monkeypatch, MiniMaxScenario(api_key=KEY, speech_ms=200.0, **behaviour))
    row = measure(MODEL, *prompts)
    code = str(behaviour.get("in_band_error") or behaviour.get("mid_stream_error"))
    assert row.status == status and code in row.reason and KEY not in row.reason, (row.status, row.reason)
    assert row.ttfa_ms is None


def test_a_wrong_key_is_refused_in_band(emulator, prompts, monkeypatch):
    emulator.use(monkeypatch, TTSScenario(api_key="another-key"))
    row = measure(MODEL, *prompts)
    assert row.status == "auth_error" and "1004" in row.reason and KEY not in row.reason


def test_the_documented_event_stream_replayed_through_the_adapter(emulator, monkeypatch):
    """The openapi spec's text/event-stream example (three status-1 chunks, then the status-2 event with
    extra_info and the aggregated audio), its placeholders given bytes: the adapter's audio is the three
    chunks in order, and the aggregate is not counted again."""
    emulator.use(monkeypatch, MiniMaxScenario(api_key=KEY, sequence="doc_stream", ttfb_ms=20.0))
    audio = synthesize(MODEL, "hello").of(AUDIO)
    chunks = [DOC_AUDIO[e["data"]["audio"]] for e in DOC_STREAM if e["data"]["status"] == 1]
    assert [e.audio for e in audio] == chunks
    assert sum(e.n_samples for e in audio) == 5 and all(e.sample_rate == 24000 for e in audio)


def test_the_documented_task_failed_error_is_an_auth_error(emulator, monkeypatch):
    emulator.use(monkeypatch, MiniMaxScenario(api_key=KEY, sequence="doc_error"))
    with pytest.raises(ProviderError) as failed:
        synthesize(MODEL, "hello")
    assert failed.value.status == "auth_error" and "1004" in str(failed.value)


def test_the_last_event_repeats_the_audio_unless_excluded(emulator, monkeypatch):
    """Straight over HTTP: by default the status-2 event carries the whole utterance again (a reader
    counting it would read twice the audio, and wait for it); with exclude_aggregated_audio it is empty.
    A request the API refuses is HTTP 200 all the same, its code in base_resp."""
    emulator.use(monkeypatch, TTSScenario(api_key=KEY, ttfb_ms=10.0, leading_silence_ms=20.0, speech_ms=100.0))
    request = {"model": "speech-2.8-turbo", "text": "hi", "stream": True, "voice_setting": {"voice_id": "x"},
               "audio_setting": {"sample_rate": 24000, "format": "pcm"}}
    headers = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=os.environ["VOXWATCH_MINIMAX_BASE_URL"], headers=headers, timeout=10) as client:
        for exclude in (False, True):
            answer = client.post("/v1/t2a_v2", json={**request, "stream_options": {"exclude_aggregated_audio": exclude}})
            assert answer.headers["content-type"].startswith("text/event-stream")
            events = [json.loads(e) for e in split_events(answer.text)[0]]
            chunks = b"".join(bytes.fromhex(e["data"]["audio"]) for e in events if e["data"]["status"] == 1)
            last = events[-1]
            assert last["data"]["status"] == 2 and last["extra_info"]["audio_sample_rate"] == 24000
            assert len(chunks) == 120 * 24 * 2
            assert bytes.fromhex(last["data"]["audio"]) == (b"" if exclude else chunks)
        refused = client.post("/v1/t2a_v2", json={**request, "model": "speech-9"})
        assert refused.status_code == 200 and refused.json()["base_resp"]["status_code"] == 2013
