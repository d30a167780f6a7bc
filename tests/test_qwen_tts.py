"""Contract tests: the Qwen-TTS Realtime adapter against Alibaba's Model Studio emulator (the one that
serves Qwen-Omni-Realtime too, on the same path), over real sockets.

TTFB and TTFA run from the `input_text_buffer.commit` (the adapter's session is in `commit` mode); every
fault gives its row; the events Alibaba's pages quote are replayed through the adapter (the documented
`session.created` and `input_text_buffer.committed`, the documented `error`) and into the emulator (the
documented `session.update` and `input_text_buffer.append`). One emulator process serves the fault
cases, switching scenarios between streams.
"""

import asyncio
import base64
import json
import os

import pytest
import websockets
from support.contract import KEY, failure_rows_test, measure, switched_emulator, tts_clock_test

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.providers.emulators.s2s.qwen import (DOC_APPEND, DOC_ERROR, DOC_SESSION_CREATED, DOC_SESSION_UPDATE,
                                                   QwenTTSScenario)
from voxwatch.providers.emulators.scenario import Scenarios, S2SScenario, TTSScenario

pytestmark = pytest.mark.realtime

MODEL = "qwen/qwen3-tts-flash-realtime-2025-09-18"
PATH = "/api-ws/v1/realtime?model=qwen3-tts-flash-realtime-2025-09-18"


@pytest.fixture(scope="module")
def prompts():
    return Catalog([bundled_root()]).load("tts-prompts")


emulator = switched_emulator("qwen", TTSScenario(api_key=KEY))


test_ttfa_with_its_components_from_the_commit = tts_clock_test(MODEL, "Cherry", jitter_ms=20.0)
test_failures_become_rows = failure_rows_test(
    MODEL, ["unauthorized", "forbidden", "rate_limited", "server_error", "malformed", "disconnect", "no_final",
            "inaudible"], leading_silence_ms=20.0)


def test_a_wrong_key_is_refused_at_the_upgrade(emulator, prompts, monkeypatch):
    emulator.use(monkeypatch, TTSScenario(api_key="another-key"))
    row = measure(MODEL, prompts, prompts.prompts[0])
    assert row.status == "auth_error" and "401" in row.reason and KEY not in row.reason
    assert row.connect_ms is None


def test_the_documented_session_created_and_committed_through_the_adapter(emulator, prompts, monkeypatch):
    """The emulator opens with Alibaba's quoted `session.created` (the legacy model's name, ids elided as
    "event_xxx") and answers the commit with the quoted `input_text_buffer.committed`: the adapter
    takes both as they are."""
    emulator.use(monkeypatch, QwenTTSScenario(ttfb_ms=20.0, leading_silence_ms=20.0, api_key=KEY, documented="sequence"))
    row = measure(MODEL, prompts, prompts.prompts[0])
    assert row.status == "ok", row.reason
    assert row.ttfa_ms is not None and row.audio_duration_s == pytest.approx(0.62, abs=0.001)


def test_the_documented_error_event_through_the_adapter(emulator, prompts, monkeypatch):
    """Alibaba's quoted `error` event (invalid_value, "Session update error: ...") answers the session
    set-up: the row is an error that carries the vendor's code and message, and no clock."""
    emulator.use(monkeypatch, QwenTTSScenario(api_key=KEY, documented="error"))
    row = measure(MODEL, prompts, prompts.prompts[0])
    assert row.status == "error" and "invalid_value" in row.reason, (row.status, row.reason)
    assert DOC_ERROR["error"]["message"] in row.reason and row.ttfa_ms is None


async def _events(ws, until: str) -> list[dict]:
    """Server events up to and including the first of type `until`."""
    seen = []
    while not seen or seen[-1]["type"] != until:
        seen.append(json.loads(await asyncio.wait_for(ws.recv(), 5)))
    return seen


