"""What the pages and the API show, built from a Source: one builder per view, shared by HTML and JSON.

The board is split per dataset (clean and degraded are never pooled), then per series (model,
region, method version, instrument), each with one line per headline metric. A metric is n/a with
its reason: the registry's exclusion, or fewer than MIN_N samples. A (model, dataset, region) seen
under more than one method version in the window gets a note with the date of each change.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, timezone
from itertools import groupby

from voxwatch.boards import leaderboard
from voxwatch.boards.marks import model_marks
from voxwatch.boards.prices import price_fields
from voxwatch.boards.comparisons import ABOUT, SERIES_ABOUT, published
from voxwatch.boards.comparisons import involving as board_comparisons_involving
from voxwatch.foundation.series_key import RowsKey, SeriesKey
from voxwatch.metrics.series import MetricRow
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.preliminary import row_reason
from voxwatch.metrics.paired import Comparison
from voxwatch.metrics.published import metric_record, when
from voxwatch.metrics.ranking import (Rank, rank_fields, rank_order, ranked_metric, ranking_note, ranks, series_id,
                                      why_unranked)
from voxwatch.metrics.specs import METRICS, for_protocol
from voxwatch.metrics.series import MIN_N, percentile_floor
from voxwatch.providers.lifecycle import Standing
from voxwatch.providers.registry import ModelInfo, Registry, RegistryError
from voxwatch.store.row_filter import RowFilter

from voxwatch.web.daily import DailyFigures, DailyPoint
from voxwatch.web.source import Alert, AlertsUnavailable, Source

HISTORY_DAYS = 30
RESOLVED_SHOWN_S = 7 * 86400
"""The alerts view lists every open alert and those resolved in the last seven days."""
UNITS = {m.name: m.unit for m in METRICS}
DESCRIPTIONS = {m.name: m.description for m in METRICS}
LABELS = {m.name: m.title for m in METRICS}


def metric_head(metric: str, statistic: str = "p50") -> str:
    """A column head or an axis title in words: "TTFS p50 (ms)", not the column name "ttfs_ms p50"."""
    unit = UNITS.get(metric, "")
    return f"{LABELS.get(metric, metric)} {statistic}" + (f" ({unit})" if unit == "ms" else "")
METRIC_ORDER = {m.name: i for i, m in enumerate(METRICS)}
HEADLINE = sorted({m.name for m in METRICS if m.headline})


def na_reason(row: MetricRow) -> str | None:
    """Why a metric line shows no statistics, or None when it has them."""
    if row.note:
        return f"excluded: {row.note}"
    if row.n < MIN_N:
        return f"n < {MIN_N} (n = {row.n})"
    return None


def field_na(row: MetricRow, field: str) -> str:
    """Why one statistic of a line that has statistics is n/a (METHOD "Aggregates": its own floor)."""
    if field in ("p95", "p95_ci"):
        return f"n < {percentile_floor(95)}"
    if field in ("p99", "p99_ci"):
        return f"n < {percentile_floor(99)}"
    return f"n < {MIN_N}"


@dataclass
class Series:
    """One leaderboard series on one dataset: its per-attempt figures once, then a line per metric."""
    key: SeriesKey
    first: MetricRow  # carries the series-wide figures (attempts, error and timeout rates, pooled WER)
    metrics: list[MetricRow]
    method_note: str | None = None
    rank: Rank | None = None
    unranked: str | None = None  # why it has no rank


@dataclass
class DatasetTable:
    dataset: str
    series: list[Series] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class MethodNote:
    model_id: str
    dataset: str
    region: str
    changes: tuple[tuple[str, str, str], ...]  # (from version, to version, ISO date of the first row of "to")

    @property
    def text(self) -> str:
        steps = ", ".join(f"v{a} -> v{b} on {day}" for a, b, day in self.changes)
        return f"method changed {steps}: series not pooled"


def clip_filter(speaker: str | None, accent: str | None) -> RowFilter | None:
    """The rows of one speaker's or one accent's clips (a board over them is computed from those rows
    by metrics.series, as every board is); None: every clip (the stored aggregates)."""
    if not speaker and not accent:
        return None
    return RowFilter(speakers=(speaker,) if speaker else (), accents=(accent,) if accent else ())


def board_rows(source: Source, window: str, board: str | None = None, dataset: str | None = None,
               clips: RowFilter | None = None) -> list[MetricRow]:
    """A board's leaderboard rows (of one dataset), over every clip or over the clips `clips` selects."""
    rows = source.leaderboard(window) if clips is None else source.leaderboard(window, clips)
    return [r for r in rows if (board is None or r.board == board) and (dataset is None or r.dataset == dataset)]


