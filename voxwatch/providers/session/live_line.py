"""The caller's line after the clip: silence, paced in real time, for APIs that find the end of the
caller's turn themselves from the audio they receive (voice activity detection) and take no message
that ends it (Ultravox, Amazon Nova Sonic). A live call's line goes on carrying audio; a client that
stopped sending would leave such a server waiting for the end of a turn it cannot hear."""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable

from voxwatch.foundation.clock import sleep_until

LINE_MS = 20  # one message of silence every 20 ms


async def keep_line_open(send: Callable[[bytes], Awaitable[None]], done: asyncio.Event, rate: int,
                         closed: tuple[type[BaseException], ...]) -> None:
    """Send `rate` Hz int16 silence through `send`, LINE_MS at a time in real time, until `done` is set
    or a send raises one of `closed` (the connection is over; its reader names why)."""
    silence = bytes(rate * LINE_MS // 1000 * 2)
    every, at = LINE_MS * 1_000_000, time.perf_counter_ns()
    while not done.is_set():
        try:
            await send(silence)
        except closed:
            return
        at += every
        await sleep_until(at)
