"""Contract tests: the Together AI realtime transcription adapter against its loopback emulator, over
real sockets; the metrics computed from its events equal the injected truth (tolerances: contract.py).

Together's deltas override each other (each is the VAD segment's whole text so far), its server VAD
ends segments on its own (the commit at the end of the audio forces only what is left), and the spec's
own example sequence is replayed through the adapter.
"""

import pytest
from support.contract import (KEY, failure_rows_test, measure, measure_stream, starter_clean, stt_clock_test,
                              stt_early_final_test, stt_scenario, switched_emulator)

from voxwatch.foundation.events import FINAL, PARTIAL
from voxwatch.providers.emulators.scenario import STTScenario
from voxwatch.providers.emulators.stt.together import DOCUMENTED, TogetherScenario

pytestmark = pytest.mark.realtime

MODEL = "together/parakeet-tdt-0.6b-v3"
emulator = switched_emulator("together", STTScenario(transcript="yes please", speech_start_s=0.0, speech_end_s=1.0,
                                                   api_key=KEY))


def _deltas_override_one_final(streams, clip) -> None:
    for s in streams:
        assert [e.text for e in s.timeline.of(PARTIAL)][:2] == ["That", "That works"]  # each the segment so far
        assert len(s.timeline.of(FINAL)) == 1


test_deltas_override_each_other_and_the_commit_forces_the_open_segment = stt_clock_test(
    MODEL, first_partial_ms=160.0, final_ms=230.0, check=_deltas_override_one_final)
# the VAD ends the last segment before the audio ends: at the commit no segment is open, so the
# `.completed` already received is the stream's final (the adapter does not wait for another)
test_a_segment_the_vad_closed_before_the_commit_is_the_final = stt_early_final_test(MODEL)


def test_speech_split_at_the_longest_segment_is_joined(monkeypatch, emulator):
    """Speech longer than max_speech_duration_s ends in several `.completed` events, each a final of
    its own segment: the hypothesis is their join, and TTFS the last one's."""
    ds, by_id = starter_clean()
    clip = by_id["u044"]  # "I would like to speak to a person.": 1.4 s of speech, split every 0.35 s
    scenario = stt_scenario(clip, first_partial_ms=100.0, partial_every_ms=100.0, final_ms=200.0)
    emulator.use(monkeypatch, TogetherScenario(scenario, max_speech_s=0.35))
    stream = measure_stream(MODEL, ds, clip)
    finals = [e.text for e in stream.timeline.of(FINAL)]
    assert len(finals) >= 3, finals
    assert stream.row.status == "ok" and stream.row.hypothesis == clip.text, (finals, stream.row.reason)


def test_the_specs_example_sequence_through_the_adapter(monkeypatch, emulator, unpaced):
    """The server messages of Together's OpenAPI example (session.created, one delta, one completed),
    verbatim, read by the adapter: the delta is the partial, the completed the final."""
    ds, by_id = starter_clean()
    clip = by_id["u039"]
    scenario = TogetherScenario(stt_scenario(clip, first_partial_ms=100.0, final_ms=150.0), documented=True)
    emulator.use(monkeypatch, scenario)
    stream = measure_stream("together/whisper-large-v3", ds, clip)
    assert stream.row.status == "ok", stream.row.reason
    assert [e.text for e in stream.timeline.of(PARTIAL)] == [DOCUMENTED[1]["delta"]]
    assert stream.row.hypothesis == DOCUMENTED[2]["transcript"] == "The quick brown fox jumps over the lazy dog"


def test_the_specs_error_event_for_a_bad_key_is_a_refused_key(emulator, monkeypatch):
    """A wrong key: the spec's `.failed` example (code invalid_api_key) before the session starts."""
    ds, by_id = starter_clean()
    clip = by_id["u039"]
    emulator.use(monkeypatch, TogetherScenario(stt_scenario(clip), documented=True))
    monkeypatch.setenv("VOXWATCH_TOGETHER_API_KEY", "another-key-0123456789")
    row = measure(MODEL, ds, clip)
    assert row.status == "auth_error" and "invalid_api_key" in row.reason, (row.status, row.reason)
    assert "another-key" not in row.reason


test_failures_become_rows = failure_rows_test(
    MODEL, ["unauthorized", "rate_limited", "server_error", "bad_request", "malformed", "disconnect", "no_final"],
    first_partial_ms=50.0)
