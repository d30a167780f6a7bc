"""Contract tests: the Rime adapter (`/ws3` JSON WebSocket) against its loopback emulator, over real
sockets; the metrics equal the injected truth (tolerances: contract.py) for both registered models,
every fault gives its row, and the documentation's own message sequence and timestamps event are
replayed: the client's through the emulator, the server's through the adapter.
"""

import asyncio
import base64
import json
import os

import pytest
import websockets
from support.contract import (KEY, TTS_FAULTS, failure_rows_test, measure, switched_emulator, tts_clock_test)

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.providers.emulators import server
from voxwatch.providers.emulators.faults import close
from voxwatch.providers.emulators.ledger import Ledger, seen
from voxwatch.providers.emulators.scenario import TTSScenario
from voxwatch.providers.emulators.tts.rime import DOCUMENTED_CLIENT, RimeScenario
from voxwatch.providers.keys import key_variable, vendor_variable
from voxwatch.providers.session.endpoints import ws_url

pytestmark = pytest.mark.realtime

CODA, MIST = "rime/coda", "rime/mistv3"


@pytest.fixture(scope="module")
def prompts():
    return Catalog([bundled_root()]).load("tts-prompts")


emulator = switched_emulator("rime", TTSScenario(api_key=KEY))


# chunks cut off the sample grid are put back together; Mist v3 at its own 22050 Hz
test_coda_ttfa_with_its_components = tts_clock_test(CODA, "astra")
test_mist_ttfa_with_its_components = tts_clock_test(MIST, "cove")
# a clean close before `done`: cut short, not a short utterance
test_failures_become_rows = failure_rows_test(CODA, TTS_FAULTS, closes={close(1000): ("disconnected", "before done")})


def test_the_documented_timestamps_event_goes_through_the_adapter(emulator, prompts, monkeypatch):
    """The docs' example `timestamps` event, verbatim (contextId null), between the audio and `done`."""
    emulator.use(monkeypatch, RimeScenario(TTSScenario(api_key=KEY), documented_timestamps=True))
    row = measure(CODA, prompts, prompts.prompts[2])
    assert row.status == "ok" and row.ttfa_ms is not None, row.reason


def test_the_adapter_sends_segment_never_the_text_then_eos(prompts, monkeypatch):
    ledger = Ledger()
    with server.serve("rime", TTSScenario(api_key=KEY), ledger=ledger) as url:
        monkeypatch.setenv(vendor_variable("rime", "BASE_URL"), url)
        monkeypatch.setenv(key_variable("rime"), KEY)
        row = measure(CODA, prompts, prompts.prompts[1])
        records = ledger.drain()
    assert row.status == "ok", row.reason
    assert seen(records, "message") == [{"text": prompts.prompts[1].text}, {"operation": "eos"}]
    assert seen(records, "synthesis") == [prompts.prompts[1].text]


def test_the_documented_client_sequence_and_the_sentence_buffering(monkeypatch):
    """The coda page's Python example, message for message (pcm in place of its mp3): nothing is
    spoken before `eos` (no sentence ends under the default bySentence), the `clear` drops
    "This is a test ", and `eos` speaks the rest, then `done` and a normal close."""
    ledger = Ledger()
    with server.serve("rime", TTSScenario(ttfb_ms=20.0, speech_ms=100.0, api_key=KEY), ledger=ledger) as url:
        async def replay():
            query = "speaker=astra&modelId=coda&audioFormat=pcm"
            async with websockets.connect(f"{ws_url(url)}/ws3?{query}",
                                          additional_headers={"Authorization": f"Bearer {KEY}"}) as ws:
                for message in DOCUMENTED_CLIENT[:-1]:
                    await ws.send(json.dumps(message))
                with pytest.raises(asyncio.TimeoutError):
                    await asyncio.wait_for(ws.recv(), 0.3)  # buffered: no sentence has ended
                await ws.send(json.dumps(DOCUMENTED_CLIENT[-1]))
                events = [json.loads(m) async for m in ws]
                return events, ws.close_code

        events, code = asyncio.run(replay())
        records = ledger.drain()
    assert seen(records, "synthesis") == ["This is an incomplete sentence"]
    kinds = [e["type"] for e in events]
    assert kinds[-2:] == ["timestamps", "done"] and set(kinds[:-2]) == {"chunk"} and code == 1000
    assert events[-2]["word_timestamps"]["words"] == ["This", "is", "an", "incomplete", "sentence"]
    assert all(e["contextId"] is None for e in events)  # the example sends no contextId
    sizes = [len(base64.b64decode(e["data"])) for e in events[:-2]]
    assert sizes[0] % 2 == 1 and sum(sizes) % 2 == 0  # cut off the sample grid, whole in sum


def test_errors_keep_the_connection_open_and_the_handshake_refuses_what_rime_would(monkeypatch, emulator):
    emulator.use(monkeypatch, TTSScenario(ttfb_ms=20.0, speech_ms=60.0, api_key=KEY))
    url = f"{ws_url(os.environ['VOXWATCH_RIME_BASE_URL'])}/ws3"
    auth = {"Authorization": f"Bearer {KEY}"}

    async def run():
        statuses = []
        for query in ("modelId=coda", "speaker=astra&modelId=coda&audioFormat=mp3", "speaker=astra&modelId=sonic"):
            with pytest.raises(websockets.InvalidStatus) as refused:
                await websockets.connect(f"{url}?{query}", additional_headers=auth)
            statuses.append(refused.value.response.status_code)
        async with websockets.connect(f"{url}?speaker=astra&audioFormat=wavv&segment=immediate",
                                      additional_headers=auth) as ws:
            await ws.send("not json")
            error = json.loads(await ws.recv())
            await ws.send(json.dumps({"text": "still open"}))  # immediate: spoken at once
            first = json.loads(await ws.recv())
        return statuses, error, first

    statuses, error, first = asyncio.run(run())
    assert statuses == [400, 400, 400]
    assert error["type"] == "error" and error["message"]
    # an unrecognized audioFormat falls back to wav: the first chunk opens with the RIFF header
    assert first["type"] == "chunk" and base64.b64decode(first["data"])[:4] == b"RIFF"
