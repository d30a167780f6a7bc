"""Cross-origin reads of the public API: any site's script may GET /api/v1/* (Access-Control-Allow-Origin: *).

Only the read-only API: no credentials (a wildcard origin never carries cookies or auth), no other
method, and nothing outside /api/v1 (the pages, and the rating pages that take a rater's answers by
POST, send no CORS header at all). A preflight for a GET or HEAD of the API is answered here with 204.
Operator data under /api/v1 (`private`: the raw ratings' export, behind the operator's token) is not
public: it gets no CORS header, so no other site's script may read it, nor is its preflight answered.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

PREFIX = "/api/v1/"
METHODS = b"GET, HEAD, OPTIONS"
ALLOWED = [(b"access-control-allow-origin", b"*"), (b"access-control-expose-headers", b"ETag, Last-Modified")]
PREFLIGHT = ALLOWED + [(b"access-control-allow-methods", METHODS),
                       (b"access-control-allow-headers", b"If-None-Match, If-Modified-Since"),
                       (b"access-control-max-age", b"86400")]


class PublicAPI:
    """ASGI middleware: the CORS headers on GET and HEAD responses under PREFIX, and their preflights."""

    def __init__(self, app: ASGIApp, private: tuple[str, ...] = ()) -> None:
        self.app, self.private = app, private

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PREFIX) or scope["path"].startswith(self.private):
            await self.app(scope, receive, send)
            return
        asked = dict(scope["headers"]).get(b"access-control-request-method", b"").upper()
        if scope["method"] == "OPTIONS" and asked in (b"GET", b"HEAD"):
            await send({"type": "http.response.start", "status": 204, "headers": PREFLIGHT})
            await send({"type": "http.response.body", "body": b""})
            return
        if scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return

        async def shared(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": list(message.get("headers", ())) + ALLOWED}
            await send(message)

        await self.app(scope, receive, shared)
