"""Contract tests: the xAI streaming text-to-speech adapter against the xAI emulator's `/v1/tts`,
over real sockets. The emulator sends audio faster than real time, so no test here waits on a clock.
"""

import asyncio
import base64
import json
import os

import pytest
import websockets
from support.contract import KEY, TTS_FAULTS, failure_rows_test, spoken, switched_emulator, tts_clock_test

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.providers.emulators.scenario import Scenarios, TTSScenario
from voxwatch.providers.emulators.tts.xai import REFERENCE_SEQUENCE

pytestmark = pytest.mark.realtime

MODEL = "xai/grok-tts"
emulator = switched_emulator("xai", Scenarios())  # one process for the file, its scenario switched per test


@pytest.fixture(scope="module")
def prompts():
    return Catalog([bundled_root()]).load("tts-prompts")


test_ttfa_with_its_components = tts_clock_test(MODEL, "eve")  # in the bundle the xAI process serves
test_failures_become_rows = failure_rows_test(MODEL, TTS_FAULTS)


def test_the_adapter_speaks_the_reference_sequence(monkeypatch):
    """REFERENCE_SEQUENCE's client half (emulators/tts/xai.py: the tryAGI/Xai streaming example, with
    Pipecat's and Coval's message shapes) is what the adapter sends for its text, twice on one
    connection; the server's half, audio.delta events then audio.done, ends each utterance."""
    text = REFERENCE_SEQUENCE[0]["delta"]
    timeline, received = spoken(monkeypatch, MODEL, Scenarios(tts=TTSScenario(ttfb_ms=5.0, api_key=KEY)), [text, text])
    assert received == [{"utterance": n, "messages": list(REFERENCE_SEQUENCE)} for n in (0, 1)]
    assert len(timeline.of("request_sent")) == 2 and len(timeline.of("closed")) == 2
    assert timeline.of("audio")[0].sample_rate == 24000


def test_the_emulator_speaks_the_documented_handshake(monkeypatch, emulator):
    """What the adapter relies on, straight over the socket: the key and the audio settings on the
    upgrade, an error event that leaves the session open, text.clear, and pcm16 in audio.delta."""
    emulator.use(monkeypatch, Scenarios(tts=TTSScenario(ttfb_ms=5.0, api_key=KEY)))

    async def session(url: str) -> None:
        bearer = {"Authorization": f"Bearer {KEY}"}
        for query, headers, status in (("?language=en&codec=pcm", {}, 401), ("?codec=pcm", bearer, 400),
                                       ("?language=en&codec=pcm&sample_rate=11025", bearer, 400)):
            with pytest.raises(websockets.InvalidStatus) as refused:
                await websockets.connect(f"{url}/v1/tts{query}", additional_headers=headers)
            assert refused.value.response.status_code == status
        async with websockets.connect(f"{url}/v1/tts?language=en&voice=eve&codec=pcm&sample_rate=16000",
                                      additional_headers=bearer) as ws:
            await ws.send(json.dumps({"type": "Speak"}))
            assert json.loads(await ws.recv())["type"] == "error"
            await ws.send(json.dumps({"type": "text.delta", "delta": "dropped"}))
            await ws.send(json.dumps({"type": "text.clear"}))
            for event in REFERENCE_SEQUENCE:
                await ws.send(json.dumps(event))
            events = []
            while not events or events[-1]["type"] != "audio.done":
                events.append(json.loads(await asyncio.wait_for(ws.recv(), 5)))
            audio = b"".join(base64.b64decode(e["delta"]) for e in events[:-1])
            assert {e["type"] for e in events[:-1]} == {"audio.delta"}
            assert len(audio) == 2 * 16000 * (80 + 600) // 1000  # the default scenario at 16 kHz, pcm16

    asyncio.run(session(os.environ["VOXWATCH_XAI_BASE_URL"]))
