"""The ranked tables of the overview and the boards: one line per series with its headline numbers,
filtered and sorted by the page's query parameters, and what the page says about its data (the
newest measurement, each dataset's provenance, the firing alerts).

Nothing here computes a statistic: each line is the series' ranked-metric MetricRow (and its
connect_ms row) as the leaderboard made it, ranked by metrics.ranking over every series of the
window, so a filter hides lines but never changes a rank (the rank is the one the API and CLI
publish). A speaker or accent is not such a filter: it selects the board (the leaderboard over
those clips' rows, ranked among them), as the API's and CLI's own speaker and accent do. Sorting is a presentation order: by the chosen column, lines without a value last, ties
in rank order (metrics.ranking.rank_order), so one query always gives one order.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable

from starlette.requests import Request

from voxwatch.alerts.store import Alert
from voxwatch.datasets.provenance import Provenance
from voxwatch.foundation.series_key import RowsKey
from voxwatch.boards.leaderboard import WINDOWS
from voxwatch.boards.prices import ShownPrice
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.paired import Comparison
from voxwatch.metrics.price import BOARD_FIGURE_UNIT
from voxwatch.metrics.ranking import PROTOCOL_NAMES, Rank, rank_order, ranked_metric, ranks, series_id, why_unranked
from voxwatch.metrics.series import MetricRow

from voxwatch.web.board_charts import Bar, Point, interval_bars, scatter
from voxwatch.web.params import choice, text
from voxwatch.web.views import METRIC_ORDER, UNITS, metric_head

CONNECT = "connect_ms"
SORTS: dict[str, Callable[["Entry"], object]] = {
    "rank": lambda e: e.rank,
    "model": lambda e: e.row.model_id,
    "region": lambda e: e.row.region,
    "n": lambda e: e.row.n,
    "p50": lambda e: e.row.p50,
    "p95": lambda e: e.row.p95,
    "p99": lambda e: e.row.p99,
    "connect": lambda e: e.connect.p50 if e.connect else None,
    "error_rate": lambda e: e.row.error_rate,
    "wer": lambda e: e.row.pooled_wer,
    "answers": lambda e: e.row.answer_accuracy,
    "hallucination": lambda e: e.row.hallucination_rate,
    "mos": lambda e: e.row.quality_mos,
    "price": lambda e: e.price.figure if e.price else None,
}
"""The sortable columns (`?sort=`) and the value each sorts by."""
ORDERS = ("asc", "desc")
DEFAULTS = {"window": "30d", "sort": "rank", "order": "asc"}


@dataclass(frozen=True)
class Filters:
    """The page's query: what it shows and in which order; every field is a GET parameter."""
    window: str = "30d"
    dataset: str | None = None
    condition: str | None = None
    region: str | None = None
    vendor: str | None = None
    q: str | None = None  # a model id or its start, any case (model_matches)
    speaker: str | None = None  # the board over this speaker's clips (computed from those rows)
    accent: str | None = None  # the board over clips of this accent
    sort: str = "rank"
    order: str = "asc"

    def params(self, **changes: str | None) -> dict[str, str | None]:
        """The query parameters of a link to this view with `changes` (defaults left out)."""
        values = {**asdict(self), **changes}
        return {k: (None if DEFAULTS.get(k) == v else v) for k, v in values.items()}

    def sort_link(self, column: str) -> dict[str, str | None]:
        """A column header's link: sort by it ascending, or flip the order when it is the sort already."""
        order = ("desc" if self.order == "asc" else "asc") if column == self.sort else "asc"
        return self.params(sort=column, order=order)

    def keeps(self, row: MetricRow, vendor: str, condition: str | None) -> bool:
        return ((self.dataset is None or row.dataset == self.dataset)
                and (self.condition is None or condition == self.condition)
                and (self.region is None or row.region == self.region)
                and (self.vendor is None or vendor == self.vendor)
                and (self.q is None or model_matches(self.q, row.model_id)))


