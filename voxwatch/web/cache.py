"""Rendered responses kept per (path, query) and store version: a page is computed once per change of
the store, not once per request.

A GET is answered from the cache when its page was rendered under the store's current version
(web/freshness.py). Otherwise one request renders it, through the admission gate
(web/admission.py), and every request for the same page that arrives meanwhile waits for that one
render instead of starting its own. The windows slide with the clock, so a page older than
`max_age_s` is rendered again even if the store is unchanged: in the background, the old one
served until the new one is there (it is of the same store version, only older). Only 200s are
kept, at most `entries` of them and `max_bytes` in all, the least recently used dropped first. The
bytes kept are the bytes the app sent, so a cached page shows exactly the numbers the app computed
at its render. Each kept page carries its validators from that render (web/conditional.py): a
conditional GET it matches is a 304. A HEAD is answered as its GET, without the body.
"""

from __future__ import annotations

import asyncio
import gzip
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Callable, Hashable

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from voxwatch.web.admission import Admission
from voxwatch.web.conditional import no_store_unless_set, not_modified, send_not_modified, validators
from voxwatch.web.freshness import Freshness
from voxwatch.web.source import log

Key = tuple[str, bytes]
"""A page's path and raw query string."""


COMPRESSIBLE = (b"text/", b"application/json")
MIN_GZIP_BYTES = 500


@dataclass(frozen=True)
class Page:
    """One whole response as the app sent it, and its gzip-encoded variant when it has one."""
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes
    gzipped: tuple[list[tuple[bytes, bytes]], bytes] | None = None  # headers, body

    def compressed(self) -> Page:
        """This page with a gzip variant (text and JSON of 500 bytes or more), both marked Vary: Accept-Encoding."""
        kind = dict(self.headers).get(b"content-type", b"")
        if len(self.body) < MIN_GZIP_BYTES or not kind.startswith(COMPRESSIBLE) or b"content-encoding" in dict(self.headers):
            return self
        body = gzip.compress(self.body, compresslevel=9, mtime=0)  # once per render: the smallest
        plain = [(k, v) for k, v in self.headers if k != b"vary"] + [(b"vary", b"accept-encoding")]
        encoded = [(k, v) for k, v in plain if k != b"content-length"] + [
            (b"content-length", str(len(body)).encode()), (b"content-encoding", b"gzip")]
        return Page(self.status, plain, self.body, (encoded, body))

    @property
    def size(self) -> int:
        return len(self.body) + (len(self.gzipped[1]) if self.gzipped else 0)

    def validated(self, rendered_at: float) -> Page:
        """This page with its ETag, Last-Modified and Cache-Control (those the app set itself kept)."""
        names = {k for k, _ in self.headers}
        return replace(self, headers=self.headers + [h for h in validators(self.body, rendered_at) if h[0] not in names])

    async def send(self, send: Send, gzip_ok: bool = False, head: bool = False) -> None:
        headers, body = self.gzipped if gzip_ok and self.gzipped else (self.headers, self.body)
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if head else body})


def accepts_gzip(scope: Scope) -> bool:
    """Whether the request's Accept-Encoding takes gzip (by name or *, with a q above 0)."""
    for name, value in scope["headers"]:
        if name == b"accept-encoding":
            for item in value.decode("latin-1").lower().split(","):
                coding, *params = (part.strip() for part in item.split(";"))
                q = next((p[2:] for p in params if p.startswith("q=")), "1")
                try:
                    weight = float(q)
                except ValueError:
                    weight = 0.0
                if coding in ("gzip", "*") and weight > 0:
                    return True
    return False


async def capture(app: ASGIApp, scope: Scope, receive: Receive) -> Page:
    """Run `app` on one request and keep what it sends."""
    start: Message = {}
    body: list[bytes] = []

    async def keep(message: Message) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
        elif message["type"] == "http.response.body":
            body.append(message.get("body", b""))

    await app(scope, receive, keep)
    return Page(start["status"], list(start.get("headers", [])), b"".join(body))


@dataclass(frozen=True)
class _Entry:
    version: Hashable
    made: float  # monotonic
    page: Page


class Pages:
    """A bounded LRU of pages, each valid for one store version and at most `max_age_s`."""

    def __init__(self, entries: int, max_bytes: int, max_age_s: float) -> None:
        self.entries, self.max_bytes, self.max_age_s = entries, max_bytes, max_age_s
        self._kept: OrderedDict[Key, _Entry] = OrderedDict()
        self._bytes = 0

    def get(self, key: Key, version: Hashable) -> tuple[Page, bool] | None:
        """The page rendered under this version, and whether it is older than max_age_s."""
        entry = self._kept.get(key)
        if entry is None:
            return None
        if entry.version != version:
            self._drop(key)
            return None
        self._kept.move_to_end(key)
        return entry.page, time.monotonic() - entry.made > self.max_age_s

    def put(self, key: Key, version: Hashable, page: Page, made: float) -> None:
        if key in self._kept:
            self._drop(key)
        if page.size > self.max_bytes // 4:  # one huge page must not push out all the others
            return
        self._kept[key] = _Entry(version, made, page)
        self._bytes += page.size
        while len(self._kept) > self.entries or self._bytes > self.max_bytes:
            self._drop(next(iter(self._kept)))

    def _drop(self, key: Key) -> None:
        self._bytes -= self._kept.pop(key).page.size

    def __len__(self) -> int:
        return len(self._kept)