def board_comparisons(source: Source, window: str, board: str | None = None, dataset: str | None = None,
                      clips: RowFilter | None = None) -> list[Comparison]:
    """The paired comparisons a board's ranks come from (of one dataset), over the clips `clips` selects."""
    found = source.comparisons(window) if clips is None else source.comparisons(window, clips)
    return [c for c in found if (board is None or c.a.board == board) and (dataset is None or c.a.dataset == dataset)]


def method_notes(source: Source, rows: list[MetricRow], window: str) -> list[MethodNote]:
    """One note per (model, dataset, region) whose rows in the window carry more than one method version."""
    versions: dict[tuple[str, str, str], set[str]] = {}
    for r in rows:
        versions.setdefault((r.model_id, r.dataset, r.region), set()).add(r.method_version)
    changed = {k: v for k, v in versions.items() if len(v) > 1}
    if not changed:
        return []
    series = [RowsKey(*k, m) for k, v in changed.items() for m in sorted(v)]
    first = source.first_seen(series, leaderboard.since(window))
    notes = []
    for (model_id, dataset, region), methods in sorted(changed.items()):
        ordered = sorted(methods, key=lambda m: first.get(RowsKey(model_id, dataset, region, m), float("inf")))
        changes = tuple((a, b, _date(first[RowsKey(model_id, dataset, region, b)]))
                        for a, b in zip(ordered, ordered[1:]) if RowsKey(model_id, dataset, region, b) in first)
        if changes:
            notes.append(MethodNote(model_id, dataset, region, changes))
    return notes


def dataset_tables(rows: list[MetricRow], notes: list[MethodNote],
                   ranked: dict[SeriesKey, Rank | None]) -> list[DatasetTable]:
    """The board as one table per dataset, each protocol's series in rank order. `ranked`: the ranks
    metrics.ranking gave over every series of the window, so rows a filter left out change none."""
    by_key = {(n.model_id, n.dataset, n.region): n.text for n in notes}
    tables: dict[str, DatasetTable] = {}
    for key, members in groupby(rows, key=series_id):
        members = list(members)
        first = members[0]
        table = tables.setdefault(first.dataset, DatasetTable(first.dataset))
        table.series.append(Series(key, first, members, by_key.get((first.model_id, first.dataset, first.region)),
                                   ranked.get(key), why_unranked(first, METHOD_VERSION)))
    for table in tables.values():  # stream and batch apart, ranked first, then by median, n/a last
        table.series.sort(key=lambda s: (METRIC_ORDER.get(s.first.metric, len(METRIC_ORDER)),
                                         rank_order(s.first, s.rank)))
    for n in notes:
        if n.dataset in tables:
            tables[n.dataset].notes.append(f"{n.model_id} ({n.region}): {n.text}")
    return [tables[d] for d in sorted(tables)]


