"""The HTML pages (and the board's CSV and JSON downloads, and a conversation's recording):
server-rendered, no JavaScript."""

from __future__ import annotations

import re
import time
from dataclasses import replace
from urllib.parse import quote, urlencode

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response

from voxwatch.boards import end_of_turn, kept_off, leaderboard
from voxwatch.boards.marks import Marks, model_marks
from voxwatch.metrics.preliminary import row_reason
from voxwatch.foundation.scenario import DIMENSIONS
from voxwatch.boards.leaderboard import WINDOWS
from voxwatch.boards.prices import shown_price
from voxwatch.boards.use_cases import COMPARE_BOARDS
from voxwatch.datasets.provenance import ORIGINS, Provenance, families, lookup
from voxwatch.metrics.price import BOARD_FIGURE_UNIT
from voxwatch.metrics.ranking import series_id
from voxwatch.providers.registry import BOARDS, Registry

from voxwatch.web import bakeoff_views, board_views, compare_views, conversation_views, family_views, model_views, views
from voxwatch.web.board_charts import Point
from voxwatch.web.frontier_chart import frontier_chart
from voxwatch.web.params import choice, text
from voxwatch.web.source import Conversation


def _render(request: Request, template: str, status_code: int = 200, **context) -> Response:
    return request.app.state.templates.TemplateResponse(request, template, context, status_code=status_code)


def _page_context(request: Request, rows: list, comparisons: list, board: str | None) -> dict:
    """What the overview and every board show above and around their ranked tables: the filters and
    their options, the tables by protocol with their charts, the newest measurement and provenance."""
    f = board_views.filters(request)
    registry, source = request.app.state.registry, request.app.state.source
    vendors: dict[str, str] = {}
    provenances: dict[str, Provenance] = {}

    def vendor(model_id: str) -> str:
        if model_id not in vendors:
            vendors[model_id] = views.vendor(views.model_info(registry, model_id), model_id)
        return vendors[model_id]

    def provenance(dataset: str) -> Provenance:
        if dataset not in provenances:
            provenances[dataset] = lookup(request.app.state.catalog, dataset)
        return provenances[dataset]

    sections = board_views.ranked_sections(rows, comparisons, f, vendor, provenance, views.alerts(source).alerts,
                                           lambda model_id: shown_price(registry, model_id))
    shown = sorted({t.dataset for s in sections for t in s.tables})
    numbers = board_views.chart_numbers(sections)

    def words(row) -> tuple[str, ...]:
        return model_marks(registry, row.model_id, row_reason(row)).words

    options = board_views.options(rows, vendor, provenance)
    if board is not None:
        options = replace(options, **source.clip_values(board, leaderboard.since(f.window)))
    members = families(request.app.state.catalog)
    return {"f": f, "windows": list(WINDOWS), "window": f.window, "sorts": list(board_views.SORTS),
            "options": options, "sections": sections,
            "family_links": {d: p.family for d in shown if (p := provenance(d)).family
                             and len(set(members.get(p.family, {}).values())) > 1},
            "charts": {(t.board, t.protocol, t.dataset): board_views.charts(t, numbers, words) for s in sections
                       for t in s.tables},
            "provenance": [provenance(d) for d in shown], "newest": source.newest(board), "now": time.time(), "origin_words": ORIGINS,
            "na_reason": views.na_reason, "field_na": views.field_na, "price_units": BOARD_FIGURE_UNIT,
            "descriptions": views.DESCRIPTIONS, "distributed": request.app.state.distributed}


def overview_page(request: Request) -> Response:
    window, source = board_views.filters(request).window, request.app.state.source
    context = _page_context(request, source.leaderboard(window), source.comparisons(window), None)
    by_board = {b: [s for s in context["sections"] if s.board == b] for b in BOARDS}
    talks = conversation_views.count(source, window)  # the S2S board's conversations count as measurements
    return _render(request, "overview.html", **context, boards=list(BOARDS), board_sections=by_board,
                   conversation_counts={"s2s": talks})


