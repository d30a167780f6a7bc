"""What the speech-to-speech sessions share: one task reads the socket and marks the reply, and the
harness waits on it.

A subclass's `_receive` reads the vendor's messages (stamped at arrival, `stamped.received`), marks
AUDIO and CLOSED, and before it returns sets `_error` for a failed turn and `_done`.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable

from .base import ProviderError
from .events import Timeline


async def set_up(ws, steps: Awaitable[None]) -> None:
    """Run a session's set-up (`steps`) on its fresh socket; a failed set-up closes the socket, a
    cancelled one (the harness timed the set-up out) aborts it: no close handshake to wait for."""
    try:
        await steps
    except ProviderError:
        await ws.close()
        raise
    except BaseException:
        ws.transport.abort()
        raise


class ReplySession:
    def __init__(self, ws, timeline: Timeline) -> None:
        self.ws, self.timeline = ws, timeline
        self._done = asyncio.Event()
        self._error: ProviderError | None = None
        self._reader = asyncio.create_task(self._receive())

    async def _receive(self) -> None:
        raise NotImplementedError

    async def wait_response(self) -> None:
        """Return once the reply is complete; raise the turn's failure."""
        await self._done.wait()
        if self._error is not None:
            raise self._error

    async def aclose(self) -> None:
        self._reader.cancel()
        await self.ws.close()
