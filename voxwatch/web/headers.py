"""Security headers on every response, error pages and cached pages included.

The pages are server-rendered HTML with same-origin stylesheets, an SVG icon and inline SVG charts (SVG
presentation attributes, no style attributes) and a conversation's recording from the server's
own /recording/ (and the rating pages' audio from /rate/): no script, no inline style, no image,
font or frame from anywhere. So the policy allows the own stylesheet and media, and forms posting
to the server itself (the rating form), and nothing else; no page may be framed, and no address
(a rater's link holds their token) leaks to another site in a Referer (same-origin: a browser then
sends the rating form's real Origin, which same_site.py checks, rather than `null`).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

POLICY = ("default-src 'none'; style-src 'self'; img-src 'self'; media-src 'self'; base-uri 'none'; form-action 'self'; "
          "frame-ancestors 'none'")
HEADERS = [(b"content-security-policy", POLICY.encode()), (b"x-content-type-options", b"nosniff"),
           (b"x-frame-options", b"DENY"), (b"referrer-policy", b"same-origin")]
_NAMES = {name for name, _ in HEADERS}


class SecurityHeaders:
    """ASGI middleware: sets HEADERS on each response, replacing any the app set itself."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", ()) if k.lower() not in _NAMES]
                message = {**message, "headers": kept + HEADERS}
            await send(message)

        await self.app(scope, receive, secured)
