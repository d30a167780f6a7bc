"""Contract tests: the Murf Falcon adapter (stream-input WebSocket) against its loopback emulator, over
real sockets; the metrics equal the injected truth (tolerances: contract.py), every fault gives its
row, the vendor plugin's message sequence is replayed, and the text buffering that delays a client
that does not end its text is the emulator's as documented.
"""

import asyncio
import base64
import json
import os
import time

import pytest
import websockets
from support.contract import (KEY, TTS_FAULTS, failure_rows_test, measure, switched_emulator, tts_clock_test)

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.providers.emulators import server
from voxwatch.providers.emulators.faults import close
from voxwatch.providers.emulators.ledger import Ledger, seen
from voxwatch.providers.emulators.scenario import TTSScenario
from voxwatch.providers.emulators.tts.murf import DOCUMENTED_CLEAR, DOCUMENTED_SEQUENCE, MAX_DELAY_MS
from voxwatch.providers.keys import key_variable, vendor_variable
from voxwatch.providers.session.endpoints import ws_url

pytestmark = pytest.mark.realtime

MODEL = "murf/falcon-2"
QUERY = "model=falcon-2&sample_rate=24000&channel_type=MONO&format=PCM"


@pytest.fixture(scope="module")
def prompts():
    return Catalog([bundled_root()]).load("tts-prompts")


emulator = switched_emulator("murf", TTSScenario(api_key=KEY))


test_ttfa_with_its_components = tts_clock_test(MODEL, "en-US-amara")
test_failures_become_rows = failure_rows_test(MODEL, TTS_FAULTS, closes={close(1011): ("server_error", "code 1011")})


def test_the_adapter_sends_the_sdks_messages(prompts, monkeypatch):
    """The voice configuration that opens the context (before the clock), then the whole text with
    `end: true` in the same context: the SDK's SetVoiceConfigurationOrInitializeContext and SendText."""
    ledger = Ledger()
    with server.serve("murf", TTSScenario(api_key=KEY), ledger=ledger) as url:
        monkeypatch.setenv(vendor_variable("murf", "BASE_URL"), url)
        monkeypatch.setenv(key_variable("murf"), KEY)
        row = measure(MODEL, prompts, prompts.prompts[1])
        configure, text = seen(ledger.drain(), "message")
    assert row.status == "ok", row.reason
    assert configure == {"voice_config": {"voice_id": "en-US-amara"}, "context_id": configure["context_id"]}
    assert text == {"text": prompts.prompts[1].text, "context_id": configure["context_id"], "end": True}


async def _replies(ws, until_final: bool = True) -> list[tuple[dict, float]]:
    out = []
    while not out or (until_final and not out[-1][0].get("final")):
        out.append((json.loads(await asyncio.wait_for(ws.recv(), 5)), time.monotonic()))
    return out


def test_the_plugins_sequence_and_the_text_buffering(monkeypatch, emulator):
    """The vendor plugin's messages, verbatim (its context id, text and voice filled in, its other voice
    settings left as the placeholders): audio for the context, then
    `final`. Text without a sentence boundary, shorter than min_buffer_size and without `end`, waits
    max_buffer_delay_in_ms. A `clear` drops what is buffered. The default format is WAV: every
    chunk carries its own RIFF header."""
    scenario = TTSScenario(ttfb_ms=30.0, leading_silence_ms=20.0, speech_ms=100.0, api_key=KEY)
    emulator.use(monkeypatch, scenario)
    url = f"{ws_url(os.environ['VOXWATCH_MURF_BASE_URL'])}/v1/speech/stream-input"
    values = {"<ctx>": "ctx-1", "<text>": "Hello from Murf.", "<voice_id>": "en-US-amara"}

    def fill(message: dict) -> dict:
        text = json.dumps(message)
        for name, value in values.items():
            text = text.replace(f'"{name}"', json.dumps(value))
        return json.loads(text)

    async def run():
        async with websockets.connect(f"{url}?{QUERY}", additional_headers={"api-key": KEY}) as ws:
            for message in DOCUMENTED_SEQUENCE:
                await ws.send(json.dumps(fill(message)))
            replies = [r for r, _ in await _replies(ws)]
            # the text alone (no end): it waits for the buffer delay
            await ws.send(json.dumps({"text": "Hi there", "context_id": "ctx-2"}))
            sent = time.monotonic()
            first, at = (await _replies(ws, until_final=False))[0]
            waited = at - sent
            # buffered, then cleared: nothing is spoken, and `end` brings only `final`
            await ws.send(json.dumps({"text": "Gone", "context_id": "ctx-3"}))
            await ws.send(json.dumps(fill(DOCUMENTED_CLEAR) | {"context_id": "ctx-3"}))
            await ws.send(json.dumps({"context_id": "ctx-3", "end": True}))
            while True:
                reply, _ = (await _replies(ws, until_final=False))[0]
                if reply.get("context_id") == "ctx-3":
                    break
        async with websockets.connect(f"{url}?model=FALCON", additional_headers={"api-key": KEY}) as ws:
            await ws.send(json.dumps({"text": "Hello.", "end": True}))
            wav = [r for r, _ in await _replies(ws)]
        return replies, first, waited, reply, wav

    replies, first, waited, cleared, wav = asyncio.run(run())
    assert replies[-1] == {"final": True, "context_id": "ctx-1"} and len(replies) > 2
    assert all(set(r) == {"audio", "context_id"} and r["context_id"] == "ctx-1" for r in replies[:-1])
    assert first["context_id"] == "ctx-2" and waited >= (MAX_DELAY_MS + scenario.ttfb_ms) / 1000 * 0.9
    assert cleared == {"final": True, "context_id": "ctx-3"}
    assert all(base64.b64decode(r["audio"])[:4] == b"RIFF" for r in wav[:-1]) and wav[-1]["final"] is True


def test_a_wrong_key_and_an_unknown_model_are_refused_at_the_upgrade(monkeypatch, emulator, prompts):
    emulator.use(monkeypatch, TTSScenario(api_key="another-key"))
    row = measure(MODEL, prompts, prompts.prompts[0])
    assert row.status == "auth_error" and "HTTP 401" in row.reason and KEY not in repr(row)

    async def unknown():
        url = ws_url(os.environ["VOXWATCH_MURF_BASE_URL"])
        with pytest.raises(websockets.InvalidStatus) as refused:
            await websockets.connect(f"{url}/v1/speech/stream-input?model=falcon-9", additional_headers={"api-key": "another-key"})
        return refused.value.response.status_code

    assert asyncio.run(unknown()) == 400
