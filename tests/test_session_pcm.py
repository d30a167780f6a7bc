"""session/pcm.py: PCM that arrives in pieces of any size is marked in whole samples, in order, each
piece at its arrival stamp; a stream that ends on half a sample is a malformed row; a WAV header is
taken off, not counted as audio."""

import base64
import struct

import pytest

from voxwatch.foundation.events import AUDIO, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.session.pcm import PCMMarks, mark_base64, wav_payload


def test_pieces_that_split_samples_are_marked_in_whole_samples():
    timeline = Timeline()
    marks = PCMMarks(timeline, 24000, "Vendor")
    for at, piece in enumerate([b"\x01", b"\x02\x03", b"", b"\x04\x05\x06"], start=100):
        marks.add(piece, at)
    marks.end()
    events = timeline.of(AUDIO)
    assert [(e.t_ns, e.sample_offset, e.n_samples) for e in events] == [(101, 0, 1), (103, 1, 2)]
    assert b"".join(e.audio for e in events) == b"\x01\x02\x03\x04\x05\x06"
    assert all(e.sample_rate == 24000 for e in events) and marks.offset == 3


def test_half_a_sample_at_the_end_is_malformed():
    marks = PCMMarks(Timeline(), 16000, "Vendor")
    marks.add(b"\x00\x01\x02")
    with pytest.raises(ProviderError) as failed:
        marks.end()
    assert failed.value.status == "malformed" and "Vendor" in str(failed.value)


def _wav_header(n_bytes: int, fmt: int = 1, bits: int = 16) -> bytes:
    body = struct.pack("<HHIIHH", fmt, 1, 24000, 24000 * bits // 8, bits // 8, bits)
    return (b"RIFF" + struct.pack("<I", 36 + n_bytes) + b"WAVE" + b"fmt " + struct.pack("<I", 16) + body
            + b"LIST" + struct.pack("<I", 3) + b"abc\x00" + b"data" + struct.pack("<I", n_bytes))


def test_a_wav_header_is_not_audio():
    pcm = struct.pack("<3h", 5, 6, 7)
    assert wav_payload(_wav_header(len(pcm)) + pcm, "V") == pcm
    assert wav_payload(pcm, "V") == pcm  # no header: the chunk as it is
    for bad in (_wav_header(6, fmt=3), _wav_header(6, bits=8), b"RIFF\x00\x00\x00\x00WAVEfmt "):
        with pytest.raises(ProviderError) as failed:
            wav_payload(bad + pcm, "V")
        assert failed.value.status == "malformed"


def test_a_base64_chunk_is_marked_from_its_offset_and_a_broken_one_raises():
    timeline = Timeline()
    pcm = b"\x01\x00\x02\x00\x03\x00"
    after = mark_base64(timeline, 123, base64.b64encode(pcm).decode(), 10, 24000)
    (event,) = timeline.of(AUDIO)
    assert after == 13 and event.t_ns == 123 and event.sample_offset == 10 and event.n_samples == 3
    assert event.sample_rate == 24000 and event.audio == pcm
    with pytest.raises(ValueError):  # half a sample
        mark_base64(timeline, 124, base64.b64encode(b"\x01\x00\x02").decode(), 13, 24000)
    with pytest.raises(ValueError):  # not base64
        mark_base64(timeline, 125, "not base64!", 13, 24000)
    assert len(timeline.of(AUDIO)) == 1
