"""Audio that arrives as 16-bit little-endian PCM in pieces of any size (WebSocket frames, HTTP body
reads, decoded base64 or hex fields), marked on a Timeline as it comes: one AUDIO event per piece of
whole samples, with its sample offset and the arrival stamp of the read that carried it. A sample
split across two pieces waits for the next one; a stream that ends on half a sample broke its
format, which `end` says (a `malformed` row). No vendor's protocol lives here: the adapter decides
which bytes are audio, this only counts them."""

from __future__ import annotations

from voxwatch.foundation.events import AUDIO, Timeline
from voxwatch.providers.base import ProviderError


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
            self.timeline.mark(AUDIO, at, sample_offset=self.offset, n_samples=cut // 2,
                               sample_rate=self.sample_rate, audio=pcm)
            self.offset += cut // 2

    def end(self) -> None:
        """The stream is over: a byte still waiting for its pair is a broken stream."""
        if self._left:
            raise ProviderError(f"malformed audio from {self.vendor} (the pcm ended mid-sample)", "malformed")
