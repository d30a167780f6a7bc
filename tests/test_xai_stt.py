"""Contract tests: the xAI streaming speech-to-text adapter against the xAI emulator's `/v1/stt`,
over real sockets. The clock test paces audio in real time (it times); the others send the clip
as fast as the socket takes it (they time nothing), so the file stays within seconds.
"""

import asyncio
import json
import os

import pytest
import websockets
from support.contract import KEY, STT_FAULTS, failure_rows_test, measure, stt_clock_test, switched_emulator

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.providers.emulators.scenario import Scenarios
from voxwatch.providers.emulators.stt.xai import DOC_SEQUENCES, XAISTTScenario

pytestmark = pytest.mark.realtime

MODEL = "xai/grok-stt"
emulator = switched_emulator("xai", Scenarios())  # one process for the file, its scenario switched per test


@pytest.fixture(scope="module")
def short():
    ds = Catalog([bundled_root()]).load("stt-starter-clean")
    return ds, next(c for c in ds.clips if c.id == "u039")  # 1.3 s: four streams in about six seconds


def _scenario(clip, **kw) -> Scenarios:
    return Scenarios(stt=XAISTTScenario(transcript=clip.text, speech_start_s=clip.speech_start,
                                        speech_end_s=clip.speech_end, api_key=KEY, **kw))


test_first_partial_and_the_utterance_final_on_the_clock = stt_clock_test(
    MODEL, first_partial_ms=160.0, final_ms=230.0, clip_id="u039")
test_failures_become_rows = failure_rows_test(MODEL, STT_FAULTS, first_partial_ms=20.0)


@pytest.mark.parametrize("sequence", list(DOC_SEQUENCES))
def test_the_documented_sequences_give_the_utterance_once(monkeypatch, emulator, short, unpaced, sequence):
    """DOC_SEQUENCES (emulators/stt/xai.py: the reference's field tables and rules) through the adapter:
    an interim is not a final, a chunk final plus the rest in transcript.done is the utterance, and a
    transcript.done that repeats it is not counted twice."""
    ds, clip = short
    emulator.use(monkeypatch, _scenario(clip, replay=sequence))
    row = measure(MODEL, ds, clip)
    assert row.status == "ok", row.reason
    assert row.hypothesis == "hello world"
    assert (row.first_partial_ms is not None) == bool(DOC_SEQUENCES[sequence][0] or DOC_SEQUENCES[sequence][1])
    assert row.ttfs_ms is not None


def test_the_emulator_speaks_the_documented_handshake(monkeypatch, emulator):
    """What the adapter relies on, straight over the socket: the key on the upgrade, the documented
    query values, `transcript.created` first, an error event that leaves the session open, and
    `audio.done` answered by `transcript.done` with the audio's duration."""
    emulator.use(monkeypatch, Scenarios(stt=XAISTTScenario(transcript="hi", speech_start_s=0.0, speech_end_s=0.0, first_partial_ms=5.0,
                                     final_ms=5.0, api_key=KEY)))

    async def session(url: str) -> None:
        for query, headers, status in (("", {}, 401), ("?sample_rate=11025", {"Authorization": f"Bearer {KEY}"}, 400),
                                       ("?encoding=opus", {"Authorization": f"Bearer {KEY}"}, 400)):
            with pytest.raises(websockets.InvalidStatus) as refused:
                await websockets.connect(f"{url}/v1/stt{query}", additional_headers=headers)
            assert refused.value.response.status_code == status
        async with websockets.connect(f"{url}/v1/stt?sample_rate=16000&encoding=pcm",
                                      additional_headers={"Authorization": f"Bearer {KEY}"}) as ws:
            assert json.loads(await ws.recv())["type"] == "transcript.created"
            await ws.send(json.dumps({"type": "Finalize"}))
            assert json.loads(await ws.recv()) == {"type": "error", "message": "unknown message type 'Finalize'"}
            await ws.send(bytes(32000))  # one second of 16 kHz pcm
            await ws.send(json.dumps({"type": "audio.done"}))
            events = [json.loads(m) async for m in ws]
            assert [e["type"] for e in events] == ["transcript.partial", "transcript.done"]  # interim_results off
            assert events[0]["is_final"] and events[0]["speech_final"] and events[0]["text"] == "hi"
            assert events[1]["text"] == "" and events[1]["duration"] == 1.0
            assert ws.close_code == 1000

    asyncio.run(session(os.environ["VOXWATCH_XAI_BASE_URL"]))