def board_page(request: Request) -> Response:
    board = request.path_params["board"]
    if board not in BOARDS:
        raise HTTPException(404, f"no board {board!r}: the boards are {', '.join(BOARDS)}")
    window = choice(request, "window", WINDOWS, "30d")
    dataset = text(request, "dataset")
    fmt = choice(request, "format", ("html", "csv", "json"), "html")
    source = request.app.state.source
    speaker, accent = text(request, "speaker"), text(request, "accent")
    clips = views.clip_filter(speaker, accent)
    if fmt != "html":
        name = "-".join(["voxwatch", board, window] + ([re.sub(r"[^A-Za-z0-9._-]", "_", dataset)] if dataset else []))
        disposition = {"Content-Disposition": f'attachment; filename="{name}.{fmt}"'}
        if fmt == "csv":
            return Response(leaderboard.format_csv(views.board_rows(source, window, board, dataset, clips),
                                                    request.app.state.registry),
                            media_type="text/csv; charset=utf-8", headers=disposition)
        return JSONResponse(views.leaderboard_document(source, request.app.state.registry, window, board, dataset,
                                                       speaker=speaker, accent=accent), headers=disposition)
    rows = views.board_rows(source, window, board, clips=clips)
    compared = views.board_comparisons(source, window, board, clips=clips)
    context = _page_context(request, rows, compared, board)
    f = context["f"]
    entries = [e for s in context["sections"] for t in s.tables for e in t.entries]
    kept = {series_id(e.row) for e in entries}
    shown = [r for r in rows if series_id(r) in kept]  # the full tables show the series the filters keep
    tables = views.dataset_tables(shown, views.method_notes(source, shown, window),
                                  {series_id(e.row): e.rank for e in entries})  # the ranks above: never re-ranked
    alerts = {series_id(e.row).rows_key: e.alerts for e in entries if e.alerts}
    conversations = conversation_views.conversation_board(source, window) if board == "s2s" else None
    stalled = kept_off.stalled_line(source.stalled(board, leaderboard.since(window)), f"in the last {window}")
    eot = [(end_of_turn.cells(line), line.emits) for line in end_of_turn.eot_lines(shown, request.app.state.registry)]
    return _render(request, "board.html", **context, board=board, dataset=f.dataset, tables=tables,
                   series_alerts=alerts, conversations=conversations, stalled=stalled,
                   stat_lines=conversation_views.stat_lines, eot=eot, eot_header=end_of_turn.HEADER)


def stored_conversation(request: Request) -> Conversation:
    """The conversation the path names (shown on the site: not emulated), or a 404."""
    conversation_id = request.path_params["conversation_id"]
    found = request.app.state.source.conversation(conversation_id)
    if found is None:
        raise HTTPException(404, f"no conversation {conversation_id!r}")
    return found


def conversation_page(request: Request) -> Response:
    view = conversation_views.conversation_view(stored_conversation(request), request.app.state.recordings_dir)
    return _render(request, "conversation.html", c=view, dimensions=DIMENSIONS)


def recording(request: Request) -> Response:
    """The two-channel recording of a conversation, when the server was given its folder and it is there."""
    row, _ = stored_conversation(request)
    path = conversation_views.recording_path(request.app.state.recordings_dir, row.recording)
    if path is None:
        raise HTTPException(404, f"no recording of conversation {row.conversation_id!r} on this server")
    return FileResponse(path, media_type="audio/wav")


