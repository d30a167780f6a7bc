"""Contract tests: the Hume Octave TTS adapter (`/v0/tts/stream/input`) against its emulator, over
real sockets. The emulator sends audio faster than real time, so no test here waits on a clock.
"""

import asyncio
import base64
import json
import os

import pytest
import websockets
from support.contract import KEY, TTS_FAULTS, failure_rows_test, measure, spoken, switched_emulator, tts_clock_test

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.foundation.events import AUDIO
from voxwatch.providers.emulators.scenario import TTSScenario
from voxwatch.providers.emulators.tts.hume import OFFICIAL_EXAMPLE, OFFICIAL_QUERY, HumeScenario

pytestmark = pytest.mark.realtime

MODEL = "hume/octave-2"
emulator = switched_emulator("hume", TTSScenario(api_key=KEY))  # one process for the file, its scenario switched per test


@pytest.fixture(scope="module")
def prompts():
    return Catalog([bundled_root()]).load("tts-prompts")


def _at_48_khz(streams, scenario) -> None:
    assert all(s.timeline.of(AUDIO)[0].sample_rate == 48000 for s in streams)


test_ttfa_with_its_components_at_48_khz = tts_clock_test(MODEL, "Ava Song", check=_at_48_khz)
# a normal close before the last chunk: the reply was cut short
test_failures_become_rows = failure_rows_test(MODEL, TTS_FAULTS,
                                              closes={"close:1000": ("disconnected", "before the last chunk")})


def test_the_error_frame_hume_sends_is_an_error_row(monkeypatch, emulator, prompts):
    """The out-of-credit frame Coval's runner recorded from Hume (status_code, message, no type)."""
    emulator.use(monkeypatch, HumeScenario(api_key=KEY, out_of_credit=True))
    row = measure(MODEL, prompts, prompts.prompts[0])
    assert row.status == "error" and "Exhausted credit balance" in row.reason and KEY not in row.reason


def test_the_adapter_sends_the_official_examples_shape(monkeypatch):
    """Hume's .NET quickstart ends an utterance with flush and the stream with close; so does the
    adapter, with its voice named as a Hume library voice, and reads 48 kHz pcm until the close."""
    timeline, snippets = spoken(monkeypatch, MODEL, TTSScenario(ttfb_ms=5.0, api_key=KEY), ["Goodbye, world."])
    assert snippets == [{"snippet": 0, "text": "Goodbye, world.", "voice": {"name": "Ava Song", "provider": "HUME_AI"}}]
    assert timeline.of("audio")[0].sample_rate == 48000 and len(timeline.of("closed")) == 1


def test_the_official_example_against_the_emulator(monkeypatch, emulator):
    """OFFICIAL_EXAMPLE (HumeAI/hume-api-examples tts/tts-dotnet-quickstart) over the socket, on its own
    query (the 8 s pause left out): two snippets, each ending with is_last_chunk, then the server's close;
    without a voice, instant mode refuses the snippet, as Hume's reference says it must."""
    emulator.use(monkeypatch, TTSScenario(ttfb_ms=5.0, api_key=KEY))

    async def session(url: str) -> None:
        with pytest.raises(websockets.InvalidStatus) as refused:
            await websockets.connect(f"{url}/v0/tts/stream/input?api_key=wrong&{OFFICIAL_QUERY}")
        assert refused.value.response.status_code == 401
        async with websockets.connect(f"{url}/v0/tts/stream/input?api_key={KEY}&{OFFICIAL_QUERY}") as ws:
            await ws.send(json.dumps({"text": "Hello"}))
            await ws.send(json.dumps({"flush": True}))
            assert "voice must be specified" in json.loads(await ws.recv())["message"]
        async with websockets.connect(f"{url}/v0/tts/stream/input?api_key={KEY}&{OFFICIAL_QUERY}") as ws:
            first, *rest = OFFICIAL_EXAMPLE
            await ws.send(json.dumps({**first, "voice": {"name": "Ava Song", "provider": "HUME_AI"}}))
            for message in rest:
                await ws.send(json.dumps(message))
            chunks = [json.loads(m) async for m in ws]  # until the server closes
            assert ws.close_code == 1000 and {c["type"] for c in chunks} == {"audio"}
            assert [c["text"] for c in chunks if c["is_last_chunk"]] == ["Hello world.", "Goodbye, world."]
            assert all(len(base64.b64decode(c["audio"])) % 2 == 0 for c in chunks)

    asyncio.run(session(os.environ["VOXWATCH_HUME_BASE_URL"]))