class CachedPages:
    """ASGI middleware: GETs from the cache, renders through admission, `uncached` paths and paths
    under a `streamed` prefix (files: kept in memory they would only crowd out pages) straight to the app,
    and paths under an `admitted` prefix (per user or a write: the rating pages) to the app through
    admission, streamed and never kept, so a flood of them is turned away as the boards' renders are."""

    def __init__(self, app: ASGIApp, freshness: Freshness, admission: Admission, pages: Pages,
                 turned_away: Callable[[Scope], Response], uncached: tuple[str, ...] = (),
                 streamed: tuple[str, ...] = (), admitted: tuple[str, ...] = ()) -> None:
        self.app, self.freshness, self.admission, self.pages = app, freshness, admission, pages
        self.turned_away, self.uncached, self.streamed, self.admitted = turned_away, uncached, streamed, admitted
        self._renders: dict[tuple[Key, Hashable], asyncio.Future[Page]] = {}
        self._background: set[asyncio.Task] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = no_store_unless_set(send)  # kept pages say public themselves
        if scope["path"].startswith(self.admitted):
            await self._admitted(scope, receive, send)
            return
        if scope["path"] in self.uncached or scope["path"].startswith(self.streamed):
            await self.app(scope, receive, send)
            return
        head = scope["method"] == "HEAD"
        version = await self.freshness.current() if scope["method"] in ("GET", "HEAD") else None
        if version is None:  # not a GET, or the store cannot be read: the app answers (a 503 says why)
            await (await self._render(scope, receive)).send(send)
            return
        if head:
            scope = {**scope, "method": "GET"}
        key: Key = (scope["path"], scope["query_string"])
        found = self.pages.get(key, version)
        if found is None:
            page = await self._shared_render(key, version, scope, receive)
        else:
            page, old = found
            if old and (key, version) not in self._renders:
                self._rerender(key, version, scope)
        if page.status == 200 and not_modified(scope, page.headers):
            await send_not_modified(send, page.gzipped[0] if page.gzipped and accepts_gzip(scope) else page.headers)
            return
        await page.send(send, accepts_gzip(scope), head)

    def _rerender(self, key: Key, version: Hashable, scope: Scope) -> None:
        task = asyncio.create_task(self._shared_render(key, version, dict(scope), _no_body))
        self._background.add(task)  # the loop keeps only a weak reference
        task.add_done_callback(_finished)
        task.add_done_callback(self._background.discard)

    async def _shared_render(self, key: Key, version: Hashable, scope: Scope, receive: Receive) -> Page:
        """One render per page and version at a time; requests arriving meanwhile get its result."""
        running = self._renders.get((key, version))
        if running is not None:
            return await asyncio.shield(running)
        done: asyncio.Future[Page] = asyncio.get_running_loop().create_future()
        self._renders[(key, version)] = done
        try:
            started, rendered_at = time.monotonic(), time.time()
            page = await self._render(scope, receive)
            if page.status == 200:
                page = await asyncio.to_thread(page.validated(rendered_at).compressed)  # once per render, off the loop
                self.pages.put(key, version, page, started)
            done.set_result(page)
            return page
        except asyncio.CancelledError:
            done.cancel()
            raise
        except Exception as exc:
            done.set_exception(exc)
            done.exception()  # retrieved: no "never retrieved" warning when nobody else waited
            raise
        finally:
            del self._renders[(key, version)]

    async def _admitted(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Never kept, but work like a render's, so it takes a render slot: from when its body is in (a
        slow sender holds none) until its response starts (a slow reader of a file holds none either)."""
        receive = await _buffered(receive)
        if not await self.admission.enter():
            await self.turned_away(scope)(scope, receive, send)
            return
        held = True

        def leave() -> None:
            nonlocal held
            if held:
                held = False
                self.admission.leave()

        async def started(message: Message) -> None:
            if message["type"] == "http.response.start":
                leave()
            await send(message)

        try:
            await self.app(scope, receive, started)
        finally:
            leave()

    async def _render(self, scope: Scope, receive: Receive) -> Page:
        async with self.admission.slot() as admitted:
            return await capture(self.app if admitted else self.turned_away(scope), scope, receive)


BUFFERED_BODY = 65_536
"""Bytes of a request body read before admission: more than any form here (the app refuses larger)."""


async def _buffered(receive: Receive) -> Receive:
    """`receive` with the request's body (up to BUFFERED_BODY bytes) already read, replayed first."""
    messages: list[Message] = []
    size = 0
    while size <= BUFFERED_BODY:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request" or not message.get("more_body", False):
            break
        size += len(message.get("body", b""))

    async def replay() -> Message:
        return messages.pop(0) if messages else await receive()
    return replay


async def _no_body() -> Message:
    """What a background render receives: a GET has no body."""
    return {"type": "http.request", "body": b"", "more_body": False}


def _finished(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("rendering a page again failed", exc_info=task.exception())
