"""Contract tests: Gradium's STT and TTS adapters against its emulator (one process serves
`/api/speech/asr` and `/api/speech/tts`, as one host does), over real sockets.

Gradium's API takes one model name, the alias "default", which the registry refuses as floating
(registry.toml's header says why Gradium is not registered): these tests measure the adapters under
test-only entries, `gradium/default:asr` and `gradium/default:tts`, never registered.

STT: the words come as `text` messages (new words each, no final flag), the last held back by the
model's lookahead; `end_audio` flushes and the `flushed` reply is the final. TTS: TTFB and TTFA run from
the `text` message. Then every fault gives its row, a close gives the status close_codes names, and the
messages Gradium's docs quote are replayed through both adapters and into the emulator.
"""

import asyncio
import base64
import json
import os

import pytest
import websockets
from support.contract import (KEY, REGISTRY, failure_rows_test, measure, measure_stream, one_port, stt_clock_test,
                              stt_scenario, switched_emulator, tts_clock_test)

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.foundation.events import CHUNK_SENT, FINAL
from voxwatch.providers.emulators.faults import close
from voxwatch.providers.emulators.scenario import Scenarios, STTScenario, TTSScenario
from voxwatch.providers.emulators.tts.gradium import (DOC_END_OF_STREAM, DOC_ERROR, DOC_STT_READY, DOC_STT_SETUP,
                                                      DOC_TTS_READY, DOC_TTS_SETUP, DOC_TTS_TEXT, DOC_TTS_WORD,
                                                      GradiumScenario)
from voxwatch.metrics.as_sent import sent_at_ns
from voxwatch.providers.registry import ModelInfo

pytestmark = pytest.mark.realtime

STT = ModelInfo(id="gradium/default:asr", board="stt", vendor="gradium", protocol="stt-stream",
                adapter="voxwatch.providers.stt.gradium:GradiumSTT", status="active", region="vendor",
                needs_key=True, voice=None, exclusions=())
TTS = ModelInfo(id="gradium/default:tts", board="tts", vendor="gradium", protocol="tts-stream",
                adapter="voxwatch.providers.tts.gradium:GradiumTTS", status="active", region="vendor",
                needs_key=True, voice="YTpq7expH9539ERJ", exclusions=())


@pytest.fixture(autouse=True)
def unregistered(monkeypatch):
    """The two test-only entries, for the contract helpers' registry (never the package's file)."""
    for model in (STT, TTS):
        monkeypatch.setitem(REGISTRY.models, model.id, model)


@pytest.fixture(scope="module")
def data():
    catalog = Catalog([bundled_root()])
    clean, prompts = catalog.load("stt-starter-clean"), catalog.load("tts-prompts")
    return clean, next(c for c in clean.clips if c.id == "u043"), prompts


emulator = switched_emulator("gradium", one_port())  # STT and TTS on one port, as Gradium serves them


test_one_process_times_the_flushed_final = stt_clock_test(STT.id, clip_id="u043")
test_one_process_times_the_first_audio = tts_clock_test(TTS.id, "YTpq7expH9539ERJ", jitter_ms=20.0)


def test_the_final_is_the_flushed_reply_not_the_last_words(emulator, data, monkeypatch):
    """The last words come 20 ms after the end of speech, before the flush (sent with the last chunk,
    about 80 ms after it; the clip's audio ends 100 ms after it): Gradium has no final flag, so the turn is complete only at `flushed`, and TTFS is
    that reply's, not the words'."""
    clean, clip, _ = data
    emulator.use(monkeypatch, stt_scenario(clip, first_partial_ms=100.0, final_ms=20.0))
    stream = measure_stream(STT.id, clean, clip)
    row, timeline = stream.row, stream.timeline
    assert row.status == "ok" and row.hypothesis == clip.text, row.reason
    # the flush leaves after the last chunk's write (when that 20 ms chunk starts), and flushed after it
    last_write = timeline.of(CHUNK_SENT)[-1].t_ns
    assert timeline.first(FINAL).t_ns >= last_write
    # TTFS runs from the write of the chunk carrying the end of speech (METHOD "Audio"): on time, the
    # last chunk's write is about 80 ms later; a busy pacer writing both late in one burst brings them closer
    anchor = sent_at_ns(timeline, clip.speech_end * clip.sample_rate, clip.sample_rate)
    assert row.ttfs_ms >= (last_write - anchor) / 1e6 - 1.0, (row.ttfs_ms, (last_write - anchor) / 1e6)


test_stt_failures_become_rows = failure_rows_test(
    STT.id, ["unauthorized", "rate_limited", "server_error", "malformed", "disconnect", "no_final"],
    first_partial_ms=60.0, final_ms=150.0)
test_tts_failures_become_rows = failure_rows_test(
    TTS.id, ["unauthorized", "forbidden", "rate_limited", "server_error", "malformed", "disconnect", "no_final",
             "inaudible"], leading_silence_ms=20.0)


@pytest.mark.parametrize("code, status", [(1000, "disconnected"), (1001, "disconnected"), (1008, "error"),
                                          (1011, "server_error"), (1013, "server_error"), (4999, "error")])
def test_a_close_reads_as_close_codes_reads_it(emulator, data, code, status, monkeypatch):
    """Gradium documents 1008 and 1011 only, with the RFC's meanings: every close reads as RFC 6455's."""
    _, _, prompts = data
    emulator.use(monkeypatch, TTSScenario(ttfb_ms=10.0, leading_silence_ms=20.0, api_key=KEY, fault=close(code)))
    row = measure(TTS.id, prompts, prompts.prompts[0])
    assert row.status == status and f"code {code}" in row.reason, (row.status, row.reason)


