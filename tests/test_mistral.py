"""Contract tests: the Mistral Voxtral realtime transcription adapter against its loopback emulator,
over real sockets; the metrics computed from its events equal the injected truth (tolerances: contract.py).

Voxtral's deltas are append-only, its only final is `transcription.done`, and the last words wait for
`input_audio.end`: the final can never come before the end of the audio, which the TTFS measured
includes.
"""

import pytest
from support.contract import (KEY, failure_rows_test, measure, measure_stream, starter_clean, stt_clock_test,
                              stt_scenario, switched_emulator)

from voxwatch.foundation.events import CHUNK_SENT, FINAL, PARTIAL
from voxwatch.providers.emulators.scenario import STTScenario
from voxwatch.providers.emulators.stt.mistral import DOCUMENTED, TIMEOUT_CODE, MistralScenario
from voxwatch.providers.stt import mistral

pytestmark = pytest.mark.realtime

MODEL = "mistral/voxtral-mini-transcribe-realtime-2602"
emulator = switched_emulator("mistral", STTScenario(transcript="yes please", speech_start_s=0.0, speech_end_s=1.0,
                                                   api_key=KEY))


def _deltas_appended_one_final(streams, clip) -> None:
    for s in streams:
        assert [e.text for e in s.timeline.of(PARTIAL)][:2] == ["That", "That works"]  # each delta appended
        assert len(s.timeline.of(FINAL)) == 1


test_append_only_deltas_and_the_done_after_the_end_of_audio = stt_clock_test(
    MODEL, first_partial_ms=170.0, final_ms=260.0, check=_deltas_appended_one_final)


def test_the_last_words_wait_for_the_end_of_audio(monkeypatch, emulator):
    """A final the scenario would give 20 ms after the end of speech comes only after input_audio.end,
    at the end of the clip's 100 ms of trailing silence; until then no partial holds the last word."""
    ds, by_id = starter_clean()
    clip = by_id["u039"]
    emulator.use(monkeypatch, stt_scenario(clip, first_partial_ms=100.0, final_ms=20.0))
    stream = measure_stream(MODEL, ds, clip)
    row, timeline = stream.row, stream.timeline
    assert row.status == "ok" and row.hypothesis == clip.text, row.reason
    last_chunk = timeline.of(CHUNK_SENT)[-1].t_ns
    assert timeline.first(FINAL).t_ns > last_chunk
    assert row.ttfs_ms > 60.0, row.ttfs_ms  # the last chunk goes out 87 ms after the end of speech; 20 ms was asked
    assert all("please" not in e.text for e in timeline.of(PARTIAL) if e.t_ns < last_chunk)


def test_a_session_never_ended_gets_the_documented_timeout(emulator, monkeypatch):
    """Without input_audio.end the server ends the session with error 3804 (mistralai/client-python#357);
    the adapter's row carries it."""
    ds, by_id = starter_clean()
    clip = by_id["u039"]

    async def flush_only(self) -> None:
        await self._send_event({"type": "input_audio.flush"})

    monkeypatch.setattr(mistral.VoxtralSession, "end_audio", flush_only)
    emulator.use(monkeypatch, MistralScenario(stt_scenario(clip, final_ms=100.0), end_timeout_s=0.3))
    row = measure(MODEL, ds, clip, timeout_s=5)
    assert row.status == "error" and str(TIMEOUT_CODE) in row.reason, (row.status, row.reason)


def test_the_documented_lifecycle_through_the_adapter(monkeypatch, emulator, unpaced):
    """The docs' session lifecycle with the SDK schemas' bodies: session.created, session.updated,
    transcription.language, two deltas, transcription.done. The deltas are the partials, appended; done
    is the final."""
    ds, by_id = starter_clean()
    clip = by_id["u039"]
    scenario = MistralScenario(stt_scenario(clip, first_partial_ms=100.0, final_ms=150.0), documented=True)
    emulator.use(monkeypatch, scenario)
    stream = measure_stream(MODEL, ds, clip)
    assert stream.row.status == "ok", stream.row.reason
    assert [e.text for e in stream.timeline.of(PARTIAL)] == ["Hello", "Hello world"]
    assert stream.row.hypothesis == DOCUMENTED[-1]["text"] == "Hello world"


def test_the_streaming_delay_is_one_the_api_takes():
    """target_streaming_delay_ms: "Any integer from 80 to 1200, or 2400" (Mistral's limits page)."""
    from voxwatch.providers.emulators.stt.mistral import _delay_ok

    assert _delay_ok(mistral.STREAMING_DELAY_MS)
    assert not _delay_ok(60) and not _delay_ok(1300) and _delay_ok(2400)


test_failures_become_rows = failure_rows_test(
    MODEL, ["unauthorized", "rate_limited", "server_error", "bad_request", "malformed", "disconnect", "no_final"],
    first_partial_ms=50.0)
