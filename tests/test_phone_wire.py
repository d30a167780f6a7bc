"""The phone condition on the wire, per vendor: each adapter whose protocol takes 8 kHz G.711
mu-law sends stt-starter-phone-mulaw's clips as stored, declared in the vendor's own parameters;
its emulator checks what arrived byte for byte; the clocks still run from the VAD anchors. An
adapter whose protocol does not take it gets an `excluded` row with the reason."""

import asyncio
import math

import pytest
from support.contract import KEY, REGISTRY, assert_on_clock, measure_three, serve

from voxwatch.datasets import mulaw
from voxwatch.providers.stt.assemblyai import MIN_CHUNK_MS
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.providers.emulators import server
from voxwatch.providers.emulators.ledger import Ledger, seen
from voxwatch.providers.emulators.scenario import STTScenario
from voxwatch.providers.keys import Secret
from voxwatch.providers.keys import key_variable, vendor_variable
from voxwatch.harness.measure import TRIM_AFTER_SPEECH_S, MeasureContext, measure_item

pytestmark = pytest.mark.realtime

# vendor -> (model, the emulator's record of one stream, what that record must declare)
WIRED = {
    "deepgram": ("deepgram/nova-3", "listen", {"encoding": "mulaw", "sample_rate": 8000}),
    "assemblyai": ("assemblyai/universal-streaming-english", "stream", {"encoding": "pcm_mulaw", "sample_rate": 8000}),
    "speechmatics": ("speechmatics/enhanced-en", "stream", {"encoding": "mulaw", "sample_rate": 8000}),
    "elevenlabs": ("elevenlabs/scribe_v2_realtime", "stream", {"audio_format": "ulaw_8000", "sample_rate": 8000}),
    "openai": ("openai/gpt-4o-transcribe:realtime", "realtime", {"format": {"type": "audio/pcmu"}}),
    "soniox": ("soniox/stt-rt-v6", "stream", {"encoding": "mulaw", "sample_rate": 8000}),
    "gladia": ("gladia/solaria-1", "stream", {"encoding": "wav/ulaw", "sample_rate": 8000, "bit_depth": 8}),
    "smallest": ("smallest/pulse", "stream", {"encoding": "mulaw", "sample_rate": 8000}),
    "cartesia": ("cartesia/ink-2", "stream", {"encoding": "pcm_mulaw", "sample_rate": 8000}),
    "google": ("google/chirp_3", "stream", {"encoding": "mulaw", "sample_rate": 8000}),
}
PADDED = {"assemblyai"}  # sends 50 ms frames: the last is padded with mu-law silence (0xFF)


@pytest.fixture(scope="module")
def phone():
    ds = Catalog([bundled_root()]).load("stt-starter-phone-mulaw")
    return ds, next(c for c in ds.clips if c.id == "u039")  # the shortest clip over a second: every stream is paced in real time


def _scenario(clip) -> STTScenario:
    return STTScenario(transcript=clip.text, speech_start_s=clip.speech_start, speech_end_s=clip.speech_end,
                       first_partial_ms=180.0, final_ms=240.0, api_key=KEY)


def _point(monkeypatch, vendor: str, url: str) -> None:
    monkeypatch.setenv(vendor_variable(vendor, "BASE_URL"), url)
    monkeypatch.setenv(key_variable(vendor), KEY)


def _measure(model_id: str, dataset, clip):
    model = REGISTRY.resolve(model_id)
    ctx = MeasureContext(run_id="r", seed=1, region="test", timeout_s=10, secrets=(Secret(KEY),), emulator=True)
    return asyncio.run(measure_item(model, REGISTRY.create(model), dataset, clip, ctx))


@pytest.mark.parametrize("vendor", sorted(WIRED))
def test_the_stored_mulaw_arrives_byte_for_byte_with_the_documented_parameters(monkeypatch, phone, vendor):
    ds, clip = phone
    model_id, what, declared = WIRED[vendor]
    ledger = Ledger()
    with server.serve(vendor, _scenario(clip), ledger=ledger) as url:
        _point(monkeypatch, vendor, url)
        row = _measure(model_id, ds, clip)
        records = seen(ledger.drain(), what)
    assert row.status == "ok", row.reason
    assert row.condition == "phone-mulaw" and row.dataset == "stt-starter-phone-mulaw"
    assert len(records) == 1
    got = records[0]
    assert {k: got[k] for k in declared} == declared
    stored = mulaw.wav_codes(ds.folder / clip.path)
    sent = stored[: int(round((clip.speech_end + TRIM_AFTER_SPEECH_S) * 8000))]
    received = bytes.fromhex(got["audio"])
    if vendor in PADDED:
        received, padding = received[:len(sent)], received[len(sent):]
        assert len(padding) < 400 and set(padding) <= {0xFF}
    assert len(sent) > 8000 and received == sent


@pytest.mark.parametrize("vendor", sorted(WIRED))
def test_the_clocks_run_from_the_anchors_on_the_phone_line(monkeypatch, phone, vendor):
    ds, clip = phone
    with serve(vendor, _scenario(clip)) as url:
        _point(monkeypatch, vendor, url)
        streams = measure_three(WIRED[vendor][0], ds, clip)
    if REGISTRY.resolve(WIRED[vendor][0]).excluded("first_partial_ms") is None:
        assert_on_clock(streams, "first_partial_ms", 180.0 + WIRED_LAG_MS.get(vendor, 0.0), clip=clip)
    else:  # a service that transcribes only once the turn is committed (the registry says why)
        assert all(s.row.first_partial_ms is None for s in streams)
    assert_on_clock(streams, "ttfs_ms", 240.0 + WIRED_LAG_MS.get(vendor, 0.0), clip=clip)
    assert all(s.row.hypothesis == clip.text for s in streams)


WIRED_LAG_MS = {"assemblyai": (math.ceil(MIN_CHUNK_MS / 20) - 1) * 20.0}
"""A vendor whose adapter batches the harness's chunks: the lag of its first frame (as in its contract test)."""


def test_a_protocol_that_does_not_take_mulaw_gets_an_excluded_row_with_the_reason(phone):
    ds, clip = phone
    row = _measure("pocketsphinx/en-us@5.1.1", ds, clip)
    assert row.status == "excluded"
    assert "does not take 8 kHz mulaw audio" in row.reason and "stt-starter-phone-mulaw" in row.reason
    assert row.ttfs_ms is None and row.condition == "phone-mulaw"
