"""ws_session.ReaderSession's shared helpers: `_send` (a send on a socket the vendor closed fails with
the vendor's own error when the reader read one first, else with the close, read by close_codes),
`_messages` (the vendor's JSON text messages; one that is not JSON is malformed) and `_close_socket`
(a failed reader's socket is aborted, not left to a stalled close handshake)."""

import asyncio
import json

import pytest
import websockets

from voxwatch.foundation.events import Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.session.endpoints import open_websocket
from voxwatch.providers.session.ws_session import ReaderSession


class _Session(ReaderSession):
    vendor = "Speechmatics"  # 4013 is its job_error: a server error (close_codes.VENDOR)

    def __init__(self, ws) -> None:
        self.timeline = Timeline()
        super().__init__(ws)

    async def _read(self) -> None:
        async for data, _ in self._messages():
            if "error" in data:
                raise ProviderError(f"Speechmatics error: {data['error']}", "rate_limited")


async def _closed_after(first: str | None, code: int) -> ProviderError:
    """A server that sends `first` (if any), then closes with `code`; the failure of the next send."""
    async def handle(ws) -> None:
        if first is not None:
            await ws.send(first)
        await ws.close(code, "emulated")

    async with websockets.serve(handle, "127.0.0.1", 0) as server:
        ws = await open_websocket(f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}", {}, "Speechmatics")
        session = _Session(ws)
        await session._done.wait()
        with pytest.raises(ProviderError) as failed:
            await session._send(b"\x00\x00")
        await session.aclose()
        return failed.value


@pytest.mark.parametrize("code, status", [(1000, "disconnected"), (4013, "server_error")])
def test_a_send_after_the_vendors_close_fails_by_the_close_code(code, status):
    """1000 ends the reader cleanly (no failure of its own): the send reads the close itself."""
    failure = asyncio.run(_closed_after(None, code))
    assert failure.status == status and f"code {code}" in str(failure)


def test_a_send_after_the_vendors_error_message_fails_with_that_error():
    failure = asyncio.run(_closed_after(json.dumps({"error": "quota"}), 1000))
    assert failure.status == "rate_limited" and "quota" in str(failure)


def test_a_failed_readers_socket_is_aborted_not_left_to_a_stalled_close_handshake():
    """The reader failed on a malformed message and reads no more; the vendor goes on sending, which
    fills the socket's queue and stalls a close handshake for its whole timeout. _close_socket aborts."""
    async def flood(ws) -> None:
        await ws.send("not json")
        for _ in range(200):
            await ws.send(json.dumps({"partial": "x" * 1000}))
        await ws.wait_closed()

    async def run() -> float:
        async with websockets.serve(flood, "127.0.0.1", 0) as server:
            ws = await open_websocket(f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}", {}, "Speechmatics")
            session = _Session(ws)
            await session._done.wait()
            assert session._error is not None and session._error.status == "malformed"
            await asyncio.sleep(0.2)  # the flood arrives and fills the queue
            started = asyncio.get_running_loop().time()
            await asyncio.wait_for(session._close_socket(), 5)
            return asyncio.get_running_loop().time() - started

    assert asyncio.run(run()) < 1.0
