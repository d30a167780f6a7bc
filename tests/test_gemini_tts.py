"""Contract tests: the Gemini TTS adapter (`streamGenerateContent?alt=sse`) against the Gemini emulator,
which serves the TTS methods beside the Live WebSocket on one port: TTFB and TTFA from the request,
every fault its row, and the request of Google's TTS guide sent into the emulator as the guide's
sample sends it, beside the adapter's own for the same text and voice.

Nothing here is paced: TTS is timed from the request, and the emulator sends faster than real time.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import wave
from dataclasses import replace

import httpx
import pytest
from support.contract import (KEY, REGISTRY, TTS_FAULTS, failure_rows_test, measure, point, serve, switched_emulator,
                              tts_clock_test)

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.foundation.events import AUDIO, Timeline
from voxwatch.providers.emulators import server
from voxwatch.providers.emulators.ledger import Ledger, seen
from voxwatch.providers.emulators.s2s.gemini_tts import DOC_TTS_MODEL, DOC_TTS_REQUEST
from voxwatch.providers.emulators.scenario import S2SScenario, Scenarios, TTSScenario
from voxwatch.providers.tts.gemini import events, tts_request

pytestmark = pytest.mark.realtime

MODEL = "gemini/gemini-3.8-flash-tts"


@pytest.fixture(scope="module")
def prompts():
    return Catalog([bundled_root()]).load("tts-prompts")


emulator = switched_emulator("gemini", TTSScenario(api_key=KEY))
test_ttfb_and_ttfa_from_the_request = tts_clock_test(MODEL, None)
test_failures_become_rows = failure_rows_test(MODEL, TTS_FAULTS)


def test_a_wrong_key_is_googles_invalid_argument_and_a_refused_key(monkeypatch, prompts, emulator):
    """Google answers a bad key with 400 INVALID_ARGUMENT "API key not valid": a refused key, read
    from the error's message, never with the key in the row."""
    emulator.use(monkeypatch, TTSScenario(api_key=KEY))
    monkeypatch.setenv("VOXWATCH_GEMINI_API_KEY", "not-the-key")
    row = measure(MODEL, prompts, prompts.prompts[0])
    assert row.status == "auth_error" and "400" in row.reason and "not-the-key" not in repr(row)


def test_the_live_api_still_answers_on_the_same_port(monkeypatch):
    """One port for both APIs: the Live WebSocket is refused by its handshake fault, as before."""
    with serve("gemini", Scenarios(tts=TTSScenario(api_key=KEY), s2s=S2SScenario(api_key=KEY, fault="unauthorized"))) as url:
        point(monkeypatch, "gemini", url)
        row = measure("gemini/gemini-3.8-live", *_caller())
    assert row.status == "auth_error", (row.status, row.reason)


def _caller():
    ds = Catalog([bundled_root()]).load("stt-starter-clean")
    return ds, next(c for c in ds.clips if c.id == "u039")


@contextlib.contextmanager
def _ledgered(scenario):
    ledger = Ledger()
    with server.serve("gemini", scenario, ledger=ledger) as url:
        yield url, ledger


def test_the_guides_request_and_the_adapters_own(monkeypatch):
    """The TTS guide's sample request (its REST body, model gemini-2.5-flash-preview-tts) gets audio
    where the guide reads it, `candidates[0].content.parts[0].inlineData.data`; streamed, the same
    body gets events that end with a finishReason; the adapter, given the sample's text and voice,
    sends the same body, and marks every blob's audio."""
    text = DOC_TTS_REQUEST["contents"][0]["parts"][0]["text"]
    assert tts_request(text, "Kore") == DOC_TTS_REQUEST

    async def adapter_request(url: str) -> Timeline:
        point(monkeypatch, "gemini", url)
        adapter = REGISTRY.create(replace(REGISTRY.resolve(MODEL), voice="Kore"))
        timeline = Timeline()
        session = await adapter.connect(timeline)
        await session.synthesize(text)
        await adapter.aclose()
        return timeline

    with _ledgered(TTSScenario(ttfb_ms=5.0, leading_silence_ms=20.0, api_key=KEY)) as (url, ledger):
        headers = {"x-goog-api-key": KEY}
        unary = httpx.post(f"{url}/v1beta/models/{DOC_TTS_MODEL}:generateContent", headers=headers, json=DOC_TTS_REQUEST)
        streamed = httpx.post(f"{url}/v1beta/models/{DOC_TTS_MODEL}:streamGenerateContent", params={"alt": "sse"},
                              headers=headers, json=DOC_TTS_REQUEST)
        wav = httpx.post(f"{url}/v1beta/models/gemini-3.8-flash-tts:generateContent", headers=headers,
                         json=DOC_TTS_REQUEST)
        timeline = asyncio.run(adapter_request(url))
        records = ledger.drain()
    blob = unary.json()["candidates"][0]["content"]["parts"][0]["inlineData"]
    assert unary.status_code == 200 and blob["mimeType"] == "audio/L16;codec=pcm;rate=24000"
    assert len(base64.b64decode(blob["data"])) > 24000  # over half a second of 24 kHz int16
    with wave.open(io.BytesIO(base64.b64decode(wav.json()["candidates"][0]["content"]["parts"][0]["inlineData"]["data"]))) as w:
        assert (w.getframerate(), w.getsampwidth(), w.getnchannels()) == (24000, 2, 1)  # 3.8 unary: WAV [CB]
    sent, rest = events(streamed.content)
    assert streamed.headers["content-type"].startswith("text/event-stream") and rest.strip() == b"" and len(sent) > 1
    assert b'"finishReason": "STOP"' in sent[-1] and all(b"finishReason" not in e for e in sent[:-1])
    guide, *_, ours = seen(records, "tts")
    assert guide == {"model": DOC_TTS_MODEL, "method": "generateContent", "text": text, "voice": "Kore", "sse": False}
    assert ours == {"model": "gemini-3.8-flash-tts", "method": "streamGenerateContent", "text": text, "voice": "Kore",
                    "sse": True}
    marks = timeline.of(AUDIO)
    assert len(marks) == len(sent) and all(m.sample_rate == 24000 for m in marks)
