"""Contract tests: the OpenAI adapters (batch and Realtime STT, TTS, Realtime S2S) against the
loopback OpenAI emulator, over real sockets; the metrics computed from their events equal the
injected truth (tolerances: contract.py), and every fault that fits gives its failure row.
"""

import asyncio
import base64
import hashlib
import json

import httpx
import numpy as np
import pytest
import websockets
from support.contract import KEY, fault_timeout_s, REGISTRY, assert_failure_row, assert_on_clock, measure, measure_three, rows, serve

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.providers.emulators.s2s.openai import ERROR_ON_APPEND, SESSION_EXPIRED, OpenAIScenario
from voxwatch.providers.emulators.scenario import S2SScenario, Scenarios, STTScenario, TTSScenario
from voxwatch.providers.session.endpoints import ws_url
from voxwatch.foundation.events import PARTIAL, Timeline
from voxwatch.providers.s2s.openai_realtime import TRANSCRIPT_DONE, Upsampler
from voxwatch.harness.measure import CLOCK_FIELDS, audio_sent
from voxwatch.harness.pacer import chunk_pcm, paced_send

pytestmark = pytest.mark.realtime

BATCH = ("openai/whisper-1", "openai/gpt-4o-transcribe:http")
REALTIME_STT = "openai/gpt-4o-transcribe:realtime"
TTS = "openai/gpt-4o-mini-tts-2025-12-15"
S2S = "openai/gpt-realtime-2025-08-28"


@pytest.fixture(scope="module")
def clips():
    ds = Catalog([bundled_root()]).load("stt-starter-clean")
    return ds, {c.id: c for c in ds.clips}


@pytest.fixture(scope="module")
def prompts():
    return Catalog([bundled_root()]).load("tts-prompts")


@pytest.fixture
def openai_env(monkeypatch):
    def point(url: str) -> None:
        monkeypatch.setenv("VOXWATCH_OPENAI_BASE_URL", url)
        monkeypatch.setenv("VOXWATCH_OPENAI_API_KEY", KEY)
    return point


def first_append(ds, clip) -> bytes:
    """The audio of a stream's first `input_audio_buffer.append`: the emulator keys its truth on it."""
    return Upsampler().push(chunk_pcm(audio_sent(ds, clip), clip.sample_rate, 20)[0])


