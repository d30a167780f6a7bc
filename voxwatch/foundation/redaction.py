"""The one scrubber: what a secret looks like in a message, and how it is cut out.

Every text bound for a log, a row, a page or an error message that may hold a secret goes
through `scrub`: a store or broker URL's password (in its user part or a `password=` parameter,
in every spelling a library could echo: as written, percent-decoded, or as libpq read it), a
webhook URL (a credential as a whole), an API or Grafana token. `redact_url` is the URL as
messages show it: everything but its password kept, so an operator can tell which store it was.
"""

from __future__ import annotations

from typing import Iterable, Protocol
from urllib.parse import unquote, unquote_plus, urlsplit

MASK = "***"
_MIN_PIECE = 2  # a secret shorter than this would blank out ordinary text; "" and 1-character ones are not cut


class _Revealable(Protocol):
    def reveal(self) -> str: ...


def _split(url: str) -> tuple[str, str, str, str]:
    """(scheme://, userinfo, rest of the authority and path, ?query#fragment) of a URL. The userinfo
    runs to the last '@' before any '?' or '#': a password with a raw '@' or '/' in it (which libpq
    would split into a host or port, and then echo) stays whole on the userinfo side."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return "", "", url, ""
    cut = min((i for i in (rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    head, tail = rest[:cut], rest[cut:]
    userinfo, at, host = head.rpartition("@")
    return scheme + sep, userinfo if at else "", host if at else head, tail


def url_password(url: str) -> str | None:
    """The password in the URL's user part, as written (None when there is none)."""
    _, userinfo, _, _ = _split(url)
    user, colon, password = userinfo.partition(":")
    return password if colon else None


def _query_passwords(query: str) -> list[str]:
    return [value for key, _, value in (p.partition("=") for p in query.lstrip("?").split("#")[0].split("&"))
            if unquote_plus(key) == "password"]


def url_secrets(url: str) -> list[str]:
    """Every spelling of every password the URL holds, longest first: as written, percent-decoded,
    and with '+' read as a space."""
    _, _, _, tail = _split(url)
    raw = [p for p in [url_password(url), *_query_passwords(tail)] if p]
    return _spellings(raw)


def _spellings(raw: Iterable[str]) -> list[str]:
    found = {s for p in raw for s in (p, unquote(p), unquote_plus(p))}
    return sorted((s for s in found if len(s) >= _MIN_PIECE), key=len, reverse=True)


def redact_url(url: str) -> str:
    """The URL with its password (in the user part, or `password=` parameters) shown as ***, the rest
    as written (scheme, user, host, port, path, other parameters)."""
    try:
        urlsplit(url)
    except ValueError:  # not parseable as a URL (a broken IPv6 host): say nothing about it rather than risk a secret
        return f"{url.split(':', 1)[0]}://(unparseable URL)"
    scheme, userinfo, host, tail = _split(url)
    user, colon, _ = userinfo.partition(":")
    shown = scheme + (f"{user}:{MASK}@" if colon else f"{userinfo}@" if userinfo else "") + host
    if tail:
        query, hash_, fragment = tail.partition("#")
        parts = [f"{key}={MASK}" if unquote_plus(key) == "password" else f"{key}{eq}{value}"
                 for key, eq, value in (p.partition("=") for p in query.lstrip("?").split("&"))]
        shown += ("?" + "&".join(parts) if query.startswith("?") else "") + (hash_ + fragment if hash_ else "")
    return shown


def opaque_pieces(url: str) -> list[str]:
    """The parts of a URL that is a credential as a whole (a Slack webhook's path is its token) that a
    library's message could quote: the URL, with and without its last '/', host and path, the
    path, the query; longest first."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return [url] if len(url) >= _MIN_PIECE else []
    pieces = {url, url.rstrip("/"), parts.netloc + parts.path, parts.path, parts.query}
    return sorted((p for p in pieces if len(p) > 1), key=len, reverse=True)


def scrub(text: str, *, secrets: Iterable[str | _Revealable | None] = (), urls: Iterable[str] = (),
          opaque_urls: Iterable[str] = ()) -> str:
    """`text` with every secret cut out, for a log, a row, a page or an error message.

    `urls`: URLs whose passwords are secret (a store, a broker): each URL as written becomes its
    redacted form, then every spelling of its passwords becomes ***. `opaque_urls`: URLs that are a
    secret as a whole (webhooks): the URL and each of its parts becomes ***. `secrets`: plain
    secret values, or objects with `reveal()` (API keys).
    """
    urls, opaque = [u for u in urls if u], [u for u in opaque_urls if u]
    for url in sorted(urls, key=len, reverse=True):
        text = text.replace(url, redact_url(url))
    values = [s if isinstance(s, str) else s.reveal() for s in secrets if s is not None]
    pieces = {p for u in urls for p in url_secrets(u)} | set(_spellings(v for v in values if v))
    pieces |= {p for u in opaque for p in opaque_pieces(u)}
    for piece in sorted(pieces, key=len, reverse=True):
        text = text.replace(piece, MASK)
    return text
