"""The read-only JSON API under /api/v1; openapi.document() describes every path and schema."""

from __future__ import annotations

import re
from dataclasses import asdict

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from voxwatch.boards import comparisons as board_comparisons
from voxwatch.boards.leaderboard import WINDOWS
from voxwatch.metrics import METHOD_VERSION
from voxwatch.providers.registry import BOARDS

from voxwatch.web import conversation_views, family_views, hour_views, openapi, pages, preference_views, views
from voxwatch.web.params import choice, text
from voxwatch.web.source import log

def leaderboard(request: Request) -> JSONResponse:
    board = choice(request, "board", BOARDS, None)
    window = choice(request, "window", WINDOWS, "30d")
    return JSONResponse(views.leaderboard_document(request.app.state.source, request.app.state.registry, window, board,
                                                   text(request, "dataset"), speaker=text(request, "speaker"),
                                                   accent=text(request, "accent")))


def comparisons(request: Request) -> Response:
    """Every two models of a ranking on the clips both heard (the ranks' evidence); ?format=csv: as CSV."""
    board = choice(request, "board", BOARDS, None)
    window = choice(request, "window", WINDOWS, "30d")
    fmt = choice(request, "format", ("json", "csv"), "json")
    doc = views.comparisons_document(request.app.state.source, window, board, text(request, "dataset"),
                                     text(request, "model"))
    if fmt == "csv":
        return Response(board_comparisons.format_csv(doc.pop("found")), media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": f'attachment; filename="voxwatch-comparisons-{window}.csv"'})
    doc.pop("found")
    return JSONResponse(doc)


def models(request: Request) -> JSONResponse:
    return JSONResponse(views.models_document(request.app.state.source, request.app.state.registry))


def history(request: Request) -> JSONResponse:
    model_id = request.path_params["model_id"]
    metric = choice(request, "metric", views.HEADLINE, None)
    h = views.history(request.app.state.source, request.app.state.registry, model_id, metric, text(request, "dataset"))
    if not h.metrics and not views.headline_metrics(request.app.state.registry, model_id):
        raise HTTPException(404, f"no model {model_id!r}: neither registered nor measured in the last "
                                 f"{views.HISTORY_DAYS} days")
    return JSONResponse(views.history_document(h))


def alerts(request: Request) -> JSONResponse:
    view = views.alerts(request.app.state.source)
    return JSONResponse({"available": view.available, "reason": view.reason, "alerts": [asdict(a) for a in view.alerts]})


def conversations(request: Request) -> Response:
    """The conversation board's blocks and the newest conversations; ?format=csv: the blocks as CSV."""
    window = choice(request, "window", WINDOWS, "30d")
    model_id = text(request, "model")
    fmt = choice(request, "format", ("json", "csv"), "json")
    board = conversation_views.conversation_board(request.app.state.source, window, model_id)
    if fmt == "csv":
        return Response(conversation_views.board_csv(board, request.app.state.registry),
                        media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": f'attachment; filename="voxwatch-conversations-{window}.csv"'})
    return JSONResponse(conversation_views.board_document(board, request.app.state.registry))


def conversation(request: Request) -> JSONResponse:
    found = pages.stored_conversation(request)
    view = conversation_views.conversation_view(found, request.app.state.recordings_dir)
    return JSONResponse(conversation_views.conversation_document(view, request.app.state.registry))


def family(request: Request) -> Response:
    """A dataset family's clean-vs-degraded lines (the page's numbers); ?format=csv: as CSV."""
    fmt = choice(request, "format", ("json", "csv"), "json")
    view = pages.requested_family(request)
    if fmt == "csv":
        name = re.sub(r"[^A-Za-z0-9._-]", "_", view.family)
        return Response(family_views.to_csv(view), media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": f'attachment; filename="voxwatch-family-{name}-{view.window}.csv"'})
    return JSONResponse(family_views.document(view))


def compare(request: Request) -> Response:
    """A board's models over a use case: latency against accuracy, the frontier; ?format=csv: as CSV."""
    choice(request, "format", ("json", "csv"), "json")
    return pages.compare_download(request, pages.requested_comparison(request))


def bakeoff(request: Request) -> Response:
    """The same scenario and persona against several agents, side by side; ?format=csv: as CSV."""
    choice(request, "format", ("json", "csv"), "json")
    return pages.bakeoff_download(request, pages.requested_bakeoff(request))


HEALTH = "/api/v1/health"


async def health(request: Request) -> JSONResponse:
    """On the event loop, past the cache and the admission gate: it answers while pages are busy."""
    freshness = request.app.state.freshness
    body = {"status": "ok", "store": request.app.state.source.kind, "method_version": METHOD_VERSION}
    if await freshness.current() is None:
        log.warning("health check: %s", freshness.problem.detail)
        return JSONResponse({**body, "status": "unavailable"}, status_code=503)
    return JSONResponse(body)


def openapi_json(request: Request) -> JSONResponse:
    return JSONResponse(openapi.document())


routes = [
    Route("/leaderboard", leaderboard),
    Route("/comparisons", comparisons),
    Route("/models", models),
    Route("/models/{model_id:path}/history", history),
    Route("/models/{model_id:path}/hours", hour_views.api),
    Route("/alerts", alerts),
    Route("/conversations", conversations),
    Route("/conversations/{conversation_id}", conversation),
    Route("/families/{family}", family),
    Route("/compare/{board}", compare),
    Route("/bakeoff", bakeoff),
    Route("/preference", preference_views.api),
    Route("/health", health),
    Route("/openapi.json", openapi_json),
]
