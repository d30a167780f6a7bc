"""Failures an emulator can be told to commit, so each failure kind has a row test.

Handshake faults answer the HTTP request (or WebSocket upgrade) itself; stream faults happen
after the session has begun. Every emulator honours every fault that fits its protocol.
"""

from __future__ import annotations

from http import HTTPStatus

# fault name -> the HTTP answer to the request or upgrade
HANDSHAKE = {
    "unauthorized": (HTTPStatus.UNAUTHORIZED, {}, "invalid credentials\n"),
    "forbidden": (HTTPStatus.FORBIDDEN, {}, "forbidden\n"),
    "rate_limited": (HTTPStatus.TOO_MANY_REQUESTS, {"Retry-After": "7"}, "rate limit exceeded\n"),
    "server_error": (HTTPStatus.SERVICE_UNAVAILABLE, {}, "service unavailable\n"),
}
RETRY_AFTER_S = 7.0
# after the session has begun: a message that is not the protocol's, the connection dropped
# without a close handshake, no final result ever, audio that is all silence
STREAM = ("malformed", "disconnect", "no_final", "inaudible")
FAULTS = (None, *HANDSHAKE, *STREAM)


def check(fault: str | None) -> str | None:
    if fault not in FAULTS:
        raise ValueError(f"unknown emulator fault {fault!r}; known: {', '.join(f for f in FAULTS if f)}")
    return fault


def websocket_refusal(connection, fault: str | None):
    """For `websockets.serve(process_request=...)`: the refusal a handshake fault calls for, else None."""
    if fault not in HANDSHAKE:
        return None
    status, headers, body = HANDSHAKE[fault]
    response = connection.respond(status, body)
    for name, value in headers.items():
        response.headers[name] = value
    return response


def http_refusal(fault: str | None):
    """For an ASGI (Starlette) emulator: the refusal a handshake fault calls for, else None."""
    if fault not in HANDSHAKE:
        return None
    from starlette.responses import PlainTextResponse

    status, headers, body = HANDSHAKE[fault]
    return PlainTextResponse(body, status_code=int(status), headers=headers)


async def drop(ws) -> None:
    """End a websockets-library connection without a close frame (a mid-stream disconnect)."""
    ws.transport.abort()
