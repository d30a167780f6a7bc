"""The pages about the site itself: the method (docs/METHOD.md), the API's reference, the favicon."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response

STATIC = Path(__file__).resolve().parent / "static"


@cache
def _favicon() -> bytes:
    return (STATIC / "favicon.svg").read_bytes()


def favicon(request: Request) -> Response:
    """The SVG icon, at /favicon.svg and at /favicon.ico (where browsers look unasked; they read SVG there too)."""
    return Response(_favicon(), media_type="image/svg+xml")
