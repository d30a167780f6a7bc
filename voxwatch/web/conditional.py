"""HTTP caching of the public pages (docs/WEB.md "Caching and compression"): Cache-Control, ETag,
Last-Modified, and 304 Not Modified.

A page is rendered once per store version (web/cache.py), so its validators are made once, at that
render: the ETag is a digest of the page's bytes (a store write that changes what the page shows
changes it; one that does not, leaves it), and Last-Modified is when the page was rendered from
the store. Browsers and proxies may keep a public page for CLIENT_MAX_AGE_S and then ask again
with If-None-Match / If-Modified-Since: an unchanged page is a 304 with no body. Anything that is
not such a page (errors, the health check, the rating pages, a recording) is `no-store` unless the
app said otherwise.
"""

from __future__ import annotations

import hashlib
from email.utils import formatdate, parsedate_to_datetime

from starlette.types import Message, Scope, Send

CLIENT_MAX_AGE_S = 60
PUBLIC = f"public, max-age={CLIENT_MAX_AGE_S}".encode()
NO_STORE = b"no-store"
KEPT_ON_304 = (b"cache-control", b"etag", b"last-modified", b"vary", b"content-location", b"expires")


def validators(body: bytes, rendered_at: float) -> list[tuple[bytes, bytes]]:
    """The ETag (weak: the same for the gzip variant), Last-Modified and Cache-Control of a rendered page."""
    digest = hashlib.sha256(body).hexdigest()[:20]
    return [(b"etag", f'W/"{digest}"'.encode()), (b"last-modified", formatdate(rendered_at, usegmt=True).encode()),
            (b"cache-control", PUBLIC)]


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


def _opaque(tag: str) -> str:
    return tag.strip().removeprefix("W/")


def not_modified(scope: Scope, headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether a GET's conditional headers match the page (If-None-Match, weakly compared, wins over
    If-Modified-Since, as RFC 9110 13.2.2 orders them)."""
    sent = dict(headers)
    etag, modified = sent.get(b"etag"), sent.get(b"last-modified")
    wanted = _header(scope, b"if-none-match")
    if wanted is not None:
        if etag is None:
            return False
        return wanted.strip() == "*" or _opaque(etag.decode()) in {_opaque(t) for t in wanted.split(",")}
    since = _header(scope, b"if-modified-since")
    if since is None or modified is None:
        return False
    try:
        return parsedate_to_datetime(modified.decode()) <= parsedate_to_datetime(since)
    except (TypeError, ValueError):  # a date that does not parse is ignored (RFC 9110 13.1.3)
        return False


async def send_not_modified(send: Send, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": 304,
                "headers": [(k, v) for k, v in headers if k in KEPT_ON_304]})
    await send({"type": "http.response.body", "body": b""})


def no_store_unless_set(send: Send) -> Send:
    """`send`, with Cache-Control: no-store added to a response that sets no Cache-Control of its own."""
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", ()))
            if not any(k.lower() == b"cache-control" for k, _ in headers):
                message = {**message, "headers": headers + [(b"cache-control", NO_STORE)]}
        await send(message)
    return sending
