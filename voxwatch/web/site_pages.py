"""The pages about the site itself: the method (docs/METHOD.md), the API's reference, the favicon."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response

from voxwatch.web import api_reference
from voxwatch.web.markdown_doc import Document, render

HERE = Path(__file__).resolve().parent
STATIC, DOCS = HERE / "static", HERE / "docs"


def _render(request: Request, template: str, **context) -> Response:
    return request.app.state.templates.TemplateResponse(request, template, context)


@cache
def _favicon() -> bytes:
    return (STATIC / "favicon.svg").read_bytes()


def favicon(request: Request) -> Response:
    """The SVG icon, at /favicon.svg and at /favicon.ico (where browsers look unasked; they read SVG there too)."""
    return Response(_favicon(), media_type="image/svg+xml")


@cache
def method_document() -> Document:
    """docs/METHOD.md as shipped in the package (web/docs/METHOD.md links to it in a checkout)."""
    return render((DOCS / "METHOD.md").read_text(encoding="utf-8"))


def method_page(request: Request) -> Response:
    return _render(request, "method.html", doc=method_document())


def api_page(request: Request) -> Response:
    return _render(request, "api.html", info=api_reference.info(), endpoints=api_reference.endpoints(),
                   schemas=api_reference.schemas(), site=api_reference.SITE)
