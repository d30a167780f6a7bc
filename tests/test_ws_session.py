"""The shared reader envelope's send: a session the server has closed fails with what the vendor
said before closing (the reader's failure), else with the close itself, read by close_codes."""

import asyncio
import json

import pytest
import websockets

from voxwatch.foundation.events import Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.session.endpoints import open_websocket
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import ReaderSession


class _Session(ReaderSession):
    vendor = "Example"

    def __init__(self, ws) -> None:
        self.timeline = Timeline()
        super().__init__(ws)

    async def _read(self) -> None:
        async for message, _ in received(self.ws):
            data = json.loads(message)
            if "error" in data:
                raise ProviderError(f"Example error: {data['error']}", "rate_limited")


async def _send_after_close(said: str | None, code: int) -> ProviderError:
    async def handle(ws) -> None:
        if said is not None:
            await ws.send(json.dumps({"error": said}))
        await ws.close(code, "closing")

    async with websockets.serve(handle, "127.0.0.1", 0) as listening:
        ws = await open_websocket(f"ws://127.0.0.1:{listening.sockets[0].getsockname()[1]}", {}, "Example")
        session = _Session(ws)
        await session._done.wait()
        with pytest.raises(ProviderError) as failed:
            await session._send(b"\x00\x00")
        await ws.close()
        return failed.value


def test_a_send_after_the_vendor_said_why_fails_with_what_it_said():
    error = asyncio.run(_send_after_close("too many sessions", 1011))
    assert error.status == "rate_limited" and "too many sessions" in str(error)


def test_a_send_after_a_clean_close_fails_with_the_close_by_its_code():
    """The reader ended cleanly (no failure of its own): the send's failure is the close, 1000 a drop."""
    error = asyncio.run(_send_after_close(None, 1000))
    assert error.status == "disconnected" and "code 1000" in str(error)
