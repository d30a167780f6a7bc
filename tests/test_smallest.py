"""Contract tests: Smallest.ai's Pulse STT and Lightning TTS adapters against the Smallest emulator
(one process serving both, as api.smallest.ai does), over real sockets; the metrics equal the injected
truth (tolerances: contract.py), every fault gives its row, and the vendor's documented sequences
(quoted in emulators/stt/smallest.py) are replayed through the adapters.

Kept fast: the shortest clip and prompt; the fault cases share one emulator process that switches
scenarios between streams (server.Switch), as tests/test_failure_kinds.py does.
"""

import asyncio
import dataclasses
import time

import pytest
from support.contract import (REGISTRY, failure_rows_test, measure, measure_stream, one_port, replayed, shortest,
                              stt_clock_test, stt_scenario, switched_emulator, tts_clock_test)

from voxwatch.foundation.events import AUDIO, CLOSED, FINAL, PARTIAL, Timeline
from voxwatch.providers.emulators.replay import Replay
from voxwatch.providers.emulators.stt.smallest import LIGHTNING_TEXT, PULSE_DOCUMENTED, lightning_documented
from voxwatch.providers.emulators.speech import speech_pcm
from voxwatch.providers.registry import Registry

pytestmark = pytest.mark.realtime

PULSE = "smallest/pulse"
LIGHTNING = "smallest/lightning_v3.1"
REGISTRY = Registry.default()


@pytest.fixture(scope="module")
def short():
    return shortest()


emulator = switched_emulator("smallest", one_port())


def _complete_at_once(streams, scenario) -> None:
    """complete_backoff_ms 0: `complete` follows the last chunk at once, not the default 4 s later."""
    for s in streams:
        last_audio = max(e.t_ns for e in s.timeline.events if e.kind == AUDIO)
        assert (s.timeline.first(CLOSED).t_ns - last_audio) / 1e6 < 1000


# Pulse: partials and the finalized final
test_pulse_partials_and_the_finalized_final_on_the_clock = stt_clock_test(
    PULSE, first_partial_ms=120.0, clip_id="u039")
test_lightning_on_the_clock_on_the_same_port = tts_clock_test(
    LIGHTNING, "magnus", check=_complete_at_once)


def test_a_final_sent_by_endpointing_before_finalize_ends_the_turn_at_once(monkeypatch, short, emulator):
    """Endpointing finalized the segment before the audio ended: the finalize finds nothing left and
    gets an empty from_finalize final; TTFS stays the worded final's arrival, before the end of speech."""
    ds, clip, _, _ = short
    emulator.use(monkeypatch, stt_scenario(clip, first_partial_ms=60.0, final_ms=-300.0))
    stream = measure_stream(PULSE, ds, clip)
    assert stream.row.status == "ok", stream.row.reason
    assert stream.row.hypothesis == clip.text and stream.row.ttfs_ms < 0
    finals = [e.text for e in stream.timeline.events if e.kind == FINAL]
    assert finals[0] == clip.text and all(f == "" for f in finals[1:])


test_pulse_failures_become_rows = failure_rows_test(
    PULSE, ["unauthorized", "rate_limited", "server_error", "bad_request", "malformed", "disconnect", "no_final"])
test_lightning_failures_become_rows = failure_rows_test(
    LIGHTNING, ["unauthorized", "rate_limited", "server_error", "malformed", "disconnect", "no_final", "inaudible"])


def test_an_early_malformed_message_ends_the_row_without_waiting_out_the_close(monkeypatch, short, emulator):
    """A malformed message 10 ms into the speech ends the reader while the caller still speaks; the
    server goes on sending and nothing reads the socket, so its close handshake could only time out
    (websockets' 10 s): the session aborts it instead, and the row comes as soon as the turn ends."""
    ds, clip, _, _ = short
    emulator.use(monkeypatch, stt_scenario(clip, first_partial_ms=10.0, fault="malformed"))
    started = time.monotonic()
    row = measure(PULSE, ds, clip)
    assert row.status == "malformed", (row.status, row.reason)
    assert time.monotonic() - started < 10.0  # the 1.3 s clip paced, not the close timeout after it


def test_pulse_pro_is_refused_before_the_upgrade_as_documented(monkeypatch, short, emulator):
    """pulse-pro has no streaming transport: HTTP 400 before the WebSocket upgrades, an error row."""
    ds, clip, _, _ = short
    model = dataclasses.replace(REGISTRY.resolve(PULSE), id="smallest/pulse-pro")
    emulator.use(monkeypatch, stt_scenario(clip))
    with pytest.raises(Exception) as refused:
        asyncio.run(REGISTRY.create(model).connect(Timeline()))
    assert getattr(refused.value, "status", None) == "error" and "HTTP 400" in str(refused.value)


def test_the_documented_pulse_session_replayed_through_the_adapter(monkeypatch):
    """Smallest's own examples: audio, close_stream; a partial, two finals and the terminal is_last
    transcript (the unified examples carry `transcription`, the legacy ones `transcript`)."""
    replay = Replay(list(PULSE_DOCUMENTED))
    timeline = Timeline()

    async def run() -> None:
        session = await REGISTRY.create(REGISTRY.resolve(PULSE)).connect(timeline)
        try:
            for _ in range(3):
                await session.send_audio(b"\x00\x00" * 2048)  # 4096-byte frames, as the spec recommends
            await session.end_audio()
            await session.wait_final()
        finally:
            await session.aclose()

    asyncio.run(replayed(monkeypatch, "smallest", replay, run))
    assert replay.missed is None and replay.audio_bytes == 3 * 4096
    assert {"type": "close_stream"} in replay.received
    assert [e.text for e in timeline.events if e.kind == PARTIAL] == ["Hi, how are you"]
    assert [e.text for e in timeline.events if e.kind == FINAL] == [
        "Hi, how are you doing?", "Hello, how are you?", "I paid using my card [CREDITCARDCVV_1] with expiry [TIME_2]."]


def test_the_documented_lightning_stream_replayed_through_the_adapter(monkeypatch):
    """The streaming guide's exchange: one request, chunk messages, `complete`; the adapter's request
    carries what the guide's does, and every sample of the chunks is marked, in order."""
    pcm, _ = speech_pcm("", 24000, speech_ms=100.0, leading_silence_ms=20.0)
    chunks = [pcm[i:i + 480].tobytes() for i in range(0, pcm.size, 480)]
    replay = Replay(lightning_documented(chunks))
    timeline = Timeline()

    async def run() -> None:
        session = await REGISTRY.create(REGISTRY.resolve(LIGHTNING)).connect(timeline, "magnus")
        try:
            await session.synthesize(LIGHTNING_TEXT)
        finally:
            await session.aclose()

    asyncio.run(replayed(monkeypatch, "smallest", replay, run))
    assert replay.missed is None
    request = replay.received[0]
    assert request["text"] == LIGHTNING_TEXT and request["voice_id"] == "magnus" and request["sample_rate"] == 24000
    audio = [e for e in timeline.events if e.kind == AUDIO]
    assert b"".join(e.audio for e in audio) == pcm.tobytes()
    assert [e.sample_offset for e in audio] == [i * 480 for i in range(len(chunks))]  # 480 samples a chunk
    assert timeline.first(CLOSED) is not None
