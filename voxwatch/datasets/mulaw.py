"""G.711 mu-law files: a dataset's phone condition as it is stored (the codec itself is the
foundation's, voxwatch/foundation/mulaw.py, shared with the phone-network agent transport).
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from voxwatch.foundation.mulaw import RATE, decode, encode, to_wire

__all__ = ["RATE", "decode", "encode", "to_wire", "write_wav", "wav_codes"]


def write_wav(path: Path, codes: np.ndarray, rate: int = RATE) -> None:
    """A mono G.711 mu-law WAV (format tag 7) holding exactly these codes, written by hand: a
    library's own encoder could round differently, and the file is what goes on the wire."""
    data = np.asarray(codes, dtype=np.uint8).tobytes()
    fmt = struct.pack("<HHIIHHH", 7, 1, rate, rate, 1, 8, 0)
    fact = struct.pack("<I", len(data))
    body = (b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"fact" + struct.pack("<I", 4) + fact
            + b"data" + struct.pack("<I", len(data)) + data + (b"\0" if len(data) & 1 else b""))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"RIFF" + struct.pack("<I", len(body)) + body)


def wav_codes(path: Path) -> bytes:
    """The data chunk of a mu-law WAV: the codes as stored."""
    raw = path.read_bytes()
    pos = 12
    while pos + 8 <= len(raw):
        cid, size = struct.unpack("<4sI", raw[pos:pos + 8])
        if cid == b"data":
            return raw[pos + 8:pos + 8 + size]
        pos += 8 + size + (size & 1)
    raise ValueError(f"{path}: no data chunk")