def model_page(request: Request) -> Response:
    model_id = request.path_params["model_id"]
    registry = request.app.state.registry
    metric = choice(request, "metric", views.HEADLINE, None)
    dataset = text(request, "dataset")
    h = views.history(request.app.state.source, registry, model_id, metric, dataset)
    headline = views.headline_metrics(registry, model_id)
    if not h.metrics and not headline:
        raise HTTPException(404, f"no model {model_id!r}: neither registered nor measured in the last "
                                 f"{views.HISTORY_DAYS} days")
    info = views.model_info(registry, model_id)
    shown = [line for line in model_views.summary(request.app.state.source, model_id)
             if dataset is None or line.headline.dataset == dataset]
    talks = conversation_views.conversation_board(request.app.state.source, model_views.SUMMARY_WINDOW, model_id)
    return _render(request, "model.html", model_id=model_id, info=info, entry=views.registry_entry(registry, info),
                   metric=metric, dataset=dataset, summary=shown, summary_window=model_views.SUMMARY_WINDOW,
                   metrics=sorted(set(headline + h.metrics), key=views.METRIC_ORDER.get),
                   datasets=h.datasets, excluded=h.excluded,
                   charts=model_views.charts(h, metric), days=views.HISTORY_DAYS, na_reason=views.na_reason,
                   field_na=views.field_na, conversations=talks, stat_lines=conversation_views.stat_lines)


