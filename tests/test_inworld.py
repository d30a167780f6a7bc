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
from support.contract import KEY, assert_failure_row, assert_on_clock, fault_timeout_s, measure, measure_stream, \
    measure_three, point, replayed, rows, serve, shortest, switched_fixture

from voxwatch.foundation.events import AUDIO, CLOSED, FINAL, PARTIAL, REQUEST_SENT, Timeline
from voxwatch.providers.emulators.replay import Replay
from voxwatch.providers.emulators.scenario import Scenarios, STTScenario, TTSScenario
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


switched = switched_fixture("inworld", Scenarios(tts=TTSScenario(api_key=KEY)))


def _point(monkeypatch, url: str) -> None:
    point(monkeypatch, "inworld", url)


def _stt(clip, **kw) -> STTScenario:
    return STTScenario(transcript=clip.text, speech_start_s=clip.speech_start, speech_end_s=clip.speech_end,
                       api_key=KEY, **kw)


def test_stt_turns_and_tts_contexts_on_one_port(monkeypatch, short):
    ds, clip, prompts, prompt = short
    tts = TTSScenario(ttfb_ms=70.0, leading_silence_ms=40.0, api_key=KEY)
    with serve("inworld", Scenarios(stt=_stt(clip, first_partial_ms=120.0, final_ms=240.0), tts=tts)) as url:
        _point(monkeypatch, url)
        text = measure_three(STT, ds, clip)
        speech = measure_three(TTS, prompts, prompt)
    assert_on_clock(text, "first_partial_ms", 120.0, clip=clip)
    assert_on_clock(text, "ttfs_ms", 240.0, clip=clip)
    assert all(r.hypothesis == clip.text and r.connect_ms is not None and r.emulator for r in rows(text))
    truth = tts.truth(prompt.text)
    assert_on_clock(speech, "ttfb_ms", truth["ttfb_ms"])
    assert_on_clock(speech, "ttfa_ms", truth["ttfa_ms"], leading_silence_ms=tts.leading_silence_ms)
    assert all(r.voice == "Ashley" and r.leading_silence_ms == pytest.approx(40.0, abs=1.0) for r in rows(speech))
    for s in speech:  # every chunk is a WAV file: its header is read off, so no header bytes play as samples
        audio = b"".join(e.audio for e in s.timeline.events if e.kind == AUDIO)
        assert b"RIFF" not in audio and b"WAVE" not in audio and len(audio) == 2 * int(24000 * 0.64)


def test_a_turn_closed_by_turn_detection_before_end_turn_ends_the_wait_at_once(monkeypatch, short, switched):
    """Inworld's turn detection sent the final before the audio ended: nothing is owed after endTurn,
    and TTFS is the final's arrival, before the end of speech."""
    ds, clip, _, _ = short
    url, switch = switched
    _point(monkeypatch, url)
    switch.use(_stt(clip, first_partial_ms=60.0, final_ms=-300.0))
    stream = measure_stream(STT, ds, clip, timeout_s=3)
    assert stream.row.status == "ok", stream.row.reason
    assert stream.row.hypothesis == clip.text and stream.row.ttfs_ms < 0
    assert [e.text for e in stream.timeline.events if e.kind == FINAL] == [clip.text]


@pytest.mark.parametrize("board,fault", [
    *(("stt", f) for f in ("unauthorized", "forbidden", "rate_limited", "server_error", "malformed", "disconnect",
                           "no_final")),
    *(("tts", f) for f in ("unauthorized", "rate_limited", "server_error", "malformed", "disconnect", "no_final",
                           "inaudible"))])
def test_failures_become_rows(monkeypatch, short, switched, board, fault):
    ds, clip, prompts, prompt = short
    url, switch = switched
    _point(monkeypatch, url)
    stt = _stt(clip, first_partial_ms=60.0, final_ms=100.0)
    tts = TTSScenario(ttfb_ms=20.0, api_key=KEY)
    if board == "stt":
        switch.use(Scenarios(stt=dataclasses.replace(stt, fault=fault), tts=tts))
        row = measure(STT, ds, clip, timeout_s=fault_timeout_s(fault))
    else:
        switch.use(Scenarios(stt=stt, tts=dataclasses.replace(tts, fault=fault)))
        row = measure(TTS, prompts, prompt, timeout_s=fault_timeout_s(fault))
    assert_failure_row(row, fault)


def test_a_refused_context_is_a_failure_row_by_its_grpc_code(monkeypatch, short, switched):
    """A modelId Inworld does not have: `create` is answered with INVALID_ARGUMENT (status code 3),
    read through the one gRPC reading as a refused request, before the clock."""
    _, _, prompts, prompt = short
    model = dataclasses.replace(REGISTRY.resolve(TTS), id="inworld/inworld-tts-0")
    url, switch = switched
    _point(monkeypatch, url)
    switch.use(TTSScenario(api_key=KEY))
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
