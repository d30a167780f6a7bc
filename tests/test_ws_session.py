"""The shared reader envelope (providers/session/ws_session.py): a TTS request is written, timed and
read the same for every vendor (a send on a closed session: tests/test_reader_session.py)."""

import asyncio

import pytest
import websockets
from websockets.frames import Close

from voxwatch.foundation.events import CLOSED, REQUEST_SENT, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.session.ws_session import Reader


class _Socket:
    """Records each write with how many REQUEST_SENT marks preceded it; `closed` refuses writes."""

    def __init__(self, timeline: Timeline, closed: bool = False) -> None:
        self.timeline, self.closed, self.writes = timeline, closed, []

    async def send(self, message: str) -> None:
        if self.closed:
            raise websockets.ConnectionClosedError(Close(1011, "internal"), None)
        self.writes.append((message, len(self.timeline.of(REQUEST_SENT))))


class _Request(Reader):
    vendor = "Acme"

    def __init__(self, ws, timeline: Timeline) -> None:
        self.ws, self.timeline, self.read = ws, timeline, False

    async def _read(self) -> None:
        self.read = True


@pytest.mark.parametrize("sent, marked_before", [(None, [0, 0]), (1, [0, 1])])
def test_a_request_is_marked_sent_after_the_messages_the_vendor_starts_at(sent, marked_before):
    timeline = Timeline()
    session = _Request(_Socket(timeline), timeline)
    asyncio.run(session._request_reply(["a", "b"], sent=sent))
    assert [n for _, n in session.ws.writes] == marked_before and len(timeline.of(REQUEST_SENT)) == 1
    assert session.read and timeline.of(CLOSED) and timeline.of(CLOSED)[0].t_ns >= timeline.first(REQUEST_SENT).t_ns


def test_a_request_on_a_closed_socket_fails_with_its_close():
    timeline = Timeline()
    session = _Request(_Socket(timeline, closed=True), timeline)
    with pytest.raises(ProviderError) as failed:
        asyncio.run(session._request_reply(["a"]))
    assert failed.value.status == "server_error" and "1011" in str(failed.value) and not session.read
