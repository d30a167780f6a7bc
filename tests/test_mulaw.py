"""G.711 mu-law (voxwatch.datasets.mulaw): the reference encoder, bit for bit, and its round trip."""

import sys
import warnings

import numpy as np
import pytest

from voxwatch.datasets import mulaw

EVERY_INT16 = np.arange(-32768, 32768, dtype=np.int16)


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="audioop was removed in Python 3.13")
def test_encoder_and_decoder_equal_audioop_on_every_input():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import audioop
    expected = np.frombuffer(audioop.lin2ulaw(EVERY_INT16.tobytes(), 2), dtype=np.uint8)
    assert np.array_equal(mulaw.encode(EVERY_INT16), expected)
    codes = np.arange(256, dtype=np.uint8)
    assert np.array_equal(mulaw.decode(codes), np.frombuffer(audioop.ulaw2lin(codes.tobytes(), 2), dtype=np.int16))
    assert mulaw.to_wire(EVERY_INT16.tobytes()) == expected.tobytes()


def test_known_codes_and_the_round_trip():
    assert mulaw.encode(np.array([0, 32767, -32768, -1], dtype=np.int16)).tolist() == [0xFF, 0x80, 0x00, 0x7E]
    codes = mulaw.encode(EVERY_INT16)
    assert 0x7F not in set(codes.tolist())  # "negative zero" is never made, so decoding then encoding is exact
    assert np.array_equal(mulaw.encode(mulaw.decode(codes)), codes)
    err = np.abs(mulaw.decode(codes).astype(np.int32) - EVERY_INT16.astype(np.int32))
    assert err[np.abs(EVERY_INT16.astype(np.int32)) < 32000].max() <= 1024  # the widest segment's half step
    assert err[np.abs(EVERY_INT16.astype(np.int32)) < 100].max() <= 8  # the finest step (14-bit input)
