"""Contract tests: the Amazon Polly adapter (`SynthesizeSpeech`, `POST /v1/speech`, signed with Signature
Version 4) against its loopback emulator, over real sockets; the metrics equal the injected truth
(tolerances: contract.py), every fault gives its row (throttling as Polly answers it: a 400 that names
ThrottlingException), and botocore's own example of the operation goes through the adapter.
"""

import pytest
from support.contract import (KEY, TTS_FAULTS, failure_rows_test, measure, point, switched_emulator, tts_clock_test,
                              tts_prompts)

from voxwatch.providers.emulators import server
from voxwatch.providers.emulators.ledger import Ledger, seen
from voxwatch.providers.emulators.scenario import TTSScenario
from voxwatch.providers.emulators.tts.polly import DOCUMENTED_REQUEST, DOCUMENTED_RESPONSE, PollyScenario
from voxwatch.providers.tts.polly import error_type, failure

pytestmark = pytest.mark.realtime

MODEL = "polly/generative"
emulator = switched_emulator("polly", TTSScenario(api_key=KEY))


test_ttfa_with_its_components = tts_clock_test(MODEL, "Danielle")
test_failures_become_rows = failure_rows_test(MODEL, TTS_FAULTS)


def test_throttling_is_a_400_that_names_it():
    """Polly's throttling is HTTP 400 with a ThrottlingException error type (its namespace tail dropped);
    any other 400 is a refused request, and ServiceFailureException the server's error."""
    throttled = failure(400, {"x-amzn-errortype": "ThrottlingException:http://internal.amazon.com/coral/"}, b"{}")
    assert throttled.status == "rate_limited" and throttled.retry_after_s is None
    assert failure(400, {"x-amzn-errortype": "InvalidSampleRateException"}, b'{"message": "no"}').status == "error"
    assert failure(500, {"x-amzn-errortype": "ServiceFailureException"}, b"").status == "server_error"
    assert error_type({}) == ""


def test_the_request_is_the_botocore_examples_shape(monkeypatch):
    """What the adapter sends is botocore's example request (Text, TextType, VoiceId, OutputFormat,
    SampleRate; no lexicon) plus the Engine, asking pcm at 16 kHz; the emulator checked its signature."""
    ds, prompt = tts_prompts()
    ledger = Ledger()
    with server.serve("polly", TTSScenario(api_key=KEY), ledger=ledger) as url:
        point(monkeypatch, "polly", url)
        row = measure(MODEL, ds, prompt)
        (sent,) = seen(ledger.drain(), "request")
    assert row.status == "ok", row.reason
    body = sent["body"]
    assert set(body) == set(DOCUMENTED_REQUEST) - {"LexiconNames"} | {"Engine"}
    assert (body["Engine"], body["OutputFormat"], body["SampleRate"], body["TextType"], body["VoiceId"]) == (
        "generative", "pcm", "16000", DOCUMENTED_REQUEST["TextType"], "Danielle")
    assert body["Text"] == prompt.text


def test_the_examples_answer_is_not_taken_for_audio(emulator, monkeypatch):
    """botocore's example answer (ContentType audio/mpeg, RequestCharacters 37), given to a request for pcm,
    is a malformed row: mp3 is never counted as samples."""
    ds, prompt = tts_prompts()
    emulator.use(monkeypatch, PollyScenario(TTSScenario(api_key=KEY), documented=True))
    row = measure(MODEL, ds, prompt)
    assert row.status == "malformed" and DOCUMENTED_RESPONSE["ContentType"] in row.reason, (row.status, row.reason)
    assert row.ttfa_ms is None and KEY not in row.reason