def leaderboard_document(source: Source, registry: Registry, window: str, board: str | None,
                         dataset: str | None, rows: list[MetricRow] | None = None, speaker: str | None = None,
                         accent: str | None = None, comparisons: list[Comparison] | None = None) -> dict:
    """The JSON of a board (the API's /leaderboard and the board's ?format=json): each row with its
    model's status on the registry's day (a retired model's rows stay, marked retired). `rows`: the
    board's rows when the caller computed them (the CLI over a span of its own), else the source's,
    over one speaker's or accent's clips when given (ranked among those rows); `comparisons` the
    paired comparisons of the same rows when the caller computed them."""
    clips = clip_filter(speaker, accent)
    rows = board_rows(source, window, board, dataset, clips) if rows is None else rows
    if comparisons is None:
        comparisons = board_comparisons(source, window, board, dataset, clips)
    notes = method_notes(source, rows, window)
    ranked = ranks(rows, METHOD_VERSION, comparisons)
    return {
        "board": board, "window": window, "dataset": dataset, "speaker": speaker, "accent": accent,
        "generated_at": when(time.time()),
        "method_version": METHOD_VERSION, "status_date": registry.day.isoformat(),
        "ranks": ranking_note(), "intervals": {"series": SERIES_ABOUT, "comparisons": ABOUT},
        "rows": [metric_record({**asdict(r), "na_reason": na_reason(r), **rank_fields(ranked.get(series_id(r))),
                                "ranked_by": ranked_metric(r.protocol),
                                **model_marks(registry, r.model_id, row_reason(r)).row_fields(),
                                **price_fields(registry, r.model_id)},
                               UNITS.get(r.metric, "")) for r in rows],
        "comparisons": published(comparisons),
        "notes": [{"model_id": n.model_id, "dataset": n.dataset, "region": n.region, "text": n.text,
                   "changes": [{"from": a, "to": b, "on": day} for a, b, day in n.changes]} for n in notes],
    }


def comparisons_document(source: Source, window: str, board: str | None, dataset: str | None,
                         model: str | None) -> dict:
    """The API's /comparisons: the window's paired comparisons (of a board, a dataset, a model), with
    what they are about; "found" holds the comparisons themselves for a CSV (the caller drops it)."""
    found = board_comparisons_involving(board_comparisons(source, window, board, dataset), [model] if model else [])
    return {"board": board, "window": window, "dataset": dataset, "model": model, "generated_at": when(time.time()),
            "method_version": METHOD_VERSION, "about": ABOUT, "ranks": ranking_note(),
            "comparisons": published(found), "found": found}


def model_standing(registry: Registry, model_id: str) -> Standing | None:
    """A registered model's status on the registry's day (None for an id the registry no longer has)."""
    info = model_info(registry, model_id)
    return registry.standing(info) if info else None


def model_info(registry: Registry, model_id: str) -> ModelInfo | None:
    try:
        return registry.resolve(model_id)
    except RegistryError:
        return None


def vendor(info: ModelInfo | None, model_id: str) -> str:
    """A model's vendor: the registry's, or for an id it no longer has, the id's first part."""
    return info.vendor if info else model_id.split("/", 1)[0]


REGISTRY_FIELDS = ("status", "notice", "checked", "source", "deprecated", "shutdown", "successor", "session_limit_s")


def registry_entry(registry: Registry, info: ModelInfo | None) -> dict:
    """A model's registry facts as the API shows them: its status on the registry's day, and when and
    where it was last checked against its vendor, with any deprecation, shutdown and successor."""
    if info is None:
        return dict.fromkeys(REGISTRY_FIELDS)
    standing = registry.standing(info)
    return {"status": standing.status, "notice": standing.notice, "checked": _iso(info.checked),
            "source": info.source, "deprecated": _iso(info.deprecated), "shutdown": _iso(info.shutdown),
            "successor": info.successor, "session_limit_s": info.session_limit_s}


def models_document(source: Source, registry: Registry) -> dict:
    """Every model with rows in the last 30 days, with what it was measured on and its registry entry."""
    window = "30d"
    models: dict[str, dict] = {}
    for r in source.leaderboard(window):
        m = models.setdefault(r.model_id, {"model_id": r.model_id, "board": r.board, "datasets": set(), "regions": set(),
                                           "method_versions": set()})
        m["datasets"].add(r.dataset)
        m["regions"].add(r.region)
        m["method_versions"].add(r.method_version)
    out = []
    for model_id in sorted(models):
        m = models[model_id]
        info = model_info(registry, model_id)
        out.append({**m, "datasets": sorted(m["datasets"]), "regions": sorted(m["regions"]),
                    "method_versions": sorted(m["method_versions"]),
                    "vendor": vendor(info, model_id), "baseline": bool(info and info.baseline),
                    "protocol": info.protocol if info else None, **registry_entry(registry, info),
                    "exclusions": [{"metric": e.metric, "reason": e.reason} for e in info.exclusions] if info else []})
    return {"window": window, "method_version": METHOD_VERSION, "status_date": registry.day.isoformat(), "models": out}