def model_matches(q: str, model_id: str) -> bool:
    """The model search: `q` (any case) starts the id, or a part of it after a '/' or a cascade's
    '+' (the model name without its vendor: "nova" finds deepgram/nova-3, "deepgram/" its vendor's
    models), never an arbitrary substring ("ova" or "3" find nothing)."""
    wanted, whole = q.strip().lower(), model_id.lower()
    starts = [0] + [m.end() for m in re.finditer(r"[/+]", whole)]
    return bool(wanted) and any(whole.startswith(wanted, i) for i in starts)


def filters(request: Request) -> Filters:
    """The page's Filters from its query; a bad window, sort or order is a 400 that lists the choices."""
    return Filters(window=choice(request, "window", WINDOWS, "30d"), dataset=text(request, "dataset"),
                   condition=text(request, "condition"), region=text(request, "region"),
                   vendor=text(request, "vendor"), q=text(request, "q"), speaker=text(request, "speaker"),
                   accent=text(request, "accent"),
                   sort=choice(request, "sort", SORTS, "rank"), order=choice(request, "order", ORDERS, "asc"))


@dataclass(frozen=True)
class Entry:
    """One series' line: its ranked metric's row, its connect_ms row, its rank and its firing alerts."""
    row: MetricRow
    connect: MetricRow | None
    rank: Rank | None
    unranked: str | None
    vendor: str
    alerts: tuple[Alert, ...] = ()
    price: ShownPrice | None = None  # its model's list price in the board's unit (boards.prices)

    @property
    def key(self) -> str:
        """The line's id on the page (a chart's mark names it): model, region, method, instrument."""
        r = self.row
        return "|".join((r.model_id, r.region, r.method_version, r.instrument or ""))

    @property
    def label(self) -> str:
        r = self.row
        return f"{r.model_id} ({r.region}" + ("" if r.method_version == METHOD_VERSION else f", v{r.method_version}") + ")"


@dataclass
class RankedTable:
    board: str
    dataset: str
    protocol: str
    provenance: Provenance
    entries: list[Entry] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)  # the ranked metric's pairs among the entries

    @property
    def metric(self) -> str:
        return ranked_metric(self.protocol) or ""

    @property
    def unit(self) -> str:
        return UNITS.get(self.metric, "")


@dataclass
class ProtocolSection:
    """The tables of one protocol on one board: streaming and batch are never in one section."""
    board: str
    protocol: str
    tables: list[RankedTable] = field(default_factory=list)

    @property
    def title(self) -> str:
        metric = ranked_metric(self.protocol)
        name = PROTOCOL_NAMES.get(self.protocol, self.protocol)
        return f"{name[:1].upper()}{name[1:]}: ranked by {metric_head(metric)}, lower is better"


@dataclass(frozen=True)
class Options:
    """What the filter form offers: the values the window's rows have."""
    datasets: list[str]
    conditions: list[str]
    regions: list[str]
    vendors: list[str]
    speakers: list[str] = field(default_factory=list)  # the board's clips' speakers and accents in the window
    accents: list[str] = field(default_factory=list)


def options(rows: Iterable[MetricRow], vendor: Callable[[str], str], provenance: Callable[[str], Provenance]) -> Options:
    rows = list(rows)
    datasets = sorted({r.dataset for r in rows})
    return Options(datasets, sorted({c for d in datasets if (c := provenance(d).condition)}),
                   sorted({r.region for r in rows}), sorted({vendor(r.model_id) for r in rows}))


def sort_entries(entries: list[Entry], column: str, order: str) -> list[Entry]:
    """By `column` (lines without a value last, in rank order), ties in rank order."""
    base = sorted(entries, key=lambda e: rank_order(e.row, e.rank))
    if column == "rank" and order == "asc":
        return base
    value = SORTS[column]
    present = [e for e in base if value(e) is not None]
    present.sort(key=value, reverse=order == "desc")  # stable: equal values keep their rank order
    return present + [e for e in base if value(e) is None]


