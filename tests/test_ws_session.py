"""The WebSocket adapters' shared reply helpers (providers/session/ws_session.py): a base64 PCM chunk
marked as audio, and a TTS request written, timed and read the same for every vendor."""

import asyncio
import base64

import pytest
import websockets
from websockets.frames import Close

from voxwatch.foundation.events import AUDIO, CLOSED, REQUEST_SENT, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.session.ws_session import Reader, mark_audio


def test_a_base64_chunk_is_marked_from_its_offset_and_a_broken_one_raises():
    timeline = Timeline()
    pcm = b"\x01\x00\x02\x00\x03\x00"
    after = mark_audio(timeline, 123, base64.b64encode(pcm).decode(), 10, 24000)
    (event,) = timeline.of(AUDIO)
    assert after == 13 and event.t_ns == 123 and event.sample_offset == 10 and event.n_samples == 3
    assert event.sample_rate == 24000 and event.audio == pcm
    with pytest.raises(ValueError):  # half a sample
        mark_audio(timeline, 124, base64.b64encode(b"\x01\x00\x02").decode(), 13, 24000)
    with pytest.raises(ValueError):  # not base64
        mark_audio(timeline, 125, "not base64!", 13, 24000)
    assert len(timeline.of(AUDIO)) == 1


class _Socket:
    """Records each write with how many REQUEST_SENT marks preceded it; `closed` refuses writes."""

    def __init__(self, timeline: Timeline, closed: bool = False) -> None:
        self.timeline, self.closed, self.writes = timeline, closed, []

    async def send(self, message: str) -> None:
        if self.closed:
            raise websockets.ConnectionClosedError(Close(1011, "internal"), None)
        self.writes.append((message, len(self.timeline.of(REQUEST_SENT))))


class _Session(Reader):
    vendor = "Acme"

    def __init__(self, ws, timeline: Timeline) -> None:
        self.ws, self.timeline, self.read = ws, timeline, False

    async def _read(self) -> None:
        self.read = True


@pytest.mark.parametrize("sent, marked_before", [(None, [0, 0]), (1, [0, 1])])
def test_a_request_is_marked_sent_after_the_messages_the_vendor_starts_at(sent, marked_before):
    timeline = Timeline()
    session = _Session(_Socket(timeline), timeline)
    asyncio.run(session._request_reply(["a", "b"], sent=sent))
    assert [n for _, n in session.ws.writes] == marked_before and len(timeline.of(REQUEST_SENT)) == 1
    assert session.read and timeline.of(CLOSED) and timeline.of(CLOSED)[0].t_ns >= timeline.first(REQUEST_SENT).t_ns


def test_a_request_on_a_closed_socket_fails_with_its_close():
    timeline = Timeline()
    session = _Session(_Socket(timeline, closed=True), timeline)
    with pytest.raises(ProviderError) as failed:
        asyncio.run(session._request_reply(["a"]))
    assert failed.value.status == "server_error" and "1011" in str(failed.value) and not session.read
