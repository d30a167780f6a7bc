"""Server-sent events (the `text/event-stream` format of the WHATWG HTML standard, "Server-sent
events") read off a stamped HTTP response: each event's data with the arrival stamp of the socket
read that completed it. What the data means is the adapter's: a chat completion's chunk, a speech
API's audio event. Shared by every adapter whose vendor streams over SSE."""

from __future__ import annotations

import codecs
from typing import AsyncIterator

import httpx

from voxwatch.providers.session import stamped_http


def split_events(buffer: str) -> tuple[list[str], str]:
    """Complete events' data (one string per event: its `data:` lines joined by newlines; events
    without data are dropped) and what is left of the buffer."""
    buffer = buffer.replace("\r\n", "\n")
    *complete, rest = buffer.split("\n\n")
    out = []
    for event in complete:
        data = [line[5:].lstrip(" ") for line in event.split("\n") if line.startswith("data:")]
        if data:
            out.append("\n".join(data))
    return out, rest


async def received_events(response: httpx.Response) -> AsyncIterator[tuple[str, int]]:
    """Each event's data with the stamp of the read that completed it; a last event the server did not
    end with a blank line comes when the body ends, stamped with the body's last read."""
    buffer, decoder = "", codecs.getincrementaldecoder("utf-8")("replace")  # a character may span two reads
    last = stamped_http.arrived(response)
    async for data, at in stamped_http.received(response):
        last = at
        buffer += decoder.decode(data)
        events, buffer = split_events(buffer)
        for event in events:
            yield event, at
    events, _ = split_events(buffer + decoder.decode(b"", final=True) + "\n\n")
    for event in events:
        yield event, last
