"""Raw 16-bit PCM as it arrives, for the adapters whose vendors send it in pieces: whole samples
out of chunks that may split one, each piece marked on the Timeline as one AUDIO event.

Vendors cut a stream of little-endian int16 samples wherever their buffers end (an HTTP body read,
a base64 JSON chunk: Rime documents that a chunk may end mid-sample), so the odd byte waits for the
next chunk; a stream that ends on one broke the format (`malformed`). A WAV container where headerless
PCM was asked for is taken apart here too: its header is not audio.
"""

from __future__ import annotations

import struct

from voxwatch.foundation.events import AUDIO, Timeline
from voxwatch.providers.base import ProviderError


class PCMStream:
    """One synthesis's audio at `sample_rate`: `feed(chunk, at)` marks the whole samples it completes
    (arrived at `at`, the read's stamp), `end()` checks that no half sample is left over."""

    def __init__(self, timeline: Timeline, sample_rate: int, vendor: str) -> None:
        self.timeline, self.sample_rate, self.vendor = timeline, sample_rate, vendor
        self.offset = 0  # samples marked so far
        self._left = b""

    def feed(self, data: bytes, at: int | None = None) -> None:
        data = self._left + data
        cut = len(data) - len(data) % 2
        self._left, pcm = data[cut:], data[:cut]
        if pcm:
            self.timeline.mark(AUDIO, at, sample_offset=self.offset, n_samples=cut // 2,
                               sample_rate=self.sample_rate, audio=pcm)
            self.offset += cut // 2

    def end(self) -> None:
        if self._left:
            raise ProviderError(f"malformed audio from {self.vendor}: the pcm stream ended mid-sample", "malformed")


def wav_payload(data: bytes, vendor: str) -> bytes:
    """The samples of a chunk that opens with a RIFF/WAVE header (the chunks after its `data` chunk's
    header), or the chunk itself when it has none; a header that is not 16-bit PCM is `malformed`."""
    if not data.startswith(b"RIFF"):
        return data
    if data[8:12] != b"WAVE":
        raise ProviderError(f"malformed audio from {vendor}: a RIFF header that is not WAVE", "malformed")
    at = 12
    while at + 8 <= len(data):
        name, size = data[at:at + 4], struct.unpack("<I", data[at + 4:at + 8])[0]
        if name == b"fmt " and (data[at + 8:at + 10] != b"\x01\x00" or data[at + 22:at + 24] != b"\x10\x00"):
            raise ProviderError(f"malformed audio from {vendor}: WAV audio that is not 16-bit PCM", "malformed")
        if name == b"data":
            return data[at + 8:]
        at += 8 + size + size % 2
    raise ProviderError(f"malformed audio from {vendor}: a WAV header without its data chunk", "malformed")
