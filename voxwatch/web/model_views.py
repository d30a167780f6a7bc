"""What a model's page shows: its current figures (the leaderboard's 30-day rows, as the boards and the
API show them) and its daily history as charts, the headline metric first, then pooled WER and the
error and timeout rates. Nothing is computed here: every number is a leaderboard row's or a daily
figure's (web/daily.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import groupby

from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.ranking import Rank, ranked_metric, ranks, series_id, why_unranked
from voxwatch.metrics.series import MetricRow

from voxwatch.web import views
from voxwatch.web.chart import PALETTE, Line, Marker, line_chart, swatch

SUMMARY_WINDOW = "30d"
CONNECT = "connect_ms"


@dataclass(frozen=True)
class SummaryLine:
    """One series' current figures: its ranked (headline) metric line, its connect line, its rank."""
    headline: MetricRow
    connect: MetricRow | None
    rank: Rank | None
    unranked: str | None

    @property
    def current(self) -> bool:
        return self.headline.method_version == METHOD_VERSION


def summary(source, model_id: str) -> list[SummaryLine]:
    """Each of the model's series in the 30-day window: dataset, then the current method first, then region."""
    rows = views.board_rows(source, SUMMARY_WINDOW)
    ranked = ranks(rows, METHOD_VERSION, views.board_comparisons(source, SUMMARY_WINDOW))
    out = []
    mine = sorted((r for r in rows if r.model_id == model_id), key=series_id)
    for key, members in groupby(mine, key=series_id):
        members = list(members)
        by_metric = {r.metric: r for r in members}
        headline = by_metric.get(ranked_metric(members[0].protocol) or "", members[0])
        out.append(SummaryLine(headline, by_metric.get(CONNECT) if headline.metric != CONNECT else None,
                               ranked.get(key), why_unranked(headline, METHOD_VERSION)))
    out.sort(key=lambda s: (s.headline.dataset, not s.current, s.headline.region, s.headline.method_version,
                            s.headline.instrument or ""))
    return out


@dataclass
class Chart:
    kind: str  # "metric", "wer" or "rates"
    metric: str  # the metric, or pooled_wer / error_rate
    dataset: str
    title: str
    unit: str
    lines: list[Line] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)  # "us-east: method v5 -> v6 on 2026-11-20"
    svg: str | None = None

    @property
    def legend(self) -> list[tuple[str, str]]:
        return [(swatch(line), line.label) for line in self.lines]


@dataclass(frozen=True)
class _Series:
    region: str
    method_version: str
    instrument: str | None
    lines: list[tuple[str, bool, list[tuple[str, float]]]]  # (what, dashed, [(day, value)])


def _label(s: _Series) -> str:
    return f"{s.region}{f' ({s.instrument})' if s.instrument else ''} · method v{s.method_version}" + (
        "" if s.method_version == METHOD_VERSION else " (superseded)")


def method_starts(h: views.History, dataset: str) -> dict[tuple[str, str | None], dict[str, str]]:
    """Per (region, instrument) of a dataset: the first day of each method version's attempts (the day
    the boards' method note gives, web/views.method_notes)."""
    starts: dict[tuple[str, str | None], dict[str, str]] = {}
    for f in h.figures:  # every day with an attempt, oldest first within a series
        if f.dataset == dataset:
            first = starts.setdefault((f.region, f.instrument), {})
            first[f.method_version] = min(first.get(f.method_version, f.day), f.day)
    return starts


def _draw(chart: Chart, series: list[_Series], h: views.History) -> Chart:
    """Colour per region (and instrument), lighter for a superseded method; a marker where a region's
    method version changes (the first day of the newer version's attempts)."""
    days = h.days
    index = {day: i for i, day in enumerate(days)}
    colours: dict[tuple, str] = {}
    for s in series:
        colour = colours.setdefault((s.region, s.instrument), PALETTE[len(colours) % len(PALETTE)])
        for what, dashed, points in s.lines:
            shown = [(index[d], v) for d, v in points if d in index]
            if shown:
                chart.lines.append(Line(f"{_label(s)} {what}".strip(), colour, dashed, shown,
                                        faded=s.method_version != METHOD_VERSION))
    for (region, instrument), starts in method_starts(h, chart.dataset).items():
        if (region, instrument) not in colours:
            continue
        order = sorted((m for m in starts if starts[m] in index), key=starts.get)
        for old, new in zip(order, order[1:]):
            chart.markers.append(Marker(index[starts[new]], f"method v{new}"))
            chart.changes.append(f"{region}{f' ({instrument})' if instrument else ''}: method v{old} -> v{new} "
                                 f"from {starts[new]}; the series are never pooled")
    chart.markers = sorted(set(chart.markers), key=lambda m: m.index)
    if chart.lines:
        chart.svg = line_chart(chart.title, chart.unit, days, chart.lines, chart.markers)
    return chart


def metric_charts(h: views.History) -> list[Chart]:
    """One chart per headline metric and dataset (the specs' order: the ranked metric first), p50 solid, p95 dashed."""
    out = []
    for (metric, dataset), group in groupby(views.history_series(h), key=lambda s: (s["metric"], s["dataset"])):
        group = list(group)
        series = [_Series(s["region"], s["method_version"], s["instrument"],
                          [(q, q == "p95", [(p["day"], p[q]) for p in s["points"] if p[q] is not None])
                           for q in ("p50", "p95")]) for s in group]
        chart = Chart("metric", metric, dataset, f"{metric} on {dataset}: daily p50 and p95", group[0]["unit"])
        out.append(_draw(chart, series, h))
    return out


def _figure_charts(h: views.History, kind: str, title: str, fields: tuple[tuple[str, bool], ...]) -> list[Chart]:
    """One chart per dataset of daily figures (as %), a line per series and field; none where no day has a value."""
    out = []
    for dataset, group in groupby(views.figure_series(h), key=lambda s: s["dataset"]):
        series = [_Series(s["region"], s["method_version"], s["instrument"],
                          [(name.replace("_", " ") if len(fields) > 1 else "", dashed,
                            [(p["day"], 100 * p[name]) for p in s["points"] if p[name] is not None])
                           for name, dashed in fields]) for s in group]
        chart = _draw(Chart(kind, fields[0][0], dataset, title.format(dataset=dataset), "%"), series, h)
        if chart.svg:
            out.append(chart)
    return out


def charts(h: views.History, metric: str | None) -> list[Chart]:
    """The page's charts in order: each headline metric, then (unless one metric is asked for) pooled WER
    and the error and timeout rates."""
    out = metric_charts(h)
    if metric is None:
        out += _figure_charts(h, "wer", "pooled WER on {dataset}: daily, %", (("pooled_wer", False),))
        out += _figure_charts(h, "rates", "error and timeout rates on {dataset}: daily, % of attempts",
                              (("error_rate", False), ("timeout_rate", True)))
    return out
