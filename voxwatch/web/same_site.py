"""Rating answers are taken only from this site's own pages (no cross-site request forgery).

A rater's token is in the form's URL, so another site could post answers in their name from their
own browser. A browser says where a POST comes from: `Sec-Fetch-Site` (every current browser, on
HTTPS and loopback; a page's script cannot set it), else `Origin`, else `Referer`. A POST is taken
when the first of these present says this site; a POST with none of them is refused too, since a
browser's same-origin form always sends one (the site's Referrer-Policy, same-origin, keeps the
real Origin on its own POSTs; `Origin: null` is what a sandboxed or no-referrer page elsewhere sends).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.exceptions import HTTPException
from starlette.requests import Request

REFUSED = "Ratings are taken only from this site's own rating pages."


def _host_of(url: str) -> str | None:
    try:
        return urlsplit(url).netloc.lower() or None
    except ValueError:
        return None


def from_this_site(request: Request) -> bool:
    """Whether the request's browser says it comes from this site (see the module's docstring)."""
    headers = request.headers
    fetch_site = headers.get("sec-fetch-site")
    if fetch_site is not None:
        return fetch_site == "same-origin"
    claimed = headers.get("origin") or headers.get("referer")
    own = headers.get("host", "").lower()
    return claimed is not None and bool(own) and _host_of(claimed) == own


def require(request: Request) -> None:
    """403 unless from_this_site."""
    if not from_this_site(request):
        raise HTTPException(403, REFUSED)