def ranked_sections(rows: list[MetricRow], comparisons: list[Comparison], f: Filters, vendor: Callable[[str], str],
                    provenance: Callable[[str], Provenance], alerts: Iterable[Alert] = (),
                    price: Callable[[str], ShownPrice | None] = lambda model_id: None) -> list[ProtocolSection]:
    """Per board and protocol, one ranked table per dataset, holding the series the filters keep,
    ranked by the window's paired comparisons; each line with its model's `price`."""
    ranked = ranks(rows, METHOD_VERSION, comparisons)  # over every series of the window: a filter never changes a rank
    connect = {series_id(r): r for r in rows if r.metric == CONNECT}
    firing: dict[RowsKey, list[Alert]] = {}
    for a in alerts:
        if a.state == "firing":
            firing.setdefault(a.rows_key, []).append(a)
    tables: dict[tuple[str, str, str], RankedTable] = {}
    for r in rows:
        if r.metric != ranked_metric(r.protocol):
            continue
        maker = vendor(r.model_id)
        if not f.keeps(r, maker, provenance(r.dataset).condition):
            continue
        table = tables.setdefault((r.board, r.protocol, r.dataset),
                                  RankedTable(r.board, r.dataset, r.protocol, provenance(r.dataset)))
        sid = series_id(r)
        table.entries.append(Entry(r, connect.get(sid), ranked.get(sid), why_unranked(r, METHOD_VERSION), maker,
                                   tuple(firing.get(sid.rows_key, ())), price(r.model_id)))
    sections: dict[tuple[str, str], ProtocolSection] = {}
    for key in sorted(tables, key=lambda k: (k[0], METRIC_ORDER.get(ranked_metric(k[1]) or "", len(METRIC_ORDER)),
                                             k[2])):
        table = tables[key]
        table.entries = sort_entries(table.entries, f.sort, f.order)
        shown = {series_id(e.row) for e in table.entries}
        table.comparisons = [c for c in comparisons if c.statistic == table.metric and c.a in shown and c.b in shown]
        sections.setdefault(key[:2], ProtocolSection(*key[:2])).tables.append(table)
    return list(sections.values())


def price_chart(metric: str, unit: str, priced: list[Point], statistic: str = "p50") -> str:
    """A latency metric's p50 (or the comparison page's chosen statistic) against each priced model's
    price in its board's unit (a board's ranking, a comparison page): cost beside speed."""
    head = metric_head(metric, statistic)
    return scatter(f"{head} against price", f"{head}, lower is better", unit, priced, dollars=True)


def chart_numbers(sections: list[ProtocolSection]) -> dict[str, int]:
    """One number per series on a page (its Entry.key: model, region, method, instrument), in the
    order the page first shows it: the same series is the same number on every chart of the page."""
    numbers: dict[str, int] = {}
    for s in sections:
        for t in s.tables:
            for e in t.entries:
                numbers.setdefault(e.key, len(numbers) + 1)
    return numbers


def charts(table: RankedTable, numbers: dict[str, int] | None = None,
           marks: Callable[[MetricRow], tuple[str, ...]] = lambda row: ()) -> dict[str, str]:
    """The table's pictures, in its order: its metric's p50 with the 95 % interval per line, on a
    table with scored words that p50 against pooled WER, and where a model has a price (in the
    board's unit, metrics.price), that p50 against the price. Each series carries its page number
    (`numbers`, chart_numbers'; else its line in the table) and its marks' words (boards.marks)."""
    number = {e.key: (numbers or {}).get(e.key) or i for i, e in enumerate(table.entries, 1)}
    bars = [Bar(e.label, e.key, e.row.p50, *(e.row.p50_ci or (None, None)), number[e.key], marks(e.row))
            for e in table.entries if e.row.p50 is not None]
    points = [Point(e.label, e.key, e.row.p50, e.row.pooled_wer, number[e.key], marks(e.row)) for e in table.entries
              if e.row.p50 is not None and e.row.pooled_wer is not None]
    head, out = metric_head(table.metric), {}
    if bars:
        out["bars"] = interval_bars(f"{head} with its 95% interval, lower is better", table.unit, bars)
    if points:
        out["scatter"] = scatter(f"{head} against pooled WER", f"{head}, lower is better", "pooled WER, lower is better",
                                 points)
    priced = [Point(e.label, e.key, e.row.p50, e.price.figure, number[e.key], marks(e.row)) for e in table.entries
              if e.row.p50 is not None and e.price is not None and e.price.figure is not None]
    if priced:
        out["price"] = price_chart(table.metric, BOARD_FIGURE_UNIT[table.board], priced)
    return out
