"""What the WebSocket adapters share around a session: its set-up before t0, and a reader task's end."""

from __future__ import annotations

import asyncio
import json
from typing import Awaitable, Callable, TypeVar

import websockets

from voxwatch.providers.base import ProviderError
from voxwatch.providers.close_codes import closed
from voxwatch.providers.stamped import received

T = TypeVar("T")


async def settle(ws, setup: Awaitable[T]) -> T:
    """Run `setup` on a fresh socket; when it fails, close the socket (a ProviderError) or abort it
    (cancelled: the harness timed the set-up out, and there is no close handshake to wait for)."""
    try:
        return await setup
    except ProviderError:
        await ws.close()
        raise
    except BaseException:
        ws.transport.abort()
        raise


def decode_event(message: str | bytes) -> dict:
    """One server event of an OpenAI-style realtime API (OpenAI, xAI, Qwen, Zhipu): a JSON object
    with a string `type`; anything else raises (ValueError / TypeError), which callers call malformed."""
    data = json.loads(message)
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise TypeError("a server event is a JSON object with a type")
    return data


async def update_session(ws, session: dict, vendor: str, error_of: Callable[[dict], ProviderError]) -> None:
    """The OpenAI-style realtime set-up (OpenAI Realtime, Zhipu GLM-Realtime): wait for
    `session.created`, send `session.update`, wait for `session.updated`; an `error` event refuses it."""
    stream = received(ws)  # keeps the connection's arrival stamps in step with its messages
    try:
        async for message, _ in stream:
            data = decode_event(message)
            kind = data["type"]
            if kind == "error":
                raise error_of(data)
            if kind == "session.created":
                await ws.send(json.dumps({"type": "session.update", "session": session}))
            elif kind == "session.updated":
                return
        raise closed(vendor, ws.close_code, "during set-up")
    except (ValueError, KeyError, TypeError) as exc:  # bad JSON or UTF-8, a missing type, not an object
        raise ProviderError(f"malformed message from {vendor} ({type(exc).__name__})", "malformed") from None
    except websockets.ConnectionClosed as exc:
        raise closed(vendor, exc, "during set-up") from None
    finally:
        await stream.aclose()


class ReaderSession:
    """A session whose one reader task (`_receive`, started here) sets `_done` when it ends, with
    `_error` the failure if any. Subclasses set their own state before calling this __init__."""

    close_wait_s = 1.0

    def __init__(self, ws) -> None:
        self.ws = ws
        self._done = asyncio.Event()
        self._error: ProviderError | None = None
        self._reader = asyncio.create_task(self._receive())

    async def _receive(self) -> None:
        raise NotImplementedError

    async def _wait(self) -> None:
        await self._done.wait()
        if self._error is not None:
            raise self._error

    async def aclose(self) -> None:
        """Close the socket, giving the reader a moment to see the close."""
        await self.ws.close()
        try:
            await asyncio.wait_for(asyncio.shield(self._reader), self.close_wait_s)
        except asyncio.TimeoutError:
            self._reader.cancel()
