"""HTTP exchanges stamped at the socket, for adapters that speak HTTP through httpx.

`StampedTransport` is httpx's own transport over `socket_stream.StampedBackend`. For each
request it keeps when the request's first bytes were written and when the response head was
read, and it gives each body chunk httpx hands over the stamp of the socket read that completed
it: over HTTP/1.1 the latest read on the connection (h11 parses as it reads, one read at a time,
one request at a time), over HTTP/2 the read that completed the chunk's DATA frame. An adapter
reads the response as the vendor documents it and takes the stamps with `sent`, `arrived` and
`received`, as WebSocket adapters take theirs with `stamped.received`.

Encoded bodies: httpx asks for what it can decode (`Accept-Encoding: gzip, deflate` by default; br
and zstd only where their decoders are installed) and `received` reads the body content-decoded.
A coding's decoder can only hand over what the compressed bytes read so far hold, so each decoded
chunk carries the read that completed it (a gzip header read on its own yields nothing, and stamps
nothing). httpx passes a coding it has no decoder for through undecoded, as if it were the
content; `received` refuses a body in a coding the request did not accept instead
(`httpx.DecodingError`, as for a corrupt compressed stream).
"""

from __future__ import annotations

import time
from typing import AsyncIterator

import httpcore
import httpx

from voxwatch.foundation.events import REQUEST_SENT, RESPONSE, Timeline
from voxwatch.providers.session.socket_stream import Clock, Exchange, StampedBackend, StampedStream, writing

EXCHANGE = "voxwatch.exchange"  # the response extension that holds the stamps
LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0)  # httpx's defaults


class StampedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport (HTTP/1.1, and HTTP/2 where the server offers it), its connections stamped on `clock`."""

    def __init__(self, clock: Clock = time.perf_counter_ns, http1: bool = True, http2: bool = True) -> None:
        super().__init__(http1=http1, http2=http2)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(), max_connections=LIMITS.max_connections,
            max_keepalive_connections=LIMITS.max_keepalive_connections, keepalive_expiry=LIMITS.keepalive_expiry,
            http1=http1, http2=http2, network_backend=StampedBackend(clock))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        exchange = Exchange()
        token = writing.set(exchange)  # the request's writes happen in this task, inside the call
        try:
            response = await super().handle_async_request(request)
        finally:
            writing.reset(token)
        connection = response.extensions.get("network_stream")
        if isinstance(connection, StampedStream):
            stream_id = response.extensions.get("stream_id")
            if stream_id is not None and connection.frames is not None:
                exchange.sent_ns = connection.sent_frames.head(stream_id) or exchange.sent_ns
                exchange.arrived_ns = connection.frames.head(stream_id)
            else:
                exchange.arrived_ns = connection.read_ns  # h11 returned the head right after the read that completed it
            response.stream = _StampedBody(response.stream, connection, stream_id, exchange)
            response.extensions[EXCHANGE] = exchange
        return response


class _StampedBody(httpx.AsyncByteStream):
    """The response body as httpcore yields it, noting each chunk's read stamp as it passes."""

    def __init__(self, inner: httpx.AsyncByteStream, connection: StampedStream, stream_id: int | None,
                 exchange: Exchange) -> None:
        self._inner, self._connection, self._stream_id, self._exchange = inner, connection, stream_id, exchange

    async def __aiter__(self) -> AsyncIterator[bytes]:
        connection, stream_id = self._connection, self._stream_id
        frames = connection.frames if stream_id is not None else None
        async for chunk in self._inner:
            if chunk:
                at = frames.next_data(stream_id) if frames is not None else None
                self._exchange.body_ns = at if at is not None else connection.read_ns
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            if self._stream_id is not None and self._connection.frames is not None:
                self._connection.frames.forget(self._stream_id)
                self._connection.sent_frames.forget(self._stream_id)


def _exchange(response: httpx.Response) -> Exchange:
    found = response.extensions.get(EXCHANGE)
    if found is None:
        raise RuntimeError("this response has no socket stamps: it did not come through a StampedTransport "
                           "(a proxy from the environment routes around it)")
    return found


def sent(response: httpx.Response) -> int:
    """When the request's first bytes were handed to the socket (stamped just before the write)."""
    return _exchange(response).sent_ns


def arrived(response: httpx.Response) -> int:
    """When the last bytes of the response head were read off the socket."""
    return _exchange(response).arrived_ns


def unaccepted_codings(response: httpx.Response) -> list[str]:
    """The response's content-codings that its request's Accept-Encoding did not offer."""
    offered = {part.split(";")[0].strip().lower() for part in response.request.headers.get("accept-encoding", "").split(",")}
    codings = (value.strip().lower() for value in response.headers.get_list("content-encoding", split_commas=True))
    return [c for c in codings if c and c != "identity" and c not in offered]


async def received(response: httpx.Response) -> AsyncIterator[tuple[bytes, int]]:
    """Each body chunk (content-decoded) with the time the socket read that completed it happened;
    httpx.DecodingError for a body in a coding the request did not accept, or a corrupt one."""
    exchange = _exchange(response)
    unaccepted = unaccepted_codings(response)
    if unaccepted:
        raise httpx.DecodingError(f"the body is {', '.join(unaccepted)}-encoded, which the request did not accept",
                                  request=response.request)
    async for chunk in response.aiter_bytes():
        yield chunk, exchange.body_ns


def mark_exchange(timeline: Timeline, response: httpx.Response, cold: bool) -> None:
    """REQUEST_SENT and RESPONSE at the socket stamps of this exchange, with how it travelled: every
    HTTP adapter's first two events, marked once here."""
    timeline.mark(REQUEST_SENT, at_ns=sent(response))
    timeline.mark(RESPONSE, at_ns=arrived(response), http_version=response.http_version, connection_reused=not cold)
