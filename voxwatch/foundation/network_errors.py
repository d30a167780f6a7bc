"""Why a connection failed, in a few words: the root of an HTTP client's exception chain (urllib3,
niquests, httpx wrap the socket's error two or three deep, in messages a person should not read)."""

from __future__ import annotations

import socket
import ssl

_KINDS: tuple[tuple[type[BaseException], str], ...] = (
    (ConnectionRefusedError, "connection refused"),
    (socket.gaierror, "the host name does not resolve"),
    (TimeoutError, "timed out"),
    (ssl.SSLCertVerificationError, "its TLS certificate is not trusted"),
    (ssl.SSLError, "the TLS handshake failed"),
    (ConnectionResetError, "the connection was reset"),
    (ConnectionAbortedError, "the connection was aborted"),
    (OSError, ""),  # any other socket error: its strerror
)
_NAMED = {"NameResolutionError": "the host name does not resolve", "ConnectTimeoutError": "timed out",
          "ReadTimeoutError": "timed out", "ConnectTimeout": "timed out", "ReadTimeout": "timed out"}


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception, its causes and contexts, and the errors urllib3 keeps in `.reason`, outermost first."""
    seen: list[BaseException] = []
    todo: list[BaseException] = [exc]
    while todo:
        e = todo.pop(0)
        if any(e is s for s in seen):
            continue
        seen.append(e)
        todo += [x for x in (getattr(e, "reason", None), e.__cause__, e.__context__, *e.args)
                 if isinstance(x, BaseException)]
    return seen


def reason(exc: BaseException) -> str:
    """A short, URL-free reason: the innermost error a person can act on."""
    chain = _chain(exc)
    for e in reversed(chain):
        if type(e).__name__ in _NAMED:
            return _NAMED[type(e).__name__]
    for kind, words in _KINDS:
        for e in reversed(chain):
            if isinstance(e, kind) and type(e).__module__ in ("builtins", "socket", "ssl"):
                return words or (e.strerror or type(e).__name__).lower()
    return type(chain[-1]).__name__
