"""Contract tests: the Amazon Transcribe streaming adapter against its loopback emulator, over a real HTTP/2
connection whose request and response bodies are AWS event streams.

The request is signed with Signature Version 4 and every audio event in a chain from it; the emulator
checks both (providers/session/aws_event_stream.py, proven against AWS's own vectors in
test_aws_event_stream.py). The metrics equal the injected truth (tolerances: contract.py), every fault
and every documented exception is its row, and the Developer Guide's own partial-results progression
reads through the adapter as the guide shows it.
"""


import pytest
from support.contract import (KEY, STT_FAULTS, events_signed, failure_rows_test, measure, measure_stream, starter_clean,
                              stt_clock_test, stt_scenario, switched_emulator, the_one_final)

from voxwatch.foundation.events import FINAL, PARTIAL
from voxwatch.providers.emulators.stt.transcribe import DOCUMENTED, TranscribeScenario
from voxwatch.providers.session.aws_event_stream import Decoder
from voxwatch.providers.stt.transcribe import audio_event, exception_from, language_code, region_of

pytestmark = pytest.mark.realtime

MODEL = "transcribe/streaming"


def _scenario(clip, **kw) -> TranscribeScenario:
    return TranscribeScenario(**{**stt_scenario(clip).__dict__, **kw})


emulator = switched_emulator("transcribe", TranscribeScenario(transcript="", speech_start_s=0.0, speech_end_s=0.0,
                                                                api_key=KEY))


def test_the_audio_event_and_the_language_are_the_sdks():
    """An AudioEvent carries the SDK serializer's three headers and the raw pcm; the language code is AWS's."""
    decoder = Decoder()
    decoder.feed(audio_event(b"\x01\x00\x02\x00"))
    (message,) = list(decoder)
    assert message.headers == {":message-type": "event", ":event-type": "AudioEvent",
                               ":content-type": "application/octet-stream"} and message.payload == b"\x01\x00\x02\x00"
    assert [language_code(t) for t in ("en", "en-GB", "en-gb", "fr-CA", "de", "xx")] == [
        "en-US", "en-GB", "en-GB", "fr-CA", "de-DE", None]
    assert region_of("https://transcribestreaming.eu-west-1.amazonaws.com") == "eu-west-1"
    assert region_of("http://127.0.0.1:9") == "us-east-1"
    # the SDK's event-stream error vector (tests/unit/test_eventstream.py) and the guide's HTTP/2 exception
    error = exception_from({":message-type": "error", ":error-code": "code", ":error-message": "message"}, b"")
    assert error.status == "error" and "code: message" in str(error)
    limit = exception_from({":message-type": "exception", ":event-type": "LimitExceededException"}, b"Exception message")
    assert limit.status == "rate_limited" and "Exception message" in str(limit)


def _as_transcribe(stt) -> TranscribeScenario:
    return TranscribeScenario(**vars(stt))


def _one_final_every_event_signed(streams, clip) -> None:
    the_one_final(streams, clip)
    events_signed(40)(streams)  # the emulator checked every audio event's chained signature to the signed end frame


test_partials_and_the_segments_final_on_the_clock = stt_clock_test(
    MODEL, first_partial_ms=170.0, final_ms=260.0, clip_id="u039", serves=_as_transcribe,
    check=_one_final_every_event_signed)
test_failures_become_rows = failure_rows_test(MODEL, STT_FAULTS, serves=_as_transcribe)


@pytest.mark.parametrize("name, status", [("LimitExceededException", "rate_limited"),
                                          ("BadRequestException", "error"), ("ConflictException", "error"),
                                          ("InternalFailureException", "server_error"),
                                          ("ServiceUnavailableException", "server_error")])
def test_a_documented_exception_mid_stream_is_its_row(emulator, monkeypatch, name, status):
    ds, clips = starter_clean()
    clip = clips["u039"]
    emulator.use(monkeypatch, _scenario(clip, first_partial_ms=10.0, exception=name))
    row = measure(MODEL, ds, clip)
    assert row.status == status and name in row.reason and KEY not in row.reason, (row.status, row.reason)
    assert row.ttfs_ms is None


def test_a_wrong_key_is_refused_by_its_signature(emulator, monkeypatch):
    ds, clips = starter_clean()
    emulator.use(monkeypatch, TranscribeScenario(transcript="", speech_start_s=0.0, speech_end_s=0.0,
                                                   api_key="AKIDOTHER:another-secret"))
    row = measure(MODEL, ds, clips["u039"])
    assert row.status == "auth_error" and "403" in row.reason and KEY not in row.reason


def test_the_guides_partial_results_read_through_the_adapter(emulator, monkeypatch, unpaced):
    """The Developer Guide's "partial-result stabilization not enabled" rows, verbatim: twelve partials
    (each the segment so far, "The Amazon is the law." revised on the way) then the complete segment,
    which alone is the transcript."""
    ds, clips = starter_clean()
    clip = clips["u039"]
    emulator.use(monkeypatch, _scenario(clip, first_partial_ms=10.0, partial_every_ms=20.0, final_ms=100.0,
                                          documented=True))
    stream = measure_stream(MODEL, ds, clip)
    assert stream.row.status == "ok", stream.row.reason
    partials = [e.text for e in stream.timeline.of(PARTIAL)]
    assert partials == [text for text, _, partial in DOCUMENTED if partial][:len(partials)] and len(partials) >= 5
    assert [e.text for e in stream.timeline.of(FINAL)] == ["The Amazon is the largest rainforest on the planet."]
    assert stream.row.hypothesis == "The Amazon is the largest rainforest on the planet."
