"""Gzip for the responses the page cache does not keep (the rating pages, the ratings export, the
health check, errors): the kept pages carry their own gzip variant, made once per render
(web/cache.py), which this passes through untouched since it already has a Content-Encoding.

Starlette's GZipMiddleware, with the cache's reading of Accept-Encoding (a `gzip;q=0` refuses gzip)
and the cache's threshold; audio and other compressed media are never gzipped (its default list).
"""

from __future__ import annotations

from starlette.middleware.gzip import GZipMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from voxwatch.web.cache import MIN_GZIP_BYTES, accepts_gzip


class Compressed(GZipMiddleware):
    """GZipMiddleware that leaves a response alone unless the request takes gzip."""

    def __init__(self, app: ASGIApp) -> None:
        super().__init__(app, minimum_size=MIN_GZIP_BYTES)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not accepts_gzip(scope):
            await self.app(scope, receive, send)
            return
        await super().__call__(scope, receive, send)
