"""The preference (Elo) board on the web: GET /board/preference and GET /api/v1/preference.

Both read the newest stored fit through the source (voxwatch preference fit wrote it; nothing is
fitted on a request) and lay it out with voxwatch/preference/standings_format.py, as the CLI does.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from voxwatch.preference.standings_format import BREAKDOWNS, document, fitted_on, to_csv

from voxwatch.web.params import choice

TABS = {"model": "Models", "config": "Configurations", "voice": "Per voice", "thinking": "Per thinking level",
        "rubric": "Per rubric", "category": "Per prompt category"}


def _document(request: Request) -> dict:
    by = choice(request, "by", BREAKDOWNS, None)
    return document(request.app.state.source.preference_fit(), by)


def page(request: Request) -> Response:
    by = choice(request, "by", BREAKDOWNS, "model")
    doc = document(request.app.state.source.preference_fit(), by)
    clusters = None
    if doc["clusters"]:
        found = doc["clusters"]
        groups: dict[int, list[str]] = {}
        for rubric, label in zip(found["rubrics"], found["labels"]):
            groups.setdefault(label, []).append(rubric)
        clusters = {**found, "groups": [groups[k] for k in sorted(groups)]}
    return request.app.state.templates.TemplateResponse(request, "preference_board.html", {
        "doc": doc, "by": by, "tabs": TABS, "clusters": clusters,
        "fitted": fitted_on(doc["fitted_at"]) if doc["fitted_at"] is not None else None})


def api(request: Request) -> Response:
    """The newest fit as JSON (?by= one breakdown), or its boards as CSV (?format=csv)."""
    fmt = choice(request, "format", ("json", "csv"), "json")
    doc = _document(request)
    if fmt == "csv":
        return Response(to_csv(doc), media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": 'attachment; filename="voxwatch-preference.csv"'})
    return JSONResponse(doc)
