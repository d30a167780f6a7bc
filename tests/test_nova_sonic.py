"""Contract tests: the Amazon Nova Sonic adapter (Bedrock's bidirectional stream) against its loopback
emulator, over a real HTTP/2 connection whose request and response bodies are AWS event streams.

The request is signed with Signature Version 4 and every event in a chain from it; the emulator checks
both (providers/session/aws_event_stream.py, proven against AWS's own vectors in test_aws_event_stream.py).
V2V is measured back from the call recording; the reply starts `response_ms` (+ jitter) after the
caller's speech end, anchored on the first `audioInput` (the clip's first 16 kHz chunk). The official
sample's input events are checked as the emulator received them, and the official parser fixtures'
output events are replayed through the adapter.
"""


import pytest
from support.contract import (KEY, S2S_FAULTS, caller_turn, events_signed, failure_rows_test, measure, s2s_clock_test,
                              switched_emulator)

from voxwatch.providers.emulators.s2s.nova_sonic import NovaSonicScenario
from voxwatch.providers.s2s.nova_sonic import credentials, opening, region_of

pytestmark = pytest.mark.realtime

MODEL = "bedrock/amazon.nova-2-sonic-v1:0"


@pytest.fixture(scope="module")
def turn():
    return caller_turn()


emulator = switched_emulator("bedrock", NovaSonicScenario(api_key=KEY))


def _scenario(turn, **kw) -> NovaSonicScenario:
    return NovaSonicScenario(api_key=KEY, anchors=turn.anchors(), speech_end_s=0.0, **kw)


def test_the_request_follows_the_official_samples_events():
    events, prompt, audio = opening("be brief", "matthew")
    assert [next(iter(e)) for e in events] == ["sessionStart", "promptStart", "contentStart", "textInput",
                                               "contentEnd", "contentStart"]
    assert events[1]["promptStart"]["audioOutputConfiguration"]["sampleRateHertz"] == 24000
    assert events[5]["contentStart"] == {"promptName": prompt, "contentName": audio, "type": "AUDIO",
                                         "interactive": True, "role": "USER", "audioInputConfiguration": {
                                             "mediaType": "audio/lpcm", "sampleRateHertz": 16000, "sampleSizeBits": 16,
                                             "channelCount": 1, "audioType": "SPEECH", "encoding": "base64"}}
    assert credentials("AKID:secret:token") == credentials("AKID:secret:token")
    assert credentials("AKID:secret").secret_access_key == "secret"
    assert region_of("https://bedrock-runtime.eu-west-1.amazonaws.com") == "eu-west-1"
    assert region_of("http://127.0.0.1:9") == "us-east-1"


test_nova_sonic_v2v_from_the_call_recording = s2s_clock_test(MODEL, 420.0, scenario=NovaSonicScenario,
                                                             check=events_signed(70))
test_nova_sonic_failures_become_rows = failure_rows_test(MODEL, S2S_FAULTS, response_ms=300.0)


@pytest.mark.parametrize("exception, status", [("throttlingException", "rate_limited"),
                                               ("modelStreamErrorException", "server_error"),
                                               ("validationException", "error"),
                                               ("interrupted", "error"),
                                               ("barge_in", "error")])  # the sample tests' barge-in text
def test_an_exception_event_or_an_interrupted_turn_is_a_failure_row(emulator, turn, exception, status, monkeypatch,
                                                                   unpaced):
    emulator.use(monkeypatch, _scenario(turn, response_ms=300.0, exception=exception))
    row = measure(MODEL, turn.dataset, turn.clip, timeout_s=10)
    assert row.status == status and KEY not in row.reason, (row.status, row.reason)
    assert (exception if exception not in ("interrupted", "barge_in") else "interrupted") in row.reason


def test_a_wrong_key_is_refused_by_its_signature(emulator, turn, monkeypatch):
    emulator.use(monkeypatch, NovaSonicScenario(api_key="AKIDOTHER:another-secret"))
    row = measure(MODEL, turn.dataset, turn.clip)
    assert row.status == "auth_error" and "403" in row.reason and KEY not in row.reason
    assert row.connect_ms is None


def test_the_official_samples_output_events_replayed_through_the_adapter(emulator, turn, monkeypatch, unpaced):
    """AWS's sample parser fixtures (FIXTURES) around the reply's audio: a completionStart with only a
    requestId, an ASSISTANT contentStart and textOutput, a TOOL contentEnd (not the turn's end), then
    after the audio its END_TURN, a usageEvent and a completionEnd. The adapter reads through them all,
    and on the way back its closing events pass the emulator's check of every chained signature."""
    emulator.use(monkeypatch, _scenario(turn, response_ms=300.0, fixtures=True))
    row = measure(MODEL, turn.dataset, turn.clip, timeout_s=10)
    assert row.status == "ok" and row.v2v_ms is not None, (row.status, row.reason)
    assert row.audio_duration_s == pytest.approx((60.0 + 600.0) / 1000, abs=0.001)
