"""Which socket read completed each HTTP/2 frame, per stream.

Over HTTP/2 one connection carries many responses, and httpcore queues each stream's events
until that stream's task asks for them; a task can wait there behind another that is blocked
reading the socket, so the latest read when a chunk is handed over may not be the read that
brought it. Splitting the bytes as they are read into frames (hyperframe, h2's own frame layer)
gives each stream's response head and body chunks the read that completed them.
"""

from __future__ import annotations

import collections

from hyperframe.frame import ContinuationFrame, DataFrame, Frame, HeadersFrame

HEADER = 9  # every frame starts with a 9-byte header (RFC 9113, 4.1)


class FrameStamps:
    """Fed the bytes of one HTTP/2 connection as read (with each read's stamp); keeps per stream the
    stamp of its response head and of every non-empty DATA frame, in order."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._heads: dict[int, int] = {}
        self._data: dict[int, collections.deque[int]] = {}

    def feed(self, data: bytes, at_ns: int) -> None:
        """Bytes read off the socket at `at_ns`: every frame they complete was completed by this read."""
        buf = self._buffer
        buf += data
        start = 0
        while len(buf) - start >= HEADER:
            frame, length = Frame.parse_frame_header(memoryview(buf)[start:start + HEADER])
            end = start + HEADER + length
            if len(buf) < end:
                break
            if isinstance(frame, DataFrame):
                frame.parse_body(memoryview(buf)[start + HEADER:end])  # strips the padding
                if frame.data:
                    self._data.setdefault(frame.stream_id, collections.deque()).append(at_ns)
            elif isinstance(frame, (HeadersFrame, ContinuationFrame)) and "END_HEADERS" in frame.flags:
                if frame.stream_id not in self._data:  # a head after the body is trailers
                    self._heads[frame.stream_id] = at_ns  # the last head before the body: after any 1xx
            start = end
        del buf[:start]

    def head(self, stream_id: int) -> int | None:
        """When the stream's response head was complete."""
        return self._heads.get(stream_id)

    def next_data(self, stream_id: int) -> int | None:
        """When the stream's next non-empty DATA frame (in order) was complete."""
        queue = self._data.get(stream_id)
        return queue.popleft() if queue else None

    def forget(self, stream_id: int) -> None:
        self._heads.pop(stream_id, None)
        self._data.pop(stream_id, None)
