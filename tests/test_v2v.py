"""V2V is measured back from the written two-channel recording, with the playout model."""

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from support.late_chunks import chunks_sent, sizes_of
from support.signals import tone
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.metrics.v2v import call_recording, caller_speech_end_s, v2v_from_recording, write_recording
from voxwatch.foundation.events import AUDIO, Event, Timeline
from voxwatch.metrics.vad import speech_anchors
from voxwatch.harness.measure import audio_sent

MS = 1_000_000


def _call(caller: np.ndarray, replies: list[tuple[int, np.ndarray]], reply_rate: int, chunk: int = 320,
          late: tuple[int, int] | None = None) -> Timeline:
    """Caller chunks due every 20 ms from t=1 s (`late`: support.late_chunks); replies as (arrival ns,
    float samples)."""
    tl = Timeline(clock=lambda: 0)
    tl.events.extend(chunks_sent(1000 * MS, sizes_of(caller.size, chunk), late))
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
    result = v2v_from_recording(path, caller_speech_end_s(tl, pcm.tobytes()))
    assert result.caller_speech_end_s == pytest.approx(clip.speech_end, abs=0.002)
    assert result.v2v_ms == pytest.approx(400.0, abs=2.0)  # 300 ms arrival + 100 ms leading silence


def test_late_speech_after_early_silence_counts_in_the_recording(tmp_path: Path, caller):
    clip, pcm = caller
    end_ns = int(1000 * MS + clip.speech_end * 1e9)
    silence, speech = np.zeros(1600), tone(16000, 0.0, 0.4, 0.4)  # 100 ms of silence at once, speech 600 ms later
    tl = _call(pcm / 32768.0, [(end_ns + 50 * MS, silence), (end_ns + 650 * MS, speech)], 16000)
    path = tmp_path / "call.wav"
    write_recording(path, call_recording(tl, pcm.tobytes()))
    assert v2v_from_recording(path, caller_speech_end_s(tl, pcm.tobytes())).v2v_ms == pytest.approx(650.0, abs=2.0)


def test_a_model_that_never_speaks_has_no_v2v(tmp_path: Path, caller):
    clip, pcm = caller
    path = tmp_path / "call.wav"
    tl = _call(pcm / 32768.0, [], 16000)
    write_recording(path, call_recording(tl, pcm.tobytes()))
    result = v2v_from_recording(path, caller_speech_end_s(tl, pcm.tobytes()))
    assert result.v2v_ms is None and result.model_onset_s is None


@pytest.mark.parametrize("late, written_end_s", [
    (62, 1.298),  # chunk 62 (1.24-1.26 s) and 63 late: the last word's chunk 64 on time
    (63, 1.309),  # chunk 63 late, and 64, holding the last word, 11 ms late in the burst after it
])
def test_a_late_caller_chunk_moves_the_last_word_to_its_write_and_never_cuts_it_short(tmp_path: Path, caller, late,
                                                                                    written_end_s):
    """A chunk written 30 ms late leaves a 30 ms gap on channel 0 before the last word's last 30-40 ms,
    too short for an onset, so the VAD run on the recording would end the speech at the gap (20+ ms
    early, V2V that much too long); the caller's last word is the audio as generated's (1.298 s),
    at the write of the chunk that carried it."""
    clip, pcm = caller
    assert clip.speech_end == 1.298
    reply = np.concatenate([np.zeros(2400), tone(24000, 0.0, 0.5, 0.5)])
    end_ns = 1000 * MS + written_end_s * 1e9  # the last word went out then
    tl = _call(pcm / 32768.0, [(int(end_ns + 300 * MS), reply)], 24000, late=(late, 30))
    path = tmp_path / "call.wav"
    recording = call_recording(tl, pcm.tobytes())
    write_recording(path, recording)
    on_the_wire = speech_anchors(np.round(recording[:, 0] * 32768).astype("<i2"))
    assert on_the_wire.speech_end < 1.298 - 0.02  # what channel 0 would have said
    end = caller_speech_end_s(tl, pcm.tobytes())
    assert end == pytest.approx(written_end_s, abs=1e-9)
    result = v2v_from_recording(path, end)
    assert result.caller_speech_end_s == end
    assert result.v2v_ms == pytest.approx(400.0, abs=2.0)  # 300 ms after the last word's write + 100 ms of silence
