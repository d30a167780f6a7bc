"""Failures an emulator can be told to commit, so each failure kind has a row test.

Handshake faults answer the HTTP request (or WebSocket upgrade) itself; stream faults happen
after the session has begun. Every emulator honours every fault that fits its protocol:
`close:<code>` (WebSocket protocols) closes the session with that code where `disconnect` drops
it, so each close code's reading (voxwatch/providers/session/close_codes.py) has a row test too.
"""

from __future__ import annotations

from http import HTTPStatus

# fault name -> the HTTP answer to the request or upgrade
HANDSHAKE = {
    "unauthorized": (HTTPStatus.UNAUTHORIZED, {}, "invalid credentials\n"),
    "forbidden": (HTTPStatus.FORBIDDEN, {}, "forbidden\n"),
    "rate_limited": (HTTPStatus.TOO_MANY_REQUESTS, {"Retry-After": "7"}, "rate limit exceeded\n"),
    "server_error": (HTTPStatus.SERVICE_UNAVAILABLE, {}, "service unavailable\n"),
    "bad_request": (HTTPStatus.BAD_REQUEST, {}, "bad request\n"),
}
RETRY_AFTER_S = 7.0
# after the session has begun: a message that is not the protocol's, the connection dropped
# without a close handshake, no final result ever, audio that is all silence
STREAM = ("malformed", "disconnect", "no_final", "inaudible")
FAULTS = (None, *HANDSHAKE, *STREAM)
CLOSE = "close:"  # "close:<code>": where `disconnect` drops the session, a close frame with this code
UNSENDABLE = (1004, 1005, 1006, 1015)  # reserved: RFC 6455 forbids them in a close frame


def close(code: int) -> str:
    """The fault that closes the session with `code`."""
    return check(f"{CLOSE}{code}")


def close_code_of(fault: str | None) -> int | None:
    """The code a `close:<code>` fault closes with; None for any other fault."""
    if not (fault or "").startswith(CLOSE):
        return None
    try:
        return int(fault[len(CLOSE):])
    except ValueError:
        return None


def check(fault: str | None) -> str | None:
    code = close_code_of(fault)
    if code is not None and 1000 <= code < 5000 and code not in UNSENDABLE:
        return fault
    if fault not in FAULTS:
        raise ValueError(f"unknown emulator fault {fault!r}; known: {', '.join(f for f in FAULTS if f)}, "
                         f"{CLOSE}<code> (1000-4999 but {', '.join(map(str, UNSENDABLE))})")
    return fault


def breaks(fault: str | None) -> bool:
    """The fault ends the session where the emulator would otherwise go on: a drop or a close."""
    return fault == "disconnect" or close_code_of(fault) is not None


async def break_off(ws, fault: str) -> None:
    """Commit a breaking fault on a websockets or Starlette WebSocket: drop it, or close it with the code."""
    code = close_code_of(fault)
    if code is None:
        await drop(ws)
    else:
        await ws.close(code=code, reason=f"emulated close {code}")


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
    """End a connection without a close frame (a mid-stream disconnect): a websockets-library one, or
    a Starlette WebSocket under uvicorn (through the transport its receive channel belongs to)."""
    transport = ws.transport if hasattr(ws, "transport") else ws._receive.__self__.transport
    transport.abort()
