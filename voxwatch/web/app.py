"""The Starlette app and `voxwatch serve`: routes, error pages, and the server.

Errors never show a traceback or the store URL: an unreadable store is a 503 with a plain
sentence (its detail, passwords hidden, goes to the log), bad input a 400 that says what is
allowed. Pages under /api/v1 get their errors as JSON, the rest as HTML.

Under load (docs/WEB.md "Under load"): pages come from the cache while the store is unchanged
(cache.py, freshness.py), renders pass a bounded admission that answers overload with 503 and
Retry-After (admission.py), the health check bypasses both, and every response carries the
security headers (headers.py). Kept pages carry Cache-Control, ETag and Last-Modified and answer a
conditional GET with 304 (conditional.py); responses are gzipped when asked (cache.py for kept
pages, compression.py for the rest); the API under /api/v1 may be read cross-origin (cors.py).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Callable

import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Scope

from voxwatch.boards import comparisons as board_comparisons
from voxwatch.boards.leaderboard import QUALITY_BOARDS
from voxwatch.boards.use_cases import COMPARE_BOARDS
from voxwatch.foundation import preload
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.boards.marks import model_marks
from voxwatch.metrics.deadline_wer import DEADLINES_MS, wer_field
from voxwatch.metrics import METHOD_VERSION, preliminary
from voxwatch.metrics.ranking import RANK_RULE
from voxwatch.store import demo as demo_store
from voxwatch.web.watermark import Watermark
from voxwatch.preference.prompt_catalog import PromptCatalog
from voxwatch.preference.prompt_catalog import bundled_root as prompts_root
from voxwatch.providers.registry import Registry
from voxwatch.store import redact

from voxwatch.web import api, formatting, hour_views, pages, preference_views, rating, site_pages, views
from voxwatch.web.access_log import log_config as access_log_config
from voxwatch.web.admission import Admission
from voxwatch.web.cache import CachedPages, Pages
from voxwatch.web.compression import Compressed
from voxwatch.web.cors import PublicAPI
from voxwatch.web.freshness import Freshness
from voxwatch.web.headers import SecurityHeaders
from voxwatch.web.limits import Limits
from voxwatch.web.memo import MemoSource
from voxwatch.web.rating_store import RatingStore
from voxwatch.web.source import PostgresSource, StoreUnavailable, log, open_source

HERE = Path(__file__).resolve().parent


def _is_api(request: Request) -> bool:
    return request.url.path.startswith("/api/")


def _error(request: Request, status: int, message: str) -> Response:
    if _is_api(request):
        return JSONResponse({"error": message}, status_code=status)
    return request.app.state.templates.TemplateResponse(request, "error.html", {"status": status, "message": message},
                                                        status_code=status)


async def _unavailable(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StoreUnavailable)
    log.warning("%s %s: %s", request.method, rating.logged_path(request.url.path), exc.detail)
    return _error(request, 503, exc.public)


async def _http_error(request: Request, exc: Exception) -> Response:
    """The error page or API error, with the exception's headers (a 405's Allow, a 401's WWW-Authenticate)."""
    assert isinstance(exc, HTTPException)
    response = _error(request, exc.status_code, str(exc.detail))
    response.headers.update(exc.headers or {})
    if exc.status_code == 405 and "allow" not in response.headers:  # StaticFiles' 405 names no methods
        response.headers["Allow"] = "GET, HEAD"
    return response


async def _server_error(request: Request, exc: Exception) -> Response:
    return _error(request, 500, "Something went wrong on the server; the log has the details.")


def _turned_away(retry_after_s: int) -> Callable[[Scope], Response]:
    """The 503 for a request no render slot took in time, as the error page or API error, with Retry-After."""
    def busy(scope: Scope) -> Response:
        response = _error(Request(scope), 503, "The server is busy: please try again in a few seconds.")
        response.headers["Retry-After"] = str(retry_after_s)
        return response
    return busy


class _App(Starlette):
    def build_middleware_stack(self) -> ASGIApp:
        """The security headers outermost, so the 500 page of ServerErrorMiddleware has them too."""
        return SecurityHeaders(super().build_middleware_stack())


RECORDINGS = "/recording/"
"""Conversation recordings: files streamed from the recordings folder, past the page cache (never kept)."""