def test_upsampler_is_continuous_and_keeps_the_rate():
    rate_in, n = 16000, 16000
    tone = (0.3 * np.sin(2 * np.pi * 440 * np.arange(n) / rate_in) * 32767).astype("<i2").tobytes()
    up = Upsampler()
    out = b"".join(up.push(c) for c in chunk_pcm(tone, rate_in, 20))
    y = np.frombuffer(out, dtype="<i2").astype(np.float64)
    assert abs(y.size - n * 3 // 2) <= 1
    expected = 0.3 * 32767 * np.sin(2 * np.pi * 440 * np.arange(y.size) / 24000)
    assert np.max(np.abs(y - expected)) < 0.01 * 32767  # no seams at the 20 ms chunk boundaries


@pytest.mark.parametrize("model_id", BATCH)
def test_batch_latency_is_the_processing_time_over_a_reused_connection(openai_env, clips, model_id):
    ds, by_id = clips
    clip = by_id["u049"]
    scenario = STTScenario(transcript=clip.text, speech_start_s=clip.speech_start, speech_end_s=clip.speech_end,
                           final_ms=280.0, api_key=KEY)
    with serve("openai", scenario) as url:
        openai_env(url)
        streams = measure_three(model_id, ds, clip)
    assert_on_clock(streams, "latency_ms", 280.0)
    audio_s = (clip.speech_end + 0.1)
    assert all(r.rtf == pytest.approx(r.latency_ms / 1000 / audio_s, rel=0.01) for r in rows(streams))
    # plain-text loopback has no TLS to negotiate HTTP/2, so the warmed connection speaks HTTP/1.1
    assert all(r.http_version == "HTTP/1.1" and r.connection_reused is True for r in rows(streams))
    assert all(r.hypothesis == clip.text and r.substitutions == r.deletions == r.insertions == 0
               for r in rows(streams))


def test_batch_client_is_the_tts_instrument(openai_env, clips):
    ds, by_id = clips
    clip = by_id["u040"]
    with serve("openai", STTScenario(transcript="that works for me", speech_start_s=0.1, speech_end_s=1.0,
                                     final_ms=20.0, api_key=KEY)) as url:
        openai_env(url)
        adapter = REGISTRY.create(REGISTRY.resolve("openai/gpt-4o-transcribe:http"))
        audio = np.frombuffer(ds.audio(clip).tobytes(), dtype="<i2").astype(np.float32) / 32768
        try:
            assert adapter.transcribe_text(audio) == "that works for me"
            assert adapter.transcribe_text(audio) == "that works for me"  # the client is reused
        finally:
            adapter.close()


def test_realtime_transcription_final_keyed_on_the_first_append(openai_env, clips):
    ds, by_id = clips
    clip = by_id["u040"]
    key = hashlib.sha256(first_append(ds, clip)).hexdigest()
    # the default anchors are wrong on purpose: only the per-stream ones, keyed by the 24 kHz
    # first append, give the truth
    scenario = STTScenario(transcript="wrong", speech_start_s=0.0, speech_end_s=0.2, final_ms=320.0,
                           partial_every_ms=40.0, api_key=KEY, anchors=((key, clip.speech_start, clip.speech_end),),
                           transcripts=((key, clip.text),))
    with serve("openai", scenario) as url:
        openai_env(url)
        streams = measure_three(REALTIME_STT, ds, clip)
        partials = asyncio.run(_partials(ds, clip))
    assert_on_clock(streams, "ttfs_ms", 320.0, clip=clip)
    assert all(r.hypothesis == clip.text for r in rows(streams))
    # deltas come only after the commit, so the registry leaves first partial out
    assert all(r.first_partial_ms is None and r.first_partial_from_t0_ms is None for r in rows(streams))
    assert partials and all(clip.text.startswith(p) for p in partials)
    assert partials[-1] != partials[0]  # cumulative text, a word per delta


async def _partials(ds, clip) -> list[str]:
    """One stream driven directly, to see the PARTIAL events the harness's row leaves out."""
    model = REGISTRY.resolve(REALTIME_STT)
    timeline = Timeline()
    session = await REGISTRY.create(model).connect(timeline)
    try:
        await paced_send(session, audio_sent(ds, clip), clip.sample_rate, 20, timeline)
        await session.end_audio()
        await asyncio.wait_for(session.wait_final(), 5)
    finally:
        await session.aclose()
    return [e.text for e in timeline.of(PARTIAL)]


@pytest.mark.parametrize("scenario", [
    TTSScenario(ttfb_ms=110.0, leading_silence_ms=60.0, api_key=KEY),
    TTSScenario(ttfb_ms=50.0, leading_silence_ms=100.0, gaming_delay_ms=400.0, api_key=KEY),  # silence first, speech late
], ids=["streaming", "gaming"])
def test_tts_ttfa_with_its_components(openai_env, prompts, scenario):
    prompt = prompts.prompts[3]
    truth = scenario.truth(prompt.text)
    with serve("openai", scenario) as url:
        openai_env(url)
        streams = measure_three(TTS, prompts, prompt)
    assert_on_clock(streams, "ttfb_ms", truth["ttfb_ms"])
    assert all(r.leading_silence_ms == pytest.approx(truth["leading_silence_ms"], abs=1.0) for r in rows(streams))
    assert_on_clock(streams, "ttfa_ms", truth["ttfa_ms"], leading_silence_ms=scenario.leading_silence_ms)
    assert all(r.http_version == "HTTP/1.1" and r.connection_reused is True for r in rows(streams))


def test_s2s_v2v_from_the_call_recording(openai_env, clips, tmp_path):
    ds, by_id = clips
    clip = by_id["u040"]
    first = first_append(ds, clip)
    key = hashlib.sha256(first).hexdigest()
    scenario = S2SScenario(response_ms=350.0, leading_silence_ms=60.0, jitter_ms=30.0, speech_end_s=0.2,
                           anchors=((key, clip.speech_start, clip.speech_end),), api_key=KEY)
    truth = scenario.truth(first)["v2v_ms"]
    with serve("openai", scenario) as url:
        openai_env(url)
        streams = measure_three(S2S, ds, clip, recordings_dir=tmp_path)
    # both ends are found in the recording (the caller's last word by the 16 kHz VAD, the reply's
    # onset by onset detection); the tone's sharp onset and the clip's VAD-made anchors need no
    # tolerance beyond the contract's (errors measured here: under 1 ms)
    assert_on_clock(streams, "v2v_ms", truth, clip=clip, leading_silence_ms=scenario.leading_silence_ms)
    assert all(r.audio_duration_s == pytest.approx((60.0 + 600.0) / 1000, abs=0.001) for r in rows(streams))
    assert len(list(tmp_path.rglob("*.wav"))) == 1  # one call recording per clip, overwritten per attempt


def _bundle(fault: str | None, api_key: str = KEY) -> Scenarios:
    return Scenarios(stt=STTScenario(transcript="that works for me", speech_start_s=0.414, speech_end_s=1.298,
                                     final_ms=300.0, partial_every_ms=40.0, api_key=api_key, fault=fault),
                     tts=TTSScenario(api_key=api_key, fault=fault),
                     s2s=S2SScenario(speech_end_s=1.298, api_key=api_key, fault=fault))


@pytest.mark.parametrize("fault", ["unauthorized", "forbidden", "rate_limited", "server_error", "malformed",
                                   "disconnect", "no_final", "inaudible"])
def test_failures_become_rows(openai_env, clips, prompts, fault):
    """One emulator serves every API with the fault; each model that the fault fits gives its row."""
    ds, by_id = clips
    clip = by_id["u040"]
    models = [(BATCH[1], ds, clip), (REALTIME_STT, ds, clip), (TTS, prompts, prompts.prompts[0]), (S2S, ds, clip)]
    if fault == "inaudible":  # only audio can be silent
        models = [m for m in models if m[0] in (TTS, S2S)]
    with serve("openai", _bundle(fault)) as url:
        openai_env(url)
        for model_id, dataset, item in models:
            row = measure(model_id, dataset, item, timeout_s=fault_timeout_s(fault))
            assert_failure_row(row, fault)


def test_a_bad_key_is_refused_everywhere_and_never_shown(openai_env, clips, prompts):
    ds, by_id = clips
    clip = by_id["u040"]
    with serve("openai", _bundle(None, api_key="another-key")) as url:
        openai_env(url)
        for model_id, dataset, item in [(BATCH[0], ds, clip), (REALTIME_STT, ds, clip),
                                        (TTS, prompts, prompts.prompts[0]), (S2S, ds, clip)]:
            row = measure(model_id, dataset, item)
            assert row.status == "auth_error" and "HTTP 401" in row.reason, (model_id, row.reason)
            assert KEY not in repr(row)


# --- OpenAI as it really behaves (issue 14): recoverable errors, unfinished replies, encoded speech ---


async def _raw_transcription(url: str, appends: int, until: str) -> tuple[list[dict], int | None, str | None]:
    """Drive a Realtime transcription session by hand: `appends` appends, each with an event_id
    (`append_<k>`), then a commit; the events received up to `until` (or the close), and the close."""
    events: list[dict] = []
    async with websockets.connect(f"{ws_url(url)}/v1/realtime?intent=transcription",
                                  additional_headers={"Authorization": f"Bearer {KEY}"}) as ws:
        async def receive(kind: str) -> None:
            while not events or events[-1]["type"] != kind:
                events.append(json.loads(await ws.recv()))

        try:
            await receive("session.created")
            await ws.send(json.dumps({"type": "session.update", "session": {"type": "transcription", "audio": {
                "input": {"format": {"type": "audio/pcm", "rate": 24000},
                          "transcription": {"model": "gpt-4o-transcribe"}}}}}))
            await receive("session.updated")
            for k in range(1, appends + 1):
                await ws.send(json.dumps({"event_id": f"append_{k}", "type": "input_audio_buffer.append",
                                          "audio": base64.b64encode(bytes(960)).decode()}))
            await ws.send(json.dumps({"event_id": "commit", "type": "input_audio_buffer.commit"}))
            await receive(until)
        except websockets.ConnectionClosed:
            pass
        return events, ws.close_code, ws.close_reason


def test_the_emulator_errors_mid_session_as_the_api_documents():
    """Recoverable: an `error` naming the fifth append, then the session goes on to its transcript.
    Session expired: the time limit's `error`, then close 1001 with its message."""
    bundle = _bundle(None)
    with serve("openai", OpenAIScenario(bundle, mid_session_error="recoverable")) as url:
        events, _, _ = asyncio.run(_raw_transcription(url, ERROR_ON_APPEND, TRANSCRIPT_DONE))
    errors = [e["error"] for e in events if e["type"] == "error"]
    assert [(e["event_id"], e["type"]) for e in errors] == [(f"append_{ERROR_ON_APPEND}", "invalid_request_error")]
    assert events[-1]["transcript"] == bundle.stt.transcript
    with serve("openai", OpenAIScenario(bundle, mid_session_error="session_expired")) as url:
        events, code, reason = asyncio.run(_raw_transcription(url, ERROR_ON_APPEND, TRANSCRIPT_DONE))
    assert [e["error"]["code"] for e in events if e["type"] == "error"] == ["session_expired"]
    assert (code, reason) == (1001, SESSION_EXPIRED)
    assert TRANSCRIPT_DONE not in [e["type"] for e in events]


def test_a_recoverable_error_mid_session_leaves_the_turn_to_complete(openai_env, clips):
    """Transcription and conversation alike: the session stays open after the error, the turn
    completes, and the row is scored as usual (an adapter that ended the session at any `error`
    event made it a failure)."""
    ds, by_id = clips
    clip = by_id["u040"]
    with serve("openai", OpenAIScenario(_bundle(None), mid_session_error="recoverable")) as url:
        openai_env(url)
        stt, s2s = measure(REALTIME_STT, ds, clip), measure(S2S, ds, clip)
    assert stt.status == s2s.status == "ok", (stt.reason, s2s.reason)
    assert stt.hypothesis == "that works for me" and stt.ttfs_ms is not None
    assert s2s.v2v_ms is not None and s2s.audio_duration_s == pytest.approx((60.0 + 600.0) / 1000, abs=0.001)


def test_an_error_the_session_does_not_survive_fails_the_turn_with_its_reason(openai_env, clips):
    """The session's time limit: the `error`, then the server closes the session. The row is a
    failure with the error's own message, and says the session was closed."""
    ds, by_id = clips
    clip = by_id["u040"]
    with serve("openai", OpenAIScenario(_bundle(None), mid_session_error="session_expired")) as url:
        openai_env(url)
        for model_id in (REALTIME_STT, S2S):
            row = measure(model_id, ds, clip, timeout_s=3)
            assert row.status == "error", (model_id, row.status, row.reason)
            assert "session_expired" in row.reason and SESSION_EXPIRED in row.reason and "code 1001" in row.reason
            assert all(getattr(row, name) is None for name in CLOCK_FIELDS if name != "connect_ms")


@pytest.mark.parametrize("status, why", [("cancelled", "turn_detected"), ("incomplete", "max_output_tokens"),
                                         ("failed", "The server had an error")])
def test_a_reply_that_ends_unfinished_is_a_failure_row(openai_env, clips, status, why):
    """`response.done` with status cancelled / incomplete / failed after half the reply's audio: an
    `error` row with the status and its reason, never a V2V (the speech had begun, so an adapter that
    read only `failed` scored the cut-off replies as successes)."""
    ds, by_id = clips
    clip = by_id["u040"]
    with serve("openai", OpenAIScenario(_bundle(None), response_status=status)) as url:
        openai_env(url)
        row = measure(S2S, ds, clip)
    assert row.status == "error", (row.status, row.reason)
    assert f"response {status}" in row.reason and why in row.reason and KEY not in row.reason
    assert all(getattr(row, name) is None for name in CLOCK_FIELDS if name != "connect_ms")


def test_tts_gzip_encoded_speech_is_decoded_and_timed_at_its_reads(openai_env, prompts):
    """The speech body gzip-encoded (httpx asks for gzip by default): decoded as it arrives, with the
    same TTFB and TTFA as a plain body; a raw read would store the compressed bytes as audio."""
    scenario = TTSScenario(ttfb_ms=110.0, leading_silence_ms=60.0, api_key=KEY)
    prompt = prompts.prompts[3]
    truth = scenario.truth(prompt.text)
    with serve("openai", OpenAIScenario(scenario, speech_encoding="gzip")) as url:
        openai_env(url)
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY}"}) as client:
            probe = client.post("/v1/audio/speech", json={"model": "gpt-4o-mini-tts", "input": "hi", "voice": "marin",
                                                          "response_format": "pcm"})
        assert probe.headers["content-encoding"] == "gzip" and len(probe.content) % 2 == 0
        streams = measure_three(TTS, prompts, prompt)
    assert_on_clock(streams, "ttfb_ms", truth["ttfb_ms"])
    assert all(r.leading_silence_ms == pytest.approx(truth["leading_silence_ms"], abs=1.0) for r in rows(streams))
    assert all(r.audio_duration_s == pytest.approx((60.0 + 600.0) / 1000, abs=0.001) for r in rows(streams))
    assert_on_clock(streams, "ttfa_ms", truth["ttfa_ms"], leading_silence_ms=scenario.leading_silence_ms)
