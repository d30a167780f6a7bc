"""A WAV container read as it arrives (an HTTP body streamed in pieces): the header's chunks first, then
the samples of its `data` chunk, handed over in whole 16-bit samples as they come.

A streamed WAV is written before its length is known, so the RIFF and `data` sizes may be placeholders
(0, or 0xFFFFFFFF); the samples run to the end of the body, and the format (`fmt `: PCM, mono, 16-bit,
its sample rate) is the header's, whatever rate was asked for.
"""

from __future__ import annotations

import struct

PCM = 1  # the fmt chunk's format tag of integer PCM


class WavStream:
    def __init__(self) -> None:
        self._pending = b""
        self.sample_rate: int | None = None  # from the fmt chunk
        self._in_data = False

    def feed(self, data: bytes) -> bytes:
        """The whole 16-bit samples (little-endian bytes) this piece completes; b"" while the header is
        still arriving. Raises ValueError for a container that is not mono 16-bit PCM WAV."""
        self._pending += data
        if not self._in_data:
            self._header()
            if not self._in_data:
                return b""
        cut = len(self._pending) - len(self._pending) % 2
        samples, self._pending = self._pending[:cut], self._pending[cut:]
        return samples

    def _header(self) -> None:
        buf = self._pending
        if len(buf) < 12:
            return
        if buf[:4] != b"RIFF" or buf[8:12] != b"WAVE":
            raise ValueError("not a RIFF/WAVE container")
        at = 12
        while len(buf) >= at + 8:
            kind, size = buf[at:at + 4], struct.unpack_from("<I", buf, at + 4)[0]
            if kind == b"data":
                if self.sample_rate is None:
                    raise ValueError("the data chunk comes before the fmt chunk")
                self._pending, self._in_data = buf[at + 8:], True
                return
            if len(buf) < at + 8 + size:
                return  # the chunk is still arriving
            if kind == b"fmt ":
                tag, channels, rate, _, _, bits = struct.unpack_from("<HHIIHH", buf, at + 8)
                if tag != PCM or channels != 1 or bits != 16:
                    raise ValueError(f"not mono 16-bit PCM (format {tag}, {channels} channels, {bits} bits)")
                self.sample_rate = rate
            at += 8 + size + size % 2  # chunks are padded to an even length

    def finish(self) -> None:
        """The body has ended: ValueError if it ended inside the header or mid-sample."""
        if not self._in_data:
            raise ValueError("the body ended before the WAV header did")
        if self._pending:
            raise ValueError("the body ended mid-sample")