def test_a_wrong_key_is_gradiums_1008_error_with_its_reason(emulator, data, monkeypatch):
    clean, clip, prompts = data
    emulator.use(monkeypatch, Scenarios(stt=stt_scenario(clip), tts=TTSScenario(api_key="another-key")))
    row = measure(TTS.id, prompts, prompts.prompts[0])
    assert row.status == "error" and "1008" in row.reason and "Invalid API key" in row.reason, row.reason
    assert KEY not in row.reason and row.connect_ms is None and row.ttfa_ms is None


def test_the_documented_messages_through_both_adapters(emulator, data, monkeypatch):
    """The emulator sends what Gradium's docs quote, verbatim: the STT `ready` (its full example), a
    `step`, the `text` "Hello world" at start_s 0.5 and the `end_text`; the TTS `ready` (a request_id
    only: the adapter takes pcm's documented 48 kHz); and the quoted `error` (code 1008)."""
    clean, clip, prompts = data
    documented = GradiumScenario(stt=STTScenario(transcript="Hello world", speech_start_s=clip.speech_start,
                                                 speech_end_s=clip.speech_end, final_ms=150.0, api_key=KEY),
                                 tts=TTSScenario(ttfb_ms=20.0, leading_silence_ms=20.0, api_key=KEY), documented=True)
    emulator.use(monkeypatch, documented)
    text = measure(STT.id, clean, clip)
    assert text.status == "ok" and text.hypothesis == "Hello world", (text.status, text.reason)
    speech = measure(TTS.id, prompts, prompts.prompts[0])
    assert speech.status == "ok" and speech.audio_duration_s == pytest.approx(0.62, abs=0.001), speech.reason
    emulator.use(monkeypatch, GradiumScenario(tts=TTSScenario(api_key="another-key"), documented=True))
    refused = measure(TTS.id, prompts, prompts.prompts[0])
    assert refused.status == "error" and DOC_ERROR["message"] in refused.reason and "1008" in refused.reason


async def _until(ws, kind: str) -> list[dict]:
    """Messages up to and including the first of type `kind`."""
    seen = []
    while not seen or seen[-1]["type"] != kind:
        seen.append(json.loads(await asyncio.wait_for(ws.recv(), 5)))
    return seen


def test_the_documented_client_frames_into_the_emulator(emulator, data, monkeypatch):
    """Gradium's quoted client frames as they are: TTS setup (pcm), text, end_of_stream; STT setup (bare
    pcm, 24 kHz), audio, a flush whose id is the SDK page's string; and the rules around them."""
    emulator.use(monkeypatch, GradiumScenario(stt=STTScenario(transcript="Hello world", speech_start_s=0.1, speech_end_s=0.3,
                                        first_partial_ms=50.0, final_ms=100.0, api_key=KEY),
                        tts=TTSScenario(ttfb_ms=10.0, leading_silence_ms=20.0, api_key=KEY), documented=True))
    auth = {"x-api-key": KEY}

    async def session(url: str) -> None:
        async with websockets.connect(url + "/api/speech/tts", additional_headers=auth) as ws:
            await ws.send(json.dumps(DOC_TTS_SETUP))
            assert json.loads(await ws.recv()) == DOC_TTS_READY
            await ws.send(json.dumps(DOC_TTS_TEXT))
            await ws.send(json.dumps({"type": "end_of_stream"}))
            got = await _until(ws, "end_of_stream")
            audio = b"".join(base64.b64decode(m["audio"]) for m in got if m["type"] == "audio")
            assert len(audio) == 2 * 48000 * 620 // 1000  # pcm: 48 kHz
            words = [m for m in got if m["type"] == "text"]
            assert words[0] == DOC_TTS_WORD and words[1]["text"] == "world." and words[1]["stop_s"] <= 0.62
            assert got[-1] == DOC_END_OF_STREAM
            await asyncio.wait_for(ws.wait_closed(), 5)
            assert ws.close_code == 1000  # close_ws_on_eos
        async with websockets.connect(url + "/api/speech/tts", additional_headers=auth) as ws:
            await ws.send(json.dumps({"type": "setup", "voice_id": "YTpq7expH9539ERJ"}))  # output_format: wav
            await _until(ws, "ready")
            await ws.send(json.dumps({"type": "text", "text": "Hi."}))
            first = base64.b64decode((await _until(ws, "audio"))[-1]["audio"])
            assert first[:4] == b"RIFF" and first[8:16] == b"WAVEfmt "
        async with websockets.connect(url + "/api/speech/asr", additional_headers=auth) as ws:
            await ws.send(json.dumps({"type": "audio", "audio": ""}))  # not setup first
            assert json.loads(await ws.recv()) == DOC_ERROR
            await asyncio.wait_for(ws.wait_closed(), 5)
            assert ws.close_code == 1008
        async with websockets.connect(url + "/api/speech/asr", additional_headers=auth) as ws:
            await ws.send(json.dumps(DOC_STT_SETUP))
            assert json.loads(await ws.recv()) == DOC_STT_READY
            second = base64.b64encode(b"\x00\x00" * 24000).decode()  # one second of bare pcm: 24 kHz
            await ws.send(json.dumps({"type": "audio", "audio": second}))
            await ws.send(json.dumps({"type": "flush", "flush_id": "1"}))
            got = await _until(ws, "flushed")
            assert [m["type"] for m in got].count("step") == 12  # one every 80 ms of audio
            assert got[-1] == {"type": "flushed", "flush_id": "1"}
            assert [m["text"] for m in got if m["type"] == "text"] == ["Hello world"]
            await ws.send(json.dumps({"type": "end_of_stream"}))
            assert (await _until(ws, "end_of_stream"))[-1] == DOC_END_OF_STREAM

    asyncio.run(session(os.environ["VOXWATCH_GRADIUM_BASE_URL"]))