@dataclass(frozen=True)
class History:
    model_id: str
    since: float
    days: list[str]  # every UTC day of the span, oldest first
    points: list[DailyPoint]
    figures: list[DailyFigures]  # each series' days: attempts, error and timeout rates, pooled WER
    excluded: dict[str, str]  # metric -> the registry's reason (no chart for it)
    metrics: list[str]  # the headline metrics the model has points for (before filtering)
    datasets: list[str]


def history(source: Source, registry: Registry, model_id: str, metric: str | None = None,
            dataset: str | None = None, now: float | None = None) -> History:
    now = time.time() if now is None else now
    since = now - HISTORY_DAYS * 86400
    found = source.history(model_id, since)
    points = found.points
    info = model_info(registry, model_id)
    excluded = {e.metric: e.reason for e in info.exclusions} if info else {}
    metrics = list(dict.fromkeys(p.metric for p in points))
    datasets = sorted({p.dataset for p in points})
    kept = [p for p in points if (metric is None or p.metric == metric) and (dataset is None or p.dataset == dataset)
            and p.metric not in excluded]
    first_day, last_day = int(since // 86400), int(now // 86400)
    days = [datetime.fromtimestamp(d * 86400, timezone.utc).date().isoformat() for d in range(first_day, last_day + 1)]
    shown_excluded = {m: r for m, r in excluded.items() if m in metrics and (metric is None or m == metric)}
    figures = [f for f in found.figures if dataset is None or f.dataset == dataset]
    return History(model_id, since, days, kept, figures, shown_excluded, metrics, datasets)


def history_series(h: History) -> list[dict]:
    """The points grouped into series (metric, dataset, region, method version, instrument), oldest first;
    the metrics in the specs' order (each protocol's headline, the one it is ranked by, first)."""
    def key(p: DailyPoint) -> tuple:
        return METRIC_ORDER[p.metric], p.metric, p.dataset, p.region, p.method_version, p.instrument or ""

    out = []
    for (_, metric, dataset, region, method, instrument), pts in groupby(
            sorted(h.points, key=lambda p: (key(p), p.day)), key=key):
        out.append({"metric": metric, "unit": UNITS[metric], "dataset": dataset, "region": region,
                    "method_version": method, "instrument": instrument or None,
                    "points": [metric_record({"day": p.day, "n": p.n, "p50": p.p50, "p95": p.p95}, UNITS[metric])
                               for p in pts]})
    return out


def figure_series(h: History) -> list[dict]:
    """Each series' daily attempts, rates and pooled WER (dataset, region, method version, instrument), oldest first."""
    def key(f: DailyFigures) -> tuple:
        return f.dataset, f.region, f.method_version, f.instrument or ""

    return [{"dataset": dataset, "region": region, "method_version": method, "instrument": instrument or None,
             "points": [metric_record({"day": f.day, **asdict(f.figures)}, "fraction") for f in days]}
            for (dataset, region, method, instrument), days in groupby(
                sorted(h.figures, key=lambda f: (key(f), f.day)), key=key)]


def history_document(h: History) -> dict:
    """The API's /models/{id}/history: figures at their published precision, `since` an ISO time."""
    return {"model_id": h.model_id, "days": HISTORY_DAYS, "since": when(h.since), "method_version": METHOD_VERSION,
            "series": history_series(h), "figures": figure_series(h),
            "excluded": [{"metric": m, "reason": r} for m, r in sorted(h.excluded.items())]}


def headline_metrics(registry: Registry, model_id: str) -> list[str]:
    info = model_info(registry, model_id)
    return [m.name for m in for_protocol(info.protocol, headline_only=True)] if info else []


@dataclass(frozen=True)
class AlertsView:
    available: bool
    reason: str | None
    alerts: list[Alert]


def alerts(source: Source, now: float | None = None) -> AlertsView:
    now = time.time() if now is None else now
    try:
        return AlertsView(True, None, source.alerts(now - RESOLVED_SHOWN_S))
    except AlertsUnavailable as exc:
        return AlertsView(False, str(exc), [])


def _iso(day: date | None) -> str | None:
    return day.isoformat() if day else None


def _date(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).date().isoformat()
