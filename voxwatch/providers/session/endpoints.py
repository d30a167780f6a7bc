"""Where and how a cloud adapter connects: the vendor's URL (or an override such as a loopback
emulator), its key, a warmed HTTP client, and one translation of a refused request or handshake.

`VOXWATCH_<VENDOR>_BASE_URL` points a vendor at another server without touching adapter code
(`http://127.0.0.1:PORT` serves both the vendor's HTTP and WebSocket endpoints); rows measured
against a loopback address are labelled `emulator` and never reach a leaderboard.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import time
from email.utils import parsedate_to_datetime
from typing import Callable, Iterator, Mapping
from urllib.parse import urlsplit

import httpx
import websockets

from voxwatch.foundation.server_url import server_url_problem
from voxwatch.providers.base import ProviderError
from voxwatch.providers.keys import Secret, api_key, vendor_variable
from voxwatch.foundation.events import Timeline
from voxwatch.providers.session.stamped import StampedConnection, stamped_connection
from voxwatch.providers.session.stamped_http import StampedTransport, mark_exchange

HTTP_TIMEOUT_S = 60.0


def base_url(vendor: str, default: str) -> str:
    """VOXWATCH_<VENDOR>_BASE_URL, else `default`; an override is held to a registry file's base_url rule
    (the configuration refuses it at start; this is for a process that never read the configuration)."""
    variable = vendor_variable(vendor, "BASE_URL")
    override = os.environ.get(variable, "").strip().rstrip("/")
    problem = server_url_problem(override) if override else None
    if problem:
        raise ProviderError(f"{variable} {problem}", "error")
    return override or default


def ws_url(url: str) -> str:
    """The WebSocket form of a base URL (https -> wss, http -> ws)."""
    scheme, rest = url.split("://", 1)
    return {"https": "wss", "http": "ws"}.get(scheme, scheme) + "://" + rest


def http_url(url: str) -> str:
    """The HTTP form of a base URL (wss -> https, ws -> http)."""
    scheme, rest = url.split("://", 1)
    return {"wss": "https", "ws": "http"}.get(scheme, scheme) + "://" + rest


def require_key(vendor: str) -> Secret:
    key = api_key(vendor)
    if key is None:
        raise ProviderError("no API key", "auth_error")
    return key


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """Retry-After as seconds (RFC 9110: delay-seconds or an HTTP date); None when absent or unreadable."""
    value = (headers.get("retry-after") or headers.get("Retry-After") or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


HTTP_STATUSES = ("auth_error", "rate_limited", "server_error", "error")


def http_status(status: int) -> str:
    """The row status of a refused HTTP request or WebSocket handshake, for every adapter (METHOD:
    401/403 a refused key, 429 a rate limit, 5xx the server's error, any other refusal an error)."""
    if status in (401, 403):
        return "auth_error"
    if status == 429:
        return "rate_limited"
    return "server_error" if status >= 500 else "error"


def http_failure(status: int, headers: Mapping[str, str], vendor: str) -> ProviderError:
    """A refused HTTP request or WebSocket handshake, by kind; never includes the request (or its key)."""
    kind = http_status(status)
    if kind == "auth_error":
        return ProviderError(f"{vendor} refused the key: HTTP {status}", kind)
    if kind == "rate_limited":
        wait = retry_after_s(headers)
        hint = f"; Retry-After {wait:g} s" if wait is not None else ""
        return ProviderError(f"{vendor} rate limit: HTTP {status}{hint}", kind, wait)
    if kind == "server_error":
        return ProviderError(f"{vendor} server error: HTTP {status}", kind)
    return ProviderError(f"{vendor} refused the request: HTTP {status}", kind)


@contextlib.contextmanager
def http_errors(vendor: str, what: str = "body") -> Iterator[None]:
    """httpx's failures of an exchange under way, by kind: a dropped connection, no connection, a
    body that cannot be decoded (`what` names it in the message)."""
    try:
        yield
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
        raise ProviderError(f"{vendor} dropped the connection mid-stream ({type(exc).__name__})",
                            "disconnected") from None
    except httpx.ConnectError as exc:
        raise ProviderError(f"cannot connect to {vendor}: {type(exc).__name__}", "disconnected") from None
    except httpx.DecodingError as exc:
        raise ProviderError(f"malformed {what} from {vendor}: {exc}", "malformed") from None


async def open_websocket(url: str, headers: dict[str, str], vendor: str, subprotocols: list[str] | None = None,
                         clock: Callable[[], int] = time.perf_counter_ns,
                         max_size: int | None = None, open_timeout_s: float = 10.0) -> StampedConnection:
    """A WebSocket with the vendor's auth headers whose messages carry arrival stamps on `clock`
    (read them with `stamped.received`); a refused handshake, or none within `open_timeout_s`, becomes a
    ProviderError. `max_size`: the largest message read (a bigger one closes the socket with 1009), None
    for no bound (a vendor's)."""
    try:
        return await websockets.connect(ws_url(url), max_size=max_size, compression=None, additional_headers=headers,
                                        open_timeout=open_timeout_s,
                                        subprotocols=subprotocols, create_connection=stamped_connection(clock))
    except websockets.InvalidStatus as exc:
        raise http_failure(exc.response.status_code, exc.response.headers, vendor) from None
    except TimeoutError:  # the handshake hung (TCP accepted, no answer)
        raise ProviderError(f"cannot connect to {vendor}: no handshake within {open_timeout_s:g} s",
                            "disconnected") from None
    except (OSError, websockets.InvalidHandshake) as exc:
        raise ProviderError(f"cannot connect to {vendor}: {type(exc).__name__}", "disconnected") from None


class WarmClient:
    """An httpx client with HTTP/2 where the server offers it, warmed before t0, its exchanges
    stamped at the socket (`stamped_http`: read the stamps with `sent`, `arrived`, `received`).

    `warm()` opens the connection (any response will do); each timed request then reports, through
    httpcore's trace hook, whether it had to open a new connection: a latency timed over a cold
    connection includes TCP and TLS set-up, so the harness keeps it null with the reason.
    """

    def __init__(self, base: str, headers: dict[str, str], vendor: str,
                 clock: Callable[[], int] = time.perf_counter_ns) -> None:
        self.base, self.vendor = http_url(base), vendor
        self.client = httpx.AsyncClient(base_url=self.base, headers=headers, timeout=HTTP_TIMEOUT_S,
                                        transport=StampedTransport(clock))

    async def warm(self, path: str = "/") -> None:
        try:
            await self.client.request("HEAD", path)
        except httpx.HTTPError as exc:
            raise ProviderError(f"cannot connect to {self.vendor}: {type(exc).__name__}", "disconnected") from None

    def stream(self, method: str, path: str, cold: list[bool], **kwargs):
        """`client.stream(...)` whose trace sets cold[0] when the request opened a new connection."""

        async def trace(name: str, info: dict) -> None:
            if name.startswith("connection.connect_tcp"):
                cold[0] = True

        return self.client.stream(method, path, extensions={"trace": trace}, **kwargs)

    async def post_form(self, path: str, files: dict, data: dict[str, str], timeline: Timeline) -> bytes:
        """A multipart form POST (an audio file and its fields), encoded before the clock so that it goes
        out in one piece, sent and read through `posted`. The response body."""
        form = self.client.build_request("POST", path, files=files, data=data)
        async with posted(self, path, timeline, self.vendor, "response", content=form.read(),
                          headers={"content-type": form.headers["content-type"]}) as response:
            return await response.aread()

    async def aclose(self) -> None:
        await self.client.aclose()


@contextlib.asynccontextmanager
async def posted(client: WarmClient, path: str, timeline, vendor: str, what: str = "body", **kwargs):
    """POST `path` on a warmed client and yield the response, its body still to be read as a stream:
    REQUEST_SENT and RESPONSE marked at their socket stamps (stamped_http.mark_exchange) and any status
    but 200 raised as the failure it is (http_failure), the body read first. httpx's failures of the
    exchange are raised by kind (http_errors; `what` names the body in a malformed one)."""
    cold = [False]
    with http_errors(vendor, what):
        async with client.stream("POST", path, cold, **kwargs) as response:
            mark_exchange(timeline, response, cold[0])
            if response.status_code != 200:
                await response.aread()
                raise http_failure(response.status_code, response.headers, vendor)
            yield response


class WarmClients:
    """One warmed WarmClient per adapter and event loop (an httpx async client is bound to its loop).

    An adapter holds one of these, not the client itself: the copies `on_wire` and `in_language`
    make of an adapter for a dataset share it, so every item reuses one warm connection."""

    def __init__(self, url: str, name: str, headers: Callable[[], dict[str, str]]) -> None:
        self.url, self.name, self.headers = url, name, headers  # headers: read when a client is made (the key)
        self._client: WarmClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def get(self) -> WarmClient:
        """The client, warmed now (reusing its open connection, or opening one before any clock)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client, self._loop = WarmClient(self.url, self.headers(), self.name), loop
        await self._client.warm()
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def close(self) -> None:
        """For a runner's synchronous clean-up: close the client on its loop if that loop still runs."""
        if self._client is not None and self._loop is not None and self._loop.is_running():
            self._loop.create_task(self.aclose())


def is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
