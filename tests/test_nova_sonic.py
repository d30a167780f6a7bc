"""Contract tests: the Amazon Nova Sonic adapter (Bedrock's bidirectional stream) against its loopback
emulator, over a real HTTP/2 connection whose request and response bodies are AWS event streams.

The request is signed with Signature Version 4 and every event in a chain from it; the emulator checks
both (providers/session/aws_event_stream.py, proven against AWS's own vectors in test_aws_event_stream.py).
V2V is measured back from the call recording; the reply starts `response_ms` (+ jitter) after the
caller's speech end, anchored on the first `audioInput` (the clip's first 16 kHz chunk). The official
sample's input events are checked as the emulator received them, and the official parser fixtures'
output events are replayed through the adapter.
"""

import json

import pytest
from support.contract import (KEY, assert_failure_row, assert_on_clock, caller_turn, emulator_fixture,
                              fault_timeout_s, measure, measure_three, rows)

from voxwatch.providers.emulators import server
from voxwatch.providers.emulators.s2s.nova_sonic import NovaSonicScenario
from voxwatch.providers.emulators.scenario import S2SScenario
from voxwatch.providers.s2s.nova_sonic import credentials, opening, region_of

pytestmark = pytest.mark.realtime

MODEL = "bedrock/amazon.nova-2-sonic-v1:0"
emulator = emulator_fixture("bedrock")


@pytest.fixture(scope="module")
def turn():
    return caller_turn()


@pytest.fixture(scope="module")
def served():
    switch = server.Switch()
    with server.serve("bedrock", NovaSonicScenario(api_key=KEY), switch=switch) as url:
        yield url, switch


@pytest.fixture
def bedrock(served, monkeypatch):
    url, switch = served
    monkeypatch.setenv("VOXWATCH_BEDROCK_BASE_URL", url)
    monkeypatch.setenv("VOXWATCH_BEDROCK_API_KEY", KEY)
    return switch.use


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


def test_nova_sonic_v2v_from_the_call_recording(emulator, tmp_path, turn):
    scenario = _scenario(turn, response_ms=420.0, leading_silence_ms=60.0, jitter_ms=30.0)
    emulator(scenario)
    streams = measure_three(MODEL, turn.dataset, turn.clip, recordings_dir=tmp_path)
    assert_on_clock(streams, "v2v_ms", scenario.truth(turn.first)["v2v_ms"], clip=turn.clip,
                    leading_silence_ms=scenario.leading_silence_ms)
    assert all(r.audio_duration_s == pytest.approx((60.0 + 600.0) / 1000, abs=0.001) for r in rows(streams))
    assert streams[0].row.connect_ms is not None and streams[0].row.emulator
    # the emulator checked every input event's chained signature through to the signed end of input
    ended = [json.loads(k) for s in streams for k in s.sent if k.startswith("{")]
    assert len(ended) == len(streams) and all(e["signatures"] == "verified" and e["events"] > 70 for e in ended)


@pytest.mark.parametrize("fault", ["unauthorized", "forbidden", "rate_limited", "server_error", "bad_request",
                                   "malformed", "disconnect", "no_final", "inaudible"])
def test_nova_sonic_failures_become_rows(bedrock, turn, fault):
    bedrock(S2SScenario(api_key=KEY, anchors=turn.anchors(), speech_end_s=0.0, response_ms=300.0, fault=fault))
    assert_failure_row(measure(MODEL, turn.dataset, turn.clip, timeout_s=fault_timeout_s(fault)), fault)


@pytest.mark.parametrize("exception, status", [("throttlingException", "rate_limited"),
                                               ("modelStreamErrorException", "server_error"),
                                               ("validationException", "error"),
                                               ("interrupted", "error"),
                                               ("barge_in", "error")])  # the sample tests' barge-in text
def test_an_exception_event_or_an_interrupted_turn_is_a_failure_row(bedrock, turn, exception, status):
    bedrock(_scenario(turn, response_ms=300.0, exception=exception))
    row = measure(MODEL, turn.dataset, turn.clip, timeout_s=10)
    assert row.status == status and KEY not in row.reason, (row.status, row.reason)
    assert (exception if exception not in ("interrupted", "barge_in") else "interrupted") in row.reason


def test_a_wrong_key_is_refused_by_its_signature(bedrock, turn):
    bedrock(NovaSonicScenario(api_key="AKIDOTHER:another-secret"))
    row = measure(MODEL, turn.dataset, turn.clip)
    assert row.status == "auth_error" and "403" in row.reason and KEY not in row.reason
    assert row.connect_ms is None


def test_the_official_samples_output_events_replayed_through_the_adapter(bedrock, turn):
    """AWS's sample parser fixtures (FIXTURES) around the reply's audio: a completionStart with only a
    requestId, an ASSISTANT contentStart and textOutput, a TOOL contentEnd (not the turn's end), then
    after the audio its END_TURN, a usageEvent and a completionEnd. The adapter reads through them all,
    and on the way back its closing events pass the emulator's check of every chained signature."""
    bedrock(_scenario(turn, response_ms=300.0, fixtures=True))
    row = measure(MODEL, turn.dataset, turn.clip, timeout_s=10)
    assert row.status == "ok" and row.v2v_ms is not None, (row.status, row.reason)
    assert row.audio_duration_s == pytest.approx((60.0 + 600.0) / 1000, abs=0.001)
