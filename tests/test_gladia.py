"""Contract tests: the Gladia live v2 adapter (HTTP POST, then WebSocket) against its loopback emulator,
over real sockets; the metrics computed from its events equal the injected truth (tolerances:
contract.py), every fault is its row, and the sequence of Gladia's quickstart reads as documented."""

import asyncio
import contextlib
import json
import socket

import httpx
import pytest
import uvicorn
import websockets
from support.contract import KEY, REGISTRY, failure_rows_test, point, stt_clock_test, stt_early_final_test, \
    switched_emulator

from voxwatch.foundation.events import FINAL, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.emulators.scenario import STTScenario
from voxwatch.providers.emulators.stt.gladia import PATH, QUICKSTART, GladiaEmulator

pytestmark = pytest.mark.realtime

MODEL = "gladia/solaria-1"


emulator = switched_emulator("gladia", STTScenario(transcript="", speech_start_s=0.0, speech_end_s=0.0, api_key=KEY))

# the session is created and its socket opened before t0; partials (requested in messages_config)
# replace each other, the utterance's final reads back whole, and stop_recording ends the wait
test_partials_and_the_utterance_final_on_the_clock = stt_clock_test(MODEL)
test_an_utterance_final_before_stop_recording_stays_the_final = stt_early_final_test(MODEL)
test_failures_become_rows = failure_rows_test(
    MODEL, ["unauthorized", "rate_limited", "server_error", "bad_request", "malformed", "disconnect", "no_final"])


@contextlib.asynccontextmanager
async def _in_process(emulator: GladiaEmulator):
    """The emulator's app under uvicorn on this event loop, so a test can set its state."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    server = uvicorn.Server(uvicorn.Config(emulator.app(), log_level="warning", ws="websockets-sansio",
                                          lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await task


def test_a_session_past_the_concurrency_limit_is_a_429_without_a_retry_after(monkeypatch):
    """Gladia allows a plan's number of concurrent live sessions (30 paid); the next POST is a 429, read
    as a rate limit, with no Retry-After (Gladia documents none)."""
    emulator = GladiaEmulator(STTScenario(transcript="hello", speech_start_s=0.0, speech_end_s=0.5, api_key=KEY))
    emulator.max_concurrent = 1

    async def crowded() -> ProviderError:
        async with _in_process(emulator) as url:
            point(monkeypatch, "gladia", url)
            async with httpx.AsyncClient() as client:
                created = (await client.post(url + PATH, json={"encoding": "wav/pcm"},
                                             headers={"x-gladia-key": KEY})).json()
            async with websockets.connect(created["url"]):
                await asyncio.sleep(0.05)  # the session is open
                with pytest.raises(ProviderError) as refused:
                    await REGISTRY.create(REGISTRY.resolve(MODEL)).connect(Timeline())
            return refused.value

    failure = asyncio.run(crowded())
    assert failure.status == "rate_limited" and failure.retry_after_s is None and "429" in str(failure)


def test_the_quickstart_sequence_reads_as_documented(monkeypatch):
    """The quickstart's POST body is the adapter's (it adds the model and messages_config); the
    documented transcripts are finals (one without is_final), and end_recording ends the wait."""
    emulator = GladiaEmulator(STTScenario(transcript="", speech_start_s=0.0, speech_end_s=0.0, api_key=KEY),
                              replay=True)

    async def replay():
        async with _in_process(emulator) as url:
            point(monkeypatch, "gladia", url)
            timeline = Timeline()
            session = await REGISTRY.create(REGISTRY.resolve(MODEL)).connect(timeline)
            await session.send_audio(b"\x00\x00" * 1600)
            await asyncio.sleep(0.05)
            await session.end_audio()
            await asyncio.wait_for(session.wait_final(), 5)
            await session.aclose()
            return timeline

    timeline = asyncio.run(replay())
    body = emulator.requests[0]
    assert {k: body[k] for k in QUICKSTART["request"]} == QUICKSTART["request"]
    assert body["model"] == "solaria-1" and body["messages_config"]["receive_partial_transcripts"] is True
    assert emulator.received[0] == b"\x00\x00" * 1600 and json.loads(emulator.received[1]) == {"type": "stop_recording"}
    assert [e.text for e in timeline.of(FINAL)] == ["Hello world.", "Hello, I'm Sami. I'm the first speaker"]
