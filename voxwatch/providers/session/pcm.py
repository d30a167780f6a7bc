"""Audio that arrives as 16-bit little-endian PCM in pieces of any size (WebSocket frames, HTTP body
reads, decoded base64 or hex fields), marked on a Timeline as it comes: one AUDIO event per piece of
whole samples, with its sample offset and the arrival stamp of the read that carried it. Vendors cut
the stream wherever their buffers end (Rime documents that a chunk may end mid-sample), so a sample
split across two pieces waits for the next one; a stream that ends on half a sample broke its
format, which `end` says (a `malformed` row). A WAV container where headerless PCM was asked for is
taken apart here too (`wav_payload`): its header is not audio. No vendor's protocol lives here: the
adapter decides which bytes are audio, this only counts them."""

from __future__ import annotations

import base64
import struct

from voxwatch.foundation.events import AUDIO, Timeline
from voxwatch.providers.base import ProviderError


def mark_pcm(timeline: Timeline, at: int | None, pcm: bytes, offset: int, sample_rate: int) -> int:
    """Mark whole samples `pcm` as one AUDIO event arrived `at`, from sample `offset`; the offset after it."""
    timeline.mark(AUDIO, at, sample_offset=offset, n_samples=len(pcm) // 2, sample_rate=sample_rate, audio=pcm)
    return offset + len(pcm) // 2


def mark_base64(timeline: Timeline, at: int, encoded: str, offset: int, sample_rate: int) -> int:
    """Mark one base64 chunk of PCM (the audio of a JSON protocol whose every chunk holds whole samples)
    as AUDIO at its arrival `at`, from sample `offset`; the offset after it. Bad base64, or a chunk that
    ends mid-sample, raises ValueError, which a reader calls malformed."""
    pcm = base64.b64decode(encoded, validate=True)
    if len(pcm) % 2:
        raise ValueError("an audio chunk ended mid-sample")
    return mark_pcm(timeline, at, pcm, offset, sample_rate)


class PCMMarks:
    """The AUDIO events of one synthesis at `sample_rate`, from `vendor` (named in a failure)."""

    def __init__(self, timeline: Timeline, sample_rate: int, vendor: str) -> None:
        self.timeline, self.sample_rate, self.vendor = timeline, sample_rate, vendor
        self.offset = 0  # samples marked so far
        self._left = b""  # the first byte of a sample whose second has not come yet

    def add(self, data: bytes, at=None) -> None:
        """Mark the whole samples of `data` (after any byte left over from the last piece) as arrived
        `at` (a socket stamp; now when None)."""
        data = self._left + data
        cut = len(data) - len(data) % 2
        self._left, pcm = data[cut:], data[:cut]
        if pcm:
            self.offset = mark_pcm(self.timeline, at, pcm, self.offset, self.sample_rate)

    def end(self) -> None:
        """The stream is over: a byte still waiting for its pair is a broken stream."""
        if self._left:
            raise ProviderError(f"malformed audio from {self.vendor} (the pcm ended mid-sample)", "malformed")


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