def test_the_documented_client_events_into_the_emulator(emulator, monkeypatch):
    """Alibaba's quoted `session.update` (server_commit, Chinese, pcm at 24 kHz) and `append` as they are:
    the emulator takes them; in server_commit mode a commit still makes it speak at once, and a
    session.update once the reply has begun gets the documented error."""
    emulator.use(monkeypatch, QwenTTSScenario(ttfb_ms=10.0, leading_silence_ms=20.0, api_key=KEY, documented="sequence"))

    async def session(url: str) -> None:
        async with websockets.connect(url + PATH, additional_headers={"Authorization": f"Bearer {KEY}"}) as ws:
            assert json.loads(await ws.recv()) == DOC_SESSION_CREATED
            await ws.send(json.dumps(DOC_SESSION_UPDATE))
            updated = (await _events(ws, "session.updated"))[-1]["session"]
            assert {k: updated[k] for k in DOC_SESSION_UPDATE["session"]} == DOC_SESSION_UPDATE["session"]
            await ws.send(json.dumps(DOC_APPEND))
            await ws.send(json.dumps({"type": "input_text_buffer.commit"}))
            reply = await _events(ws, "response.done")
            kinds = [e["type"] for e in reply]
            assert kinds[:5] == ["input_text_buffer.committed", "response.created", "response.output_item.added",
                                 "response.content_part.added", "response.audio.delta"]
            assert kinds[-4:] == ["response.audio.done", "response.content_part.done", "response.output_item.done",
                                  "response.done"]
            assert reply[-1]["response"]["status"] == "completed"
            assert reply[-1]["response"]["usage"]["characters"] == len(DOC_APPEND["text"])
            pcm = b"".join(base64.b64decode(e["delta"]) for e in reply if e["type"] == "response.audio.delta")
            assert len(pcm) == 2 * 24000 * 620 // 1000
            await ws.send(json.dumps(DOC_SESSION_UPDATE))
            assert (await _events(ws, "error"))[-1] == DOC_ERROR
            await ws.send(json.dumps({"type": "session.finish"}))
            assert (await _events(ws, "session.finished"))[-1]["type"] == "session.finished"
            await asyncio.wait_for(ws.wait_closed(), 5)
            assert ws.close_code == 1000

    asyncio.run(session(os.environ["VOXWATCH_QWEN_BASE_URL"]))


def test_commit_mode_speaks_only_on_commit(emulator, monkeypatch):
    """In `commit` mode (the adapter's) appended text waits for the commit; an empty commit is an error."""
    emulator.use(monkeypatch, TTSScenario(ttfb_ms=10.0, leading_silence_ms=20.0, api_key=KEY))

    async def session(url: str) -> None:
        async with websockets.connect(url + PATH, additional_headers={"Authorization": f"Bearer {KEY}"}) as ws:
            assert json.loads(await ws.recv())["type"] == "session.created"
            await ws.send(json.dumps({"type": "input_text_buffer.commit"}))
            assert (await _events(ws, "error"))[-1]["error"]["code"] == "invalid_value"
            await ws.send(json.dumps({"type": "session.update", "session": {"mode": "commit", "sample_rate": 16000}}))
            assert (await _events(ws, "session.updated"))[-1]["session"]["sample_rate"] == 16000
            await ws.send(json.dumps({"type": "input_text_buffer.append", "text": "Hello there."}))
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(ws.recv(), 0.3)  # nothing is spoken before the commit
            await ws.send(json.dumps({"type": "input_text_buffer.commit"}))
            reply = await _events(ws, "response.done")
            pcm = b"".join(base64.b64decode(e["delta"]) for e in reply if e["type"] == "response.audio.delta")
            assert len(pcm) == 2 * 16000 * 620 // 1000  # the session's rate
            await ws.send(json.dumps({"type": "session.update", "session": {"response_format": "flac"}}))
            assert (await _events(ws, "error"))[-1] == DOC_ERROR  # a reply has begun: the documented refusal

    asyncio.run(session(os.environ["VOXWATCH_QWEN_BASE_URL"]))


def test_one_process_serves_omni_and_tts(emulator, prompts, monkeypatch):
    """The Model Studio host serves both realtime APIs; a bundle without TTS refuses the TTS model."""
    emulator.use(monkeypatch, Scenarios(tts=TTSScenario(ttfb_ms=20.0, leading_silence_ms=20.0, api_key=KEY),
                  s2s=S2SScenario(api_key=KEY)))
    assert measure(MODEL, prompts, prompts.prompts[0]).status == "ok"
    emulator.use(monkeypatch, S2SScenario(api_key=KEY))
    row = measure(MODEL, prompts, prompts.prompts[0])
    assert row.status == "error" and "HTTP 404" in row.reason
