"""The rules for the addresses voxwatch sends requests to, wherever they are set.

A vendor server's: a registry file's `base_url` and `VOXWATCH_<VENDOR>_BASE_URL` (and the judge's)
are checked alike. Such an address is shown in listings and stored with rows, so it holds no
credentials (a key comes from the environment only, as VOXWATCH_<VENDOR>_API_KEY) and no query.
A webhook's URL is a credential as a whole (its path or query is the token): it need only be an
http(s) URL with a host. Neither may hold a control character or a space (a `\\r\\n` would split a
request header), and no message here quotes the URL.
"""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit

from voxwatch.foundation.text import UNSAFE

HTTP = ("http", "https")  # a registry vendor's server (the protocol families speak HTTP), a webhook
WS = ("ws", "wss")  # a deployed agent's WebSocket (providers/agents/line.py)
ANY = ("http", "https", "ws", "wss")  # an adapter's override: it converts between them (providers.session.endpoints)
_LABELS = {HTTP: "http(s)", WS: "ws(s)", ANY: "http(s)|ws(s)"}


def _parsed(url: str, schemes: tuple[str, ...], shape: str) -> tuple[SplitResult | None, str | None]:
    """(the URL's parts, None), or (None, why it is no `schemes` URL with a host)."""
    if UNSAFE.search(url) or any(c.isspace() for c in url):
        return None, f"holds a control character or a space; it {shape}"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        return None, f"is not a URL; it {shape}"
    if parts.scheme not in schemes or not parts.hostname:
        return None, shape
    return parts, None


def server_url_problem(url: str, schemes: tuple[str, ...] = ANY) -> str | None:
    """Why `url` cannot be a vendor server's address (a phrase that never quotes it), or None."""
    shape = f"must be {_LABELS.get(schemes, '|'.join(schemes))}://host[:port][/path], without credentials or a query"
    parts, problem = _parsed(url, schemes, shape)
    if parts is not None and ("@" in parts.netloc or parts.query or parts.fragment):
        problem = shape
    if problem == shape:
        problem += " (a key comes from the environment only)"
    return problem


def webhook_url_problem(url: str) -> str | None:
    """Why `url` cannot be a webhook's URL (a phrase that never quotes any of it), or None."""
    if not url.strip():
        return "is empty"
    return _parsed(url.strip(), HTTP, "must be an http(s):// URL with a host")[1]
