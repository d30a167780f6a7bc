"""session/pcm.py: PCM that arrives in pieces of any size is marked in whole samples, in order, each
piece at its arrival stamp; a stream that ends on half a sample is a malformed row."""

import pytest

from voxwatch.foundation.events import AUDIO, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.session.pcm import PCMMarks


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
