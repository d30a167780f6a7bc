"""Contract tests: the Azure AI Speech adapters (real-time STT over the speech WebSocket protocol, TTS
over REST) against their loopback emulator, over real sockets: the metrics computed from their
events equal the injected truth (tolerances: contract.py), every fault is its row, the in-band
TooManyRequests status is a rate limit, and the messages Microsoft's documentation quotes are
replayed through both adapters.

Only the clock tests pace audio in real time (they time it); the fault tests and the replays send
their audio at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace

import httpx
import pytest
from support.contract import (KEY, REGISTRY, STT_FAULTS, TTS_FAULTS, failure_rows_test, measure, point, stt_clock_test,
                              switched_emulator, tts_clock_test)

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.foundation.events import CLOSED, FINAL, PARTIAL, Timeline
from voxwatch.harness.measure import audio_sent
from voxwatch.harness.pacer import chunk_pcm
from voxwatch.providers.emulators import server
from voxwatch.providers.emulators.ledger import Ledger, seen
from voxwatch.providers.emulators.scenario import Scenarios, STTScenario, TTSScenario
from voxwatch.providers.emulators.stt.azure import DOC_TTS_REQUEST, AzureScenario
from voxwatch.providers.tts.azure import ssml

pytestmark = pytest.mark.realtime

STT, TTS = "azure/speech-to-text", "azure/en-US-AvaNeural"


@pytest.fixture(scope="module")
def data():
    catalog = Catalog([bundled_root()])
    clean, prompts = catalog.load("stt-starter-clean"), catalog.load("tts-prompts")
    return clean, next(c for c in clean.clips if c.id == "u039"), prompts


def _stt(clip, **kw) -> STTScenario:
    return STTScenario(transcript=clip.text, speech_start_s=clip.speech_start, speech_end_s=clip.speech_end,
                       api_key=KEY, **kw)


emulator = switched_emulator("azure", Scenarios())  # one process for the file: STT and TTS on one port


def _turn_closed(streams, clip) -> None:
    assert all(s.timeline.first(CLOSED) is not None for s in streams)


# a hypothesis is a partial, the Success phrase the final; the turn ends at turn.end
test_hypotheses_and_the_phrase_on_the_clock = stt_clock_test(STT, clip_id="u039", check=_turn_closed)
test_tts_ttfb_and_ttfa_from_the_request = tts_clock_test(TTS, None)
test_stt_failures_become_rows = failure_rows_test(STT, STT_FAULTS)
test_tts_failures_become_rows = failure_rows_test(TTS, TTS_FAULTS)


def test_too_many_requests_in_band_is_a_rate_limit(monkeypatch, data, emulator, unpaced):
    """A phrase with RecognitionStatus TooManyRequests (the SDK's enum): a rate-limited row, without a
    Retry-After (none is documented for the WebSocket)."""
    clean, clip, _ = data
    emulator.use(monkeypatch, AzureScenario(_stt(clip), max_sessions=0))
    row = measure(STT, clean, clip, timeout_s=10)
    assert row.status == "rate_limited" and "TooManyRequests" in row.reason, (row.status, row.reason)
    assert row.retry_after_s is None and row.ttfs_ms is None and KEY not in repr(row)


@contextlib.contextmanager
def _ledgered(scenario):
    """The emulator with a ledger whose `seen:` notes the test reads."""
    ledger = Ledger()
    with server.serve("azure", scenario, ledger=ledger) as url:
        yield url, ledger


def test_the_documented_turn_replayed_through_the_adapter(monkeypatch, data):
    """The sample messages of Microsoft's WebSocket protocol page, in its order, read as the protocol
    says: the hypothesis a partial, the Success phrase the final, turn.end the end, then the client's
    telemetry acknowledges every message it received."""
    clean, clip, _ = data
    chunks = chunk_pcm(audio_sent(clean, clip), clip.sample_rate, 20)[:10]

    async def drive(url: str) -> Timeline:
        point(monkeypatch, "azure", url)
        timeline = Timeline()
        session = await REGISTRY.create(REGISTRY.resolve(STT)).connect(timeline)
        try:
            for chunk in chunks:
                await session.send_audio(chunk)
            await session.end_audio()
            await asyncio.wait_for(session.wait_final(), 5)
        finally:
            await session.aclose()
        return timeline

    with _ledgered(AzureScenario(_stt(clip), replay_docs=True)) as (url, ledger):
        timeline = asyncio.run(drive(url))
        records = ledger.drain()
    assert [e.text for e in timeline.of(PARTIAL)] == ["this is a speech hypothesis"]
    assert [e.text for e in timeline.of(FINAL)] == ["Remind me to buy 5 pencils."]
    assert seen(records, "audio") == [{"bytes": sum(map(len, chunks)), "request_id": seen(records, "audio")[0]["request_id"]}]
    [telemetry] = seen(records, "telemetry")
    assert [next(iter(m)) for m in telemetry["ReceivedMessages"]] == [
        "turn.start", "speech.startDetected", "speech.hypothesis", "speech.phrase", "speech.endDetected", "turn.end"]


def test_the_documented_tts_request_and_the_adapters_own(monkeypatch, data):
    """Microsoft's sample REST request, sent as it is quoted (with a key for its placeholder token),
    gets its audio; the adapter, given the sample's voice and text, sends the same voice and text."""
    _, _, prompts = data
    text = "I'm excited to try text to speech!"

    async def adapter_request(url: str) -> None:
        point(monkeypatch, "azure", url)
        model = replace(REGISTRY.resolve(TTS), voice="en-US-ChristopherNeural")
        adapter = REGISTRY.create(model)
        session = await adapter.connect(Timeline())
        await session.synthesize(text)
        await adapter.aclose()

    with _ledgered(TTSScenario(ttfb_ms=5.0, leading_silence_ms=20.0, api_key=KEY)) as (url, ledger):
        headers = {k: v for k, v in DOC_TTS_REQUEST["headers"].items() if k not in ("Authorization", "Host")}
        quoted = httpx.post(f"{url}/cognitiveservices/v1", headers={**headers, "Ocp-Apim-Subscription-Key": KEY},
                            content=DOC_TTS_REQUEST["body"])
        asyncio.run(adapter_request(url))
        records = ledger.drain()
    assert quoted.status_code == 200 and quoted.content[:4] == b"RIFF" and len(quoted.content) > 1000
    doc, ours = seen(records, "tts")
    assert doc == {"voice": "en-US-ChristopherNeural", "text": text, "format": "riff-24khz-16bit-mono-pcm",
                   "user_agent": "<Your application name>"}
    assert ours == {**doc, "format": "raw-24khz-16bit-mono-pcm", "user_agent": "voxwatch"}
    assert "&amp;" in ssml("A & B", "v") and 'name="v"' in ssml("A & B", "v")