def create_app(store_url: str, registry: Registry | None = None, limits: Limits = Limits(),
               recordings_dir: Path | None = None, ratings_store_url: str | None = None,
               preference_outputs_dir: Path | None = None, datasets_dir: Path | None = None,
               preference_prompts_dir: Path | None = None, operator_token: str | None = None,
               region_zones: dict[str, str] | None = None) -> Starlette:
    """The app for one store; nothing connects until the first request. `recordings_dir`, the folder
    a conversation row's `recording` is relative to: None shows no player and serves no recording.
    `ratings_store_url`: the store the rating pages write to (default: `store_url`), opened on first
    use; `preference_outputs_dir`: where the rated audio is (None: the rating pages play nothing);
    `datasets_dir`: the imported datasets, whose provenance the boards state beside the bundled ones';
    `preference_prompts_dir`: the imported prompt sets, whose audio a rater hears beside the bundled set's;
    `operator_token`: what opens the raw ratings' export (operator.py; None: it is not served);
    `region_zones`: each region's IANA time zone ([schedule] time_zones), the hour-of-day page's local hours."""
    preload.numerics()  # the first page must not wait on scipy's import
    registry = registry or Registry.default()
    watermark = demo_store.WATERMARK if demo_store.note(store_url) is not None else None  # a demo store's rows
    source = open_source(store_url, registry)
    freshness = Freshness(source, registry, limits.fresh_within_s)
    cache = Middleware(CachedPages, freshness=freshness,
                       admission=Admission(limits.renders, limits.queue_wait_s, limits.queue),
                       pages=Pages(limits.cache_entries, limits.cache_bytes, limits.max_age_s),
                       turned_away=_turned_away(max(1, math.ceil(limits.queue_wait_s))),
                       uncached=(api.HEALTH,), streamed=(RECORDINGS,),
                       admitted=rating.UNCACHED_PREFIXES)
    templates = Jinja2Templates(directory=HERE / "templates")
    templates.env.filters.update(formatting.FILTERS)
    templates.env.globals.update(formatting.GLOBALS, method_version=METHOD_VERSION, rank_rule=RANK_RULE, watermark=watermark, verdict=board_comparisons.verdict,
                                 comparison_about=board_comparisons.ABOUT, quality_boards=QUALITY_BOARDS,
                                 compare_boards=COMPARE_BOARDS,
                                 deadline_fields=[(d, wer_field(d)) for d in DEADLINES_MS],
                                 standing=lambda model_id: views.model_standing(registry, model_id),
                                 is_baseline=registry.is_baseline, preliminary=preliminary.row_reason,
                                 marks_of=lambda model_id, reason=None: model_marks(registry, model_id, reason),
                                 block_preliminary=preliminary.scorecard_reason)
    app = _App(
        routes=[
            Route("/", pages.overview_page),
            Route("/board/preference", preference_views.page),  # before /board/{board}
            Route("/board/{board}", pages.board_page),
            Route("/board/stt/family/{family}", pages.family_page),
            Route("/compare/{board}", pages.compare_page),
            Route("/bakeoff", pages.bakeoff_page),
            Route("/model/{model_id:path}/hours", hour_views.page),  # before /model/{model_id}
            Route("/model/{model_id:path}", pages.model_page),
            Route("/alerts", pages.alerts_page),
            Route("/method", site_pages.method_page),
            Route("/api", site_pages.api_page),
            Route("/favicon.svg", site_pages.favicon),
            Route("/favicon.ico", site_pages.favicon),
            Route("/conversation/{conversation_id}", pages.conversation_page),
            Route(RECORDINGS + "{conversation_id}.wav", pages.recording),
            *rating.routes,
            Mount("/api/v1", routes=api.routes),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ],
        exception_handlers={StoreUnavailable: _unavailable, HTTPException: _http_error, 500: _server_error},
        middleware=[Middleware(PublicAPI, private=rating.OPERATOR_PREFIXES), Middleware(Compressed), cache,
                    *([Middleware(Watermark, text=watermark)] if watermark else [])],
    )
    app.state.registry = registry
    app.state.source = MemoSource(source, freshness, limits.max_age_s)
    app.state.distributed = isinstance(source, PostgresSource)  # where workers and beat can run the schedule
    app.state.freshness = freshness
    app.state.templates = templates
    app.state.recordings_dir = recordings_dir
    app.state.catalog = Catalog([bundled_root()] + ([datasets_dir] if datasets_dir else []))
    app.state.ratings = RatingStore(ratings_store_url or store_url)
    app.state.preference_outputs_dir = preference_outputs_dir
    app.state.operator_token = operator_token
    app.state.region_zones = dict(region_zones or {})
    app.state.prompt_sets = PromptCatalog([prompts_root()] + ([preference_prompts_dir] if preference_prompts_dir else []))
    return app


def serve(store_url: str, host: str, port: int, limits: Limits = Limits(), access_log: bool = False,
          recordings_dir: Path | None = None, ratings_store_url: str | None = None,
          preference_outputs_dir: Path | None = None, datasets_dir: Path | None = None,
          registry: Registry | None = None, preference_prompts_dir: Path | None = None,
          operator_token: str | None = None, region_zones: dict[str, str] | None = None) -> int:
    """Run the app until interrupted; the log names the store with its password hidden. No Server
    header: nothing tells a visitor what runs the site. No line per request unless `access_log`: it
    costs about as much CPU as serving a cached page (a proxy in front usually logs them anyway)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    app = create_app(store_url, registry, limits=limits, recordings_dir=recordings_dir,
                     ratings_store_url=ratings_store_url, preference_outputs_dir=preference_outputs_dir,
                     datasets_dir=datasets_dir, preference_prompts_dir=preference_prompts_dir,
                     operator_token=operator_token, region_zones=region_zones)
    log.info("serving the leaderboard of %s on http://%s:%d/", redact(store_url), host, port)
    try:
        uvicorn.run(app, host=host, port=port, log_level="info", server_header=False, access_log=access_log,
                    log_config=access_log_config(), http="httptools", loop="uvloop")
    finally:
        app.state.freshness.close()
        app.state.source.close()
        app.state.ratings.close()
    return 0
