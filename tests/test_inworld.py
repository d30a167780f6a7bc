"""Contract tests: Inworld's STT and TTS adapters against the Inworld emulator (one process serving
both, as api.inworld.ai does), over real sockets; the metrics equal the injected truth (tolerances:
contract.py), every fault gives its row, and the vendor's documented sequences (quoted in
emulators/tts/inworld.py) are replayed through the adapters.

Kept fast: the shortest clip and prompt; the fault cases share one emulator process that switches
scenarios between streams (server.Switch), as tests/test_failure_kinds.py does.
"""

import asyncio
import dataclasses

import pytest
from support.contract import KEY, failure_rows_test, measure_stream, one_port, replayed, shortest, \
    stt_clock_test, stt_scenario, switched_emulator, tts_clock_test

from voxwatch.foundation.events import AUDIO, CLOSED, FINAL, PARTIAL, REQUEST_SENT, Timeline
from voxwatch.providers.emulators.replay import Replay
from voxwatch.providers.emulators.scenario import TTSScenario
from voxwatch.providers.emulators.speech import speech_pcm
from voxwatch.providers.emulators.tts.inworld import STT_DOCUMENTED, TTS_DOC_TEXT, inworld_tts_documented
from voxwatch.providers.registry import Registry
from voxwatch.providers.tts.inworld import pcm_of

pytestmark = pytest.mark.realtime

STT = "inworld/inworld-stt-1"
TTS = "inworld/inworld-tts-2"
REGISTRY = Registry.default()


@pytest.fixture(scope="module")
def short():
    return shortest()


emulator = switched_emulator("inworld", one_port())


def _wav_headers_read_off(streams, scenario) -> None:
    """Every chunk is a WAV file: its header is read off, so no header bytes play as samples."""
    for s in streams:
        audio = b"".join(e.audio for e in s.timeline.events if e.kind == AUDIO)
        assert b"RIFF" not in audio and b"WAVE" not in audio
        assert len(audio) == 2 * int(24000 * (scenario.leading_silence_ms + scenario.speech_ms) / 1000)


test_stt_turns_on_the_clock = stt_clock_test(STT, first_partial_ms=120.0, clip_id="u039")
test_tts_contexts_on_the_clock = tts_clock_test(TTS, "Ashley",
                                                check=_wav_headers_read_off)


def test_a_turn_closed_by_turn_detection_before_end_turn_ends_the_wait_at_once(monkeypatch, short, emulator):
    """Inworld's turn detection sent the final before the audio ended: nothing is owed after endTurn,
    and TTFS is the final's arrival, before the end of speech."""
    ds, clip, _, _ = short
    emulator.use(monkeypatch, stt_scenario(clip, first_partial_ms=60.0, final_ms=-300.0))
    stream = measure_stream(STT, ds, clip, timeout_s=3)
    assert stream.row.status == "ok", stream.row.reason
    assert stream.row.hypothesis == clip.text and stream.row.ttfs_ms < 0
    assert [e.text for e in stream.timeline.events if e.kind == FINAL] == [clip.text]


test_stt_failures_become_rows = failure_rows_test(
    STT, ["unauthorized", "forbidden", "rate_limited", "server_error", "malformed", "disconnect", "no_final"])
test_tts_failures_become_rows = failure_rows_test(
    TTS, ["unauthorized", "rate_limited", "server_error", "malformed", "disconnect", "no_final", "inaudible"])


def test_a_refused_context_is_a_failure_row_by_its_grpc_code(monkeypatch, short, emulator):
    """A modelId Inworld does not have: `create` is answered with INVALID_ARGUMENT (status code 3),
    read through the one gRPC reading as a refused request, before the clock."""
    _, _, prompts, prompt = short
    model = dataclasses.replace(REGISTRY.resolve(TTS), id="inworld/inworld-tts-0")
    emulator.use(monkeypatch, TTSScenario(api_key=KEY))
    with pytest.raises(Exception) as refused:
        asyncio.run(REGISTRY.create(model).connect(Timeline(), "Ashley"))
    assert getattr(refused.value, "status", None) == "error" and "status 3" in str(refused.value)


def test_the_documented_stt_session_replayed_through_the_adapter(monkeypatch):
    """The API reference's result and voice-activity messages, after the official example's config,
    audio and endTurn: the final is marked, speechStarted is not a transcript, closeStream follows."""
    replay = Replay(list(STT_DOCUMENTED))
    timeline = Timeline()

    async def run() -> None:
        session = await REGISTRY.create(REGISTRY.resolve(STT)).connect(timeline)
        try:
            for _ in range(5):
                await session.send_audio(b"\x00\x00" * 1600)  # 100 ms chunks, as the official example sends
            await session.end_audio()
            await session.wait_final()
        finally:
            await session.aclose()

    asyncio.run(replayed(monkeypatch, "inworld", replay, run))
    assert replay.missed is None
    chunks = [m for m in replay.received if isinstance(m, dict) and "audioChunk" in m]
    assert len(chunks) == 5
    assert [e.text for e in timeline.events if e.kind == FINAL] == ["Hello, this is a test transcription."]
    assert not [e for e in timeline.events if e.kind == PARTIAL]


def test_the_documented_tts_exchange_replayed_through_the_adapter(monkeypatch):
    """The API reference's create -> contextCreated, send_text -> audioChunk (a WAV file: its header is
    the page's, 16 kHz, completed), close_context -> contextClosed: the samples are marked at the
    header's rate, the header itself never."""
    pcm, _ = speech_pcm("", 16000, speech_ms=200.0, leading_silence_ms=20.0)
    replay = Replay(inworld_tts_documented(pcm.tobytes()))
    timeline = Timeline()

    async def run() -> None:
        session = await REGISTRY.create(REGISTRY.resolve(TTS)).connect(timeline, "Dennis")
        try:
            await session.synthesize(TTS_DOC_TEXT)
        finally:
            await session.aclose()

    asyncio.run(replayed(monkeypatch, "inworld", replay, run))
    assert replay.missed is None
    create, send = replay.received[0], replay.received[1]
    assert create["create"]["voiceId"] == "Dennis" and send["send_text"]["text"] == TTS_DOC_TEXT
    audio = [e for e in timeline.events if e.kind == AUDIO]
    assert len(audio) == 1 and audio[0].audio == pcm.tobytes() and audio[0].sample_rate == 16000
    assert timeline.first(REQUEST_SENT) is not None and timeline.first(CLOSED) is not None


def test_the_documented_audio_content_is_a_cut_off_header_and_reads_as_malformed():
    """The page's own audioContent stops inside the data chunk's size: read as it is, it is no WAV file."""
    import base64

    from voxwatch.providers.emulators.tts.inworld import TTS_DOC_AUDIO

    with pytest.raises(ValueError):
        pcm_of(base64.b64decode(TTS_DOC_AUDIO))
