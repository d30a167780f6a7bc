"""A TTS session fed streamed text as an agent feeds it (METHOD "TTS: streamed text and cancel"):
the vendor's text messages written on a schedule while the reply is read, and the vendor's cancel
written once the reply is audible. What the adapters share; each says only its vendor's messages."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Callable, Sequence

from voxwatch.foundation.clock import sleep_until
from voxwatch.foundation.events import CANCEL_SENT, REQUEST_SENT, TEXT_SENT, Timeline

Audible = Callable[[], bool]
"""Asked after each audio chunk is marked: has the reply become audible (TTFA's onset detector, the harness's)?"""


class TextFeed:
    """The writer of one reply's text pieces, and its cancel once `audible()` says so."""

    def __init__(self, ws, timeline: Timeline, audible: Audible, cancel: str) -> None:
        self.ws, self.timeline, self.audible, self._cancel = ws, timeline, audible, cancel
        self.cancelled = False
        self._writer: asyncio.Task | None = None

    def start(self, messages: Sequence[str], offsets_ms: Sequence[float], then: Sequence[str] = ()) -> None:
        """Write `messages` in the background, each `offsets_ms` after the first's write (TEXT_SENT after
        each write, REQUEST_SENT at the first: TTFA's own clock starts there), then `then` at once."""
        self._writer = asyncio.create_task(self._write(list(messages), list(offsets_ms), list(then)))

    async def _write(self, messages: list[str], offsets_ms: list[float], then: list[str]) -> None:
        first: int | None = None
        for message, offset in zip(messages, offsets_ms):
            if first is not None:
                await sleep_until(first + int(offset * 1e6), self.timeline.clock)
            await self.ws.send(message)
            written = self.timeline.mark(TEXT_SENT)
            if first is None:
                first = written.t_ns
                self.timeline.mark(REQUEST_SENT, first)
        for message in then:
            await self.ws.send(message)

    async def heard_chunk(self) -> bool:
        """After an audio chunk: once audible, stop the writer and write the cancel (CANCEL_SENT). True
        when the cancel was written now."""
        if self.cancelled or not self.audible():
            return False
        self.cancelled = True
        await self._stop_writer()
        await self.ws.send(self._cancel)
        self.timeline.mark(CANCEL_SENT)
        return True

    async def _stop_writer(self) -> None:
        if self._writer is not None and not self._writer.done():
            self._writer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._writer

    async def finish(self) -> None:
        """The reply is read: the writer is done (a failed write raises here) or stopped."""
        if self._writer is not None:
            if self._writer.done():
                await self._writer
            else:
                await self._stop_writer()
