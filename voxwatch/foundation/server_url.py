"""The one rule for a vendor server's address, wherever it is set: a registry file's `base_url` and
`VOXWATCH_<VENDOR>_BASE_URL` (and the judge's) are checked alike.

An address is shown in listings and stored with rows, and goes into request lines: so it holds no
credentials (a key comes from the environment only, as VOXWATCH_<VENDOR>_API_KEY), no query, and
no control character or space (a `\\r\\n` would split a request header).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from voxwatch.foundation.text import UNSAFE

HTTP = ("http", "https")  # a registry vendor's server: the protocol families speak HTTP
ANY = ("http", "https", "ws", "wss")  # an adapter's override: it converts between them (providers.endpoints)


def server_url_problem(url: str, schemes: tuple[str, ...] = ANY) -> str | None:
    """Why `url` cannot be a server's address (a phrase that never quotes it), or None."""
    label = {HTTP: "http(s)", ANY: "http(s)|ws(s)"}.get(schemes, "|".join(schemes))
    shape = f"must be {label}://host[:port][/path], without credentials or a query"
    if UNSAFE.search(url) or any(c.isspace() for c in url):
        return f"holds a control character or a space; it {shape}"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        return f"is not a URL; it {shape}"
    if parts.scheme not in schemes or not parts.hostname or "@" in parts.netloc or parts.query or parts.fragment:
        return shape + " (a key comes from the environment only)"
    return None
