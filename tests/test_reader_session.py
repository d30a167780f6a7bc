"""ws_session.ReaderSession's shared helpers: `_send` and `_send_event` (a send on a socket the vendor
closed fails with the vendor's own error when the reader read one first, else with the close, read by
close_codes, never with the library's exception),
`_messages` (the vendor's JSON text messages; one that is not JSON is malformed), `_close_socket`
(a failed reader's socket is aborted, not left to a stalled close handshake) and `_end_and_close` (the
vendor's end-of-stream message, then its own close awaited briefly)."""

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


async def _closed_after(first: str | None, code: int, send=lambda session: session._send(b"\x00\x00")) -> ProviderError:
    """A server that sends `first` (if any), then closes with `code`; the failure of the next `send`."""
    async def handle(ws) -> None:
        if first is not None:
            await ws.send(first)
        await ws.close(code, "emulated")

    async with websockets.serve(handle, "127.0.0.1", 0) as server:
        ws = await open_websocket(f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}", {}, "Speechmatics")
        session = _Session(ws)
        await session._done.wait()
        with pytest.raises(ProviderError) as failed:
            await send(session)
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


def test_a_client_event_after_the_vendors_error_message_fails_with_that_error_too():
    failure = asyncio.run(_closed_after(json.dumps({"error": "slow down"}), 1011, lambda s: s._send_event({"type": "more"})))
    assert failure.status == "rate_limited" and "slow down" in str(failure)


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


async def _ended(server_closes: bool, reader_done: bool, wait_s: float) -> tuple[list, int | None, float]:
    """A server that records what it receives and, on the text "end", closes (or, not closing, waits);
    `_end_and_close` with that end message: (what the server received, the session's close code, seconds)."""
    got: list = []

    async def handle(ws) -> None:
        async for message in ws:
            got.append(message)
            if message == "end" and server_closes:
                await ws.close(1000)
                return

    async with websockets.serve(handle, "127.0.0.1", 0) as server:
        ws = await open_websocket(f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}", {}, "Speechmatics")
        session = _Session(ws)
        if reader_done:
            session._done.set()
        started = asyncio.get_running_loop().time()
        await session._end_and_close(lambda: session._send("end"), wait_s=wait_s)
        elapsed = asyncio.get_running_loop().time() - started
        assert session._reader.done() or session._reader.cancelled()
        return got, ws.close_code, elapsed


def test_end_and_close_sends_the_end_and_waits_for_the_vendors_close():
    got, code, elapsed = asyncio.run(_ended(server_closes=True, reader_done=False, wait_s=5.0))
    assert got == ["end"] and code == 1000 and elapsed < 5.0  # the vendor's close, not the wait's timeout


def test_end_and_close_closes_after_the_wait_when_the_vendor_does_not():
    got, code, elapsed = asyncio.run(_ended(server_closes=False, reader_done=False, wait_s=0.3))
    assert got == ["end"] and code == 1000 and elapsed >= 0.3  # waited wait_s, then closed the socket itself


def test_end_and_close_sends_no_end_once_the_reader_has_ended():
    got, _, _ = asyncio.run(_ended(server_closes=False, reader_done=True, wait_s=0.3))
    assert got == []