def alerts_page(request: Request) -> Response:
    view = views.alerts(request.app.state.source)
    groups = {state: [a for a in view.alerts if a.state == state] for state in ("firing", "pending", "resolved")}
    return _render(request, "alerts.html", view=view, groups=groups, resolved_days=views.RESOLVED_SHOWN_S // 86400)


def requested_family(request: Request) -> family_views.FamilyView:
    """The family the path names over the query's window and region; a 404 for a family that neither
    this server's dataset catalog nor any STT row of the window has."""
    family = request.path_params["family"]
    window = choice(request, "window", WINDOWS, "30d")
    view = family_views.family_view(request.app.state.source, family, window, text(request, "region"))
    if not view.regions and family not in families(request.app.state.catalog):
        raise HTTPException(404, f"no dataset family {family!r}: neither in this server's dataset catalog nor "
                                 f"measured on the STT board in the last {window}")
    return view


def family_page(request: Request) -> Response:
    view = requested_family(request)
    api = "/api/v1/families/" + quote(view.family, safe="")
    params = {k: v for k, v in (("window", view.window), ("region", view.region)) if v}
    return _render(request, "family.html", view=view, windows=list(WINDOWS),
                   min_paired=family_views.MIN_PAIRED_UTTERANCES,
                   api_url=api + "?" + urlencode(params), csv_url=api + "?" + urlencode({**params, "format": "csv"}))


def requested_comparison(request: Request) -> dict:
    """The comparison document the path and query name: a 404 for an unknown board, a 400 for an
    unknown window or use case (each saying what there is)."""
    board = request.path_params["board"]
    if board not in COMPARE_BOARDS:
        raise HTTPException(404, f"no comparison board {board!r}: the boards are {', '.join(COMPARE_BOARDS)}")
    window = choice(request, "window", WINDOWS, "30d")
    statistic = choice(request, "statistic", compare_views.STATISTICS, "p50")
    try:
        return compare_views.comparison_document(request.app.state.source, request.app.state.registry, board, window,
                                                 text(request, "use_case"), statistic, text(request, "order") or "rank")
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None


def _line_key(r: dict) -> str:
    return "|".join((r["model_id"], r["region"], r["instrument"] or ""))


def _compare_point(r: dict, number: int, y: float) -> Point:
    """A comparison line as a chart's point: its number (its line in the table, on every chart of the
    page) and its marks (boards.marks, from the document's fields)."""
    return Point(f"{r['model_id']} ({r['region']})", _line_key(r), r[_latency(r)], y, number, Marks.of(r).words)


def _latency(r: dict) -> str:
    """The document row's field of the latency statistic the page ranks on (latency_p50 or latency_p95)."""
    return "latency_" + r["statistic"]


def compare_chart(doc: dict) -> str | None:
    """The document's latency-against-accuracy chart (the lines that have both figures), or None."""
    lat, acc = doc["latency"], doc["accuracy"]
    rows = [{**r, "statistic": lat["statistic"]} for r in doc["rows"]]
    points = [replace(_compare_point(r, i, r["accuracy"]), x_ci=r[_latency(r) + "_ci"], y_ci=r["accuracy_ci"],
                      on_frontier=r["on_frontier"])
              for i, r in enumerate(rows, 1) if r[_latency(r)] is not None and r["accuracy"] is not None]
    if not points:
        return None
    better = {True: "lower is better", False: "higher is better"}
    head = views.metric_head(lat["metric"], lat["statistic"])
    return frontier_chart(f"{head} against {acc['title']}",
                          f"{head}, {better[True]}",
                          f"{acc['title']}, {better[acc['lower_is_better']]}", points, acc["unit"] == "fraction")


def compare_price_chart(doc: dict, unit: str) -> str | None:
    """The document's headline latency against each priced model's price (the price column's figure),
    or None when no model shown has a price: cost beside speed on the page where a person chooses."""
    rows = [{**r, "statistic": doc["latency"]["statistic"]} for r in doc["rows"]]
    priced = [_compare_point(r, i, r["price"]) for i, r in enumerate(rows, 1)
              if r[_latency(r)] is not None and r.get("price") is not None]
    return board_views.price_chart(doc["latency"]["metric"], unit, priced, doc["latency"]["statistic"]) if priced else None


def keyless_others(registry: Registry, doc: dict) -> list[str]:
    """The registry's active models of the page's protocol that need no API key and are not on the
    page: what a person running the embedded default can add to compare more than one model."""
    board = COMPARE_BOARDS[doc["board"]]
    shown = {r["model_id"] for r in doc["rows"]}
    return sorted(m.id for m in registry.models.values() if m.protocol == board.protocol and not m.needs_key
                  and m.status == "active" and not registry.is_baseline(m.id) and m.id not in shown)


def compare_page(request: Request) -> Response:
    doc = requested_comparison(request)
    if choice(request, "format", ("html", "csv", "json"), "html") != "html":
        return compare_download(request, doc)
    price_unit = BOARD_FIGURE_UNIT[COMPARE_BOARDS[doc["board"]].board]
    return _render(request, "compare.html", doc=doc, chart=compare_chart(doc), windows=list(WINDOWS),
                   price_chart=compare_price_chart(doc, price_unit), boards=COMPARE_BOARDS, price_unit=price_unit,
                   others=keyless_others(request.app.state.registry, doc) if len(doc["rows"]) < 2 else [],
                   descriptions=views.DESCRIPTIONS, statistics=compare_views.STATISTICS)


def requested_bakeoff(request: Request) -> dict:
    """The bake-off the query names (window, scenario, persona): a 400 for an unknown window."""
    window = choice(request, "window", WINDOWS, "30d")
    return bakeoff_views.bakeoff_document(request.app.state.source, request.app.state.registry, window,
                                          text(request, "scenario"), text(request, "persona"))


def bakeoff_page(request: Request) -> Response:
    doc = requested_bakeoff(request)
    if choice(request, "format", ("html", "csv", "json"), "html") != "html":
        return bakeoff_download(request, doc)
    return _render(request, "bakeoff.html", doc=doc, windows=list(WINDOWS))


def bakeoff_download(request: Request, doc: dict) -> Response:
    """The bake-off as JSON or, ?format=csv, as CSV (the page's numbers)."""
    if request.query_params.get("format") == "csv":
        name = re.sub(r"[^A-Za-z0-9._-]", "_", f"voxwatch-bakeoff-{doc['scenario'] or 'all'}-{doc['window']}")
        return Response(bakeoff_views.to_csv(doc), media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": f'attachment; filename="{name}.csv"'})
    return JSONResponse(doc)


def compare_download(request: Request, doc: dict) -> Response:
    """The comparison as JSON or, ?format=csv, as CSV (the page's and the API's numbers)."""
    if request.query_params.get("format") == "csv":
        case = doc["use_case"]["id"] if doc["use_case"] else "none"
        name = re.sub(r"[^A-Za-z0-9._-]", "_", f"voxwatch-compare-{doc['board']}-{case}-{doc['window']}")
        return Response(compare_views.to_csv(doc), media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": f'attachment; filename="{name}.csv"'})
    return JSONResponse(doc)
