"""V2V is measured back from the written two-channel recording, with the playout model."""

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from support.signals import tone
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.metrics.v2v import call_recording, v2v_from_recording, write_recording
from voxwatch.foundation.events import AUDIO, CHUNK_SENT, Event, Timeline
from voxwatch.harness.measure import audio_sent

MS = 1_000_000


def _call(caller: np.ndarray, replies: list[tuple[int, np.ndarray]], reply_rate: int, chunk: int = 320) -> Timeline:
    """Caller chunks written every 20 ms from t=1 s; replies as (arrival ns, float samples)."""
    tl = Timeline(clock=lambda: 0)
    for k in range(0, caller.size, chunk):
        tl.events.append(Event(CHUNK_SENT, 1000 * MS + (k // chunk) * 20 * MS, n_samples=min(chunk, caller.size - k)))
    offset = 0
    for arrival, samples in replies:
        pcm = np.round(samples * 32767).astype("<i2").tobytes()
        tl.events.append(Event(AUDIO, arrival, sample_offset=offset, n_samples=samples.size, sample_rate=reply_rate,
                               audio=pcm))
        offset += samples.size
    return tl


@pytest.fixture(scope="module")
def caller():
    ds = Catalog([bundled_root()]).load("stt-starter-clean")
    clip = next(c for c in ds.clips if c.id == "u040")
    pcm = np.frombuffer(audio_sent(ds, clip), dtype="<i2")
    return clip, pcm


def test_v2v_is_the_models_onset_after_the_callers_last_word(tmp_path: Path, caller):
    clip, pcm = caller
    caller_end_ns = 1000 * MS + clip.speech_end * 1e9
    # the model's audio (24 kHz): 100 ms of silence, then speech; it arrives 300 ms after the last word
    reply = np.concatenate([np.zeros(2400), tone(24000, 0.0, 0.5, 0.5)])
    tl = _call(pcm / 32768.0, [(int(caller_end_ns + 300 * MS), reply)], 24000)
    path = tmp_path / "call.wav"
    write_recording(path, call_recording(tl, pcm.tobytes()))
    assert sf.info(str(path)).channels == 2
    result = v2v_from_recording(path)
    assert result.caller_speech_end_s == pytest.approx(clip.speech_end, abs=0.002)
    assert result.v2v_ms == pytest.approx(400.0, abs=2.0)  # 300 ms arrival + 100 ms leading silence


def test_late_speech_after_early_silence_counts_in_the_recording(tmp_path: Path, caller):
    clip, pcm = caller
    end_ns = int(1000 * MS + clip.speech_end * 1e9)
    silence, speech = np.zeros(1600), tone(16000, 0.0, 0.4, 0.4)  # 100 ms of silence at once, speech 600 ms later
    tl = _call(pcm / 32768.0, [(end_ns + 50 * MS, silence), (end_ns + 650 * MS, speech)], 16000)
    path = tmp_path / "call.wav"
    write_recording(path, call_recording(tl, pcm.tobytes()))
    assert v2v_from_recording(path).v2v_ms == pytest.approx(650.0, abs=2.0)


def test_a_model_that_never_speaks_has_no_v2v(tmp_path: Path, caller):
    clip, pcm = caller
    path = tmp_path / "call.wav"
    write_recording(path, call_recording(_call(pcm / 32768.0, [], 16000), pcm.tobytes()))
    result = v2v_from_recording(path)
    assert result.v2v_ms is None and result.model_onset_s is None
