"""A model's latency by hour of day and region (the heat map), and its API and CSV: one document for all three.

Per series of the model on one dataset (its region, and for TTS the instrument that scored it;
current method, no emulator rows), one row of 24 hours, read on UTC or on the region's own clock
(its IANA zone, [schedule] time_zones; UTC where none is stated, and the page says so). Every cell's
figures are metrics.hour_of_day's (each hour summarized as metrics.series summarizes a series, its
floors included): nothing is computed here but which rows are read and how a cell is coloured.
"""

from __future__ import annotations

import csv
import io
import time
from collections import Counter
from dataclasses import asdict, dataclass

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from voxwatch.boards import leaderboard
from voxwatch.boards.leaderboard import WINDOWS
from voxwatch.foundation.observation import Observation
from voxwatch.foundation.series_key import SeriesKey
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.hour_of_day import CLOCKS, HOURS, UTC, HourCell, by_hour, zone_of
from voxwatch.metrics.published import metric_record, when
from voxwatch.metrics.ranking import ranked_metric
from voxwatch.metrics.series import MIN_N, percentile_floor
from voxwatch.metrics.specs import for_protocol
from voxwatch.providers.registry import Registry
from voxwatch.store.row_filter import RowFilter
from voxwatch.store.series_data import group, series_key

from voxwatch.web import views
from voxwatch.web.params import choice, text
from voxwatch.web.source import Source

STATISTICS = ("p50", "p95")
HEAT_LEVELS = 10
"""Cells are coloured in this many steps from the page's smallest figure to its largest (CSS heat-0..heat-9)."""
DEFAULT_WINDOW = "30d"


@dataclass(frozen=True)
class HourRow:
    """One series' 24 hours on one clock (None: no row started in that hour)."""
    region: str
    instrument: str | None
    zone: str
    zone_stated: bool
    cells: tuple[HourCell | None, ...]


@dataclass(frozen=True)
class HoursView:
    model_id: str
    board: str
    protocol: str
    window: str
    since: float
    dataset: str | None
    datasets: list[str]
    metric: str
    metrics: list[str]
    excluded: str | None  # the registry's reason the metric is not shown for this model
    rows: dict[str, list[HourRow]]  # clock -> its rows


def _chosen_protocol(rows: list[Observation], registry: Registry, model_id: str) -> tuple[str, str] | None:
    info = views.model_info(registry, model_id)
    if info is not None:
        return info.board, info.protocol
    if not rows:
        return None
    return Counter((r.board, r.protocol) for r in rows).most_common(1)[0][0]


def _attempts_per_dataset(source: Source, window: str, model_id: str) -> Counter:
    """The model's attempts per dataset in the window under the current method (the leaderboard's
    series, so only the chosen dataset's rows are then read)."""
    series = {(r.dataset, r.region, r.instrument): r.attempts for r in views.board_rows(source, window)
              if r.model_id == model_id and r.method_version == METHOD_VERSION}
    counts: Counter = Counter()
    for (dataset, _, _), attempts in series.items():
        counts[dataset] += attempts
    return counts


def hours_view(source: Source, registry: Registry, model_id: str, window: str, dataset: str | None,
               metric: str | None, zones: dict[str, str], now: float | None = None) -> HoursView:
    """The model's hours on both clocks; a 404 for a model neither registered nor measured in the
    window, a 400 for a metric its protocol does not have."""
    since = leaderboard.since(window, now)
    counts = _attempts_per_dataset(source, window, model_id)
    dataset = dataset or (min(counts, key=lambda d: (-counts[d], d)) if counts else None)
    rows = [r for r in source.observations(RowFilter(since=since, models=(model_id,),
                                                     datasets=(dataset,) if dataset else ()))
            if not r.emulator and r.method_version == METHOD_VERSION]
    found = _chosen_protocol(rows, registry, model_id)
    if found is None:
        raise HTTPException(404, f"no model {model_id!r}: neither registered nor measured in the last {window}")
    board, protocol = found
    rows = [r for r in rows if r.protocol == protocol]
    metrics = [spec.name for spec in for_protocol(protocol, headline_only=True)]
    metric = metric or ranked_metric(protocol) or ""
    if metric not in metrics:
        raise HTTPException(400, f"metric must be one of {', '.join(metrics)} for {model_id}; got {metric!r}")
    info = views.model_info(registry, model_id)
    exclusion = info.excluded(metric) if info else None
    chosen = [r for r in rows if r.dataset == dataset] if exclusion is None else []
    members: dict[SeriesKey, list[Observation]] = {}
    for r in chosen:
        members.setdefault(series_key(r), []).append(r)
    shown: dict[str, list[HourRow]] = {clock: [] for clock in CLOCKS}
    for key, kept in sorted(members.items()):
        data = group(kept)[key]
        started = [r.started_at for r in kept]
        for clock in CLOCKS:
            zone = UTC if clock == "utc" else zone_of(key.region, zones)
            at = {c.hour: c for c in by_hour(key, data, started, metric, zone)}
            shown[clock].append(HourRow(key.region, key.instrument or None, zone, key.region in zones,
                                        tuple(at.get(h) for h in HOURS)))
    return HoursView(model_id, board, protocol, window, since, dataset, sorted(set(counts) | ({dataset} - {None})),
                     metric, metrics,
                     exclusion.reason if exclusion else None, shown)


