"""session/pcm.py: whole samples out of chunks that split them, and a WAV header taken off."""

import struct

import pytest

from voxwatch.foundation.events import AUDIO, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.session.pcm import PCMStream, wav_payload


def _wav_header(n_bytes: int, fmt: int = 1, bits: int = 16) -> bytes:
    body = struct.pack("<HHIIHH", fmt, 1, 24000, 24000 * bits // 8, bits // 8, bits)
    return (b"RIFF" + struct.pack("<I", 36 + n_bytes) + b"WAVE" + b"fmt " + struct.pack("<I", 16) + body
            + b"LIST" + struct.pack("<I", 3) + b"abc\x00" + b"data" + struct.pack("<I", n_bytes))


def test_a_sample_split_across_chunks_is_marked_once_whole():
    timeline = Timeline()
    stream = PCMStream(timeline, 24000, "V")
    samples = struct.pack("<4h", 1, -2, 300, -400)
    for piece, at in ((samples[:1], 10), (samples[1:5], 20), (samples[5:], 30)):
        stream.feed(piece, at)
    stream.end()
    audio = [e for e in timeline.events if e.kind == AUDIO]
    assert [e.t_ns for e in audio] == [20, 30]  # the lone byte completed nothing at 10
    assert [(e.sample_offset, e.n_samples) for e in audio] == [(0, 2), (2, 2)]
    assert b"".join(e.audio for e in audio) == samples
    assert all(e.sample_rate == 24000 for e in audio)


def test_a_stream_that_ends_mid_sample_is_malformed():
    stream = PCMStream(Timeline(), 24000, "V")
    stream.feed(b"\x01\x00\x02", 1)
    with pytest.raises(ProviderError) as failed:
        stream.end()
    assert failed.value.status == "malformed"


def test_a_wav_header_is_not_audio():
    pcm = struct.pack("<3h", 5, 6, 7)
    assert wav_payload(_wav_header(len(pcm)) + pcm, "V") == pcm
    assert wav_payload(pcm, "V") == pcm  # no header: the chunk as it is
    for bad in (_wav_header(6, fmt=3), _wav_header(6, bits=8), b"RIFF\x00\x00\x00\x00WAVEfmt "):
        with pytest.raises(ProviderError) as failed:
            wav_payload(bad + pcm, "V")
        assert failed.value.status == "malformed"