def _cell_record(c: HourCell, unit: str) -> dict:
    record = {k: v for k, v in asdict(c).items() if k not in ("region", "zone")}
    return metric_record(record, unit)


def document(view: HoursView) -> dict:
    """The API's /models/{id}/hours: every cell at its published precision (n/a under a floor: null)."""
    unit = views.UNITS[view.metric]
    return {
        "model_id": view.model_id, "board": view.board, "protocol": view.protocol, "window": view.window,
        "since": when(view.since), "generated_at": when(time.time()), "method_version": METHOD_VERSION,
        "dataset": view.dataset, "datasets": view.datasets, "metric": view.metric, "metrics": view.metrics,
        "unit": unit, "excluded": view.excluded,
        "floors": {"p50": percentile_floor(50), "p95": percentile_floor(95), "pooled_wer": MIN_N},
        **{clock: [{"region": row.region, "instrument": row.instrument, "time_zone": row.zone,
                    "time_zone_stated": row.zone_stated if clock == "local" else True,
                    "hours": [_cell_record(c, unit) for c in row.cells if c is not None]}
                   for row in view.rows[clock]] for clock in CLOCKS},
    }


CSV_COLUMNS = ("model_id", "board", "dataset", "metric", "window", "method_version", "clock", "region", "instrument",
               "time_zone", "hour", "n", "p50", "p50_low", "p50_high", "p95", "p95_low", "p95_high", "attempts",
               "pooled_wer", "pooled_wer_low", "pooled_wer_high", "wer_clips", "utterances", "ticks")


def to_csv(doc: dict) -> str:
    """One line per clock, series and hour that has rows; intervals as _low and _high columns."""
    out = io.StringIO()
    w = csv.DictWriter(out, CSV_COLUMNS, lineterminator="\n")
    w.writeheader()
    for clock in CLOCKS:
        for row in doc[clock]:
            for h in row["hours"]:
                ci = {f"{name}_{side}": (h[f"{name}_ci" if name != "pooled_wer" else "wer_ci"] or (None, None))[i]
                      for name in ("p50", "p95", "pooled_wer") for i, side in enumerate(("low", "high"))}
                w.writerow({**{k: doc[k] for k in ("model_id", "board", "dataset", "metric", "window", "method_version")},
                            "clock": clock, "region": row["region"], "instrument": row["instrument"],
                            "time_zone": row["time_zone"], **ci,
                            **{k: h[k] for k in ("hour", "n", "p50", "p95", "attempts", "pooled_wer", "wer_clips",
                                                 "utterances", "ticks")}})
    return out.getvalue()


def heat_levels(rows: list[HourRow], statistic: str) -> dict[tuple[int, int], int]:
    """(row index, hour) -> the cell's colour step, 0 (the page's smallest figure of `statistic`) to
    HEAT_LEVELS - 1 (its largest); cells whose figure is n/a have none."""
    values = {(i, h): getattr(c, statistic) for i, row in enumerate(rows) for h, c in enumerate(row.cells)
              if c is not None and getattr(c, statistic) is not None}
    if not values:
        return {}
    low, high = min(values.values()), max(values.values())
    span = high - low
    return {k: 0 if span <= 0 else int(round((v - low) / span * (HEAT_LEVELS - 1))) for k, v in values.items()}


def _requested(request: Request) -> HoursView:
    return hours_view(request.app.state.source, request.app.state.registry, request.path_params["model_id"],
                      choice(request, "window", WINDOWS, DEFAULT_WINDOW), text(request, "dataset"),
                      choice(request, "metric", views.HEADLINE, None), request.app.state.region_zones)


def api(request: Request) -> Response:
    """The hours document; ?format=csv: one line per clock, series and hour."""
    fmt = choice(request, "format", ("json", "csv"), "json")
    doc = document(_requested(request))
    if fmt == "csv":
        return Response(to_csv(doc), media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": f'attachment; filename="voxwatch-hours-{doc["window"]}.csv"'})
    return JSONResponse(doc)


def page(request: Request) -> Response:
    """The heat map: rows are the model's regions, columns the hours of day, cells coloured by the
    chosen statistic, every figure written in its cell (and the cell's title) for reading."""
    statistic = choice(request, "statistic", STATISTICS, "p50")
    clock = choice(request, "clock", CLOCKS, "utc")
    view = _requested(request)
    rows = view.rows[clock]
    return request.app.state.templates.TemplateResponse(request, "hours.html", dict(
        view=view, rows=rows, clock=clock, statistic=statistic, statistics=STATISTICS, clocks=CLOCKS,
        windows=list(WINDOWS), hours=HOURS, levels=heat_levels(rows, statistic), unit=views.UNITS[view.metric],
        floor=percentile_floor(95 if statistic == "p95" else 50), wer_floor=MIN_N,
        query={"window": view.window, "dataset": view.dataset, "metric": view.metric}))
