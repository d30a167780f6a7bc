"""The clean-vs-degraded view of a dataset family (/board/stt/family/<family>, /api/v1/families/<family>):
for every STT series (model, region, method version), its clean dataset against each degraded
condition of the family on the utterances measured in both (metrics.degradation, the one definition).

Nothing here computes a statistic: it reads the family's rows of the window (Postgres: only the
columns it needs, in SQL: store.family_reads; SQLite: its observations), splits them into each
series' clean and degraded sides (a row's utterance is its utterance_id: the same sentence in every
condition) and hands each pair to metrics.degradation. The page, the API and the CSV are this view.
"""

from __future__ import annotations

import csv
import io
import time
from dataclasses import asdict, dataclass, field, fields

from voxwatch.boards.leaderboard import since
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.published import degradation_record, when
from voxwatch.metrics.degradation import MIN_PAIRED_UTTERANCES, Degradation, Side, degradation
from voxwatch.metrics.ranking import ranked_metric
from voxwatch.foundation.observation import Observation
from voxwatch.store.family_reads import BOARD as FAMILY_BOARD, FamilyRow

from voxwatch.web.source import Source

BOARD = FAMILY_BOARD
CLEAN = "clean"
"""The condition a family's degraded conditions are compared with."""


@dataclass(frozen=True)
class Comparison:
    """One degraded dataset of the family against one clean dataset, for one series."""
    clean_dataset: str
    dataset: str
    condition: str
    figures: Degradation


@dataclass
class FamilySeries:
    model_id: str
    region: str
    method_version: str
    protocol: str
    latency_metric: str  # the protocol's headline latency (the metric its board ranks by)
    comparisons: list[Comparison] = field(default_factory=list)


@dataclass(frozen=True)
class FamilyView:
    family: str
    window: str
    region: str | None
    conditions: list[tuple[str, str]]  # (degraded dataset, condition) measured in the window, by name
    clean_datasets: list[str]
    regions: list[str]  # every region with rows of the family (the filter's options)
    series: list[FamilySeries]


def _side(rows: list[Observation | FamilyRow], metric: str) -> Side:
    scored = [r.status == "ok" and None not in (r.substitutions, r.deletions, r.insertions, r.ref_words) for r in rows]
    return Side(utterances=[r.utterance_id for r in rows], ticks=[r.run_id for r in rows],
                statuses=[r.status for r in rows],
                errors=[r.substitutions + r.deletions + r.insertions if s else None for r, s in zip(rows, scored)],
                words=[r.ref_words if s else None for r, s in zip(rows, scored)],
                latency=[getattr(r, metric) if r.status == "ok" else None for r in rows])


def build(rows: list[Observation | FamilyRow], family: str, window: str, region: str | None = None) -> FamilyView:
    """The view from the family's rows of the window (rows of other families or boards are left out;
    rows with no utterance_id cannot be paired and count nowhere)."""
    mine = [r for r in rows if r.family == family and r.board == BOARD and r.utterance_id]
    regions = sorted({r.region for r in mine})
    mine = [r for r in mine if region is None or r.region == region]
    groups: dict[tuple[str, str, str, str], dict[tuple[str, str], list[Observation | FamilyRow]]] = {}
    for r in mine:
        key = (r.model_id, r.region, r.method_version, r.protocol)
        groups.setdefault(key, {}).setdefault((r.dataset, r.condition or ""), []).append(r)
    conditions = sorted({d for g in groups.values() for d in g if d[1] != CLEAN})
    clean = sorted({d for g in groups.values() for d, c in g if c == CLEAN})
    series = []
    for (model_id, reg, method, protocol), by_dataset in sorted(groups.items()):
        metric = ranked_metric(protocol) or "ttfs_ms"
        s = FamilySeries(model_id, reg, method, protocol, metric)
        for clean_dataset in clean:
            base = by_dataset.get((clean_dataset, CLEAN))
            if base is None:
                continue
            for dataset, condition in conditions:
                other = by_dataset.get((dataset, condition))
                if other is not None:
                    s.comparisons.append(Comparison(clean_dataset, dataset, condition,
                                                    degradation(_side(base, metric), _side(other, metric))))
        if s.comparisons:
            series.append(s)
    series.sort(key=lambda s: (s.method_version != METHOD_VERSION, s.model_id, s.region, s.method_version))
    return FamilyView(family, window, region, conditions, clean, regions, series)


def family_view(source: Source, family: str, window: str, region: str | None = None) -> FamilyView:
    """The family's view over a rolling window of the source's rows."""
    return build(source.family_rows(family, since(window)), family, window, region)


def lines(view: FamilyView) -> list[dict]:
    """One flat record per series and degraded condition: what the API lists and the CSV has."""
    return [{"model_id": s.model_id, "region": s.region, "method_version": s.method_version, "protocol": s.protocol,
             "latency_metric": s.latency_metric, "clean_dataset": c.clean_dataset, "dataset": c.dataset,
             "condition": c.condition, **asdict(c.figures)} for s in view.series for c in s.comparisons]


def document(view: FamilyView) -> dict:
    """The API's JSON of a family (/api/v1/families/<family>)."""
    return {"family": view.family, "window": view.window, "region": view.region, "generated_at": when(time.time()),
            "method_version": METHOD_VERSION, "min_paired_utterances": MIN_PAIRED_UTTERANCES,
            "clean_datasets": view.clean_datasets,
            "conditions": [{"dataset": d, "condition": c} for d, c in view.conditions],
            "regions": view.regions, "rows": [degradation_record(line) for line in lines(view)]}


SERIES_FIELDS = ("model_id", "region", "method_version", "protocol", "latency_metric", "clean_dataset", "dataset",
                 "condition")
"""A line's own columns, before the figures (metrics.degradation.Degradation's fields)."""
CSV_COLUMNS = [*SERIES_FIELDS, *(n for f in fields(Degradation)
                                 for n in ((f"{f.name}_low", f"{f.name}_high") if f.name.endswith("_ci") else (f.name,)))]


def to_csv(view: FamilyView) -> str:
    """The same lines as CSV, the interval as wer_diff_ci_low and wer_diff_ci_high."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for line in lines(view):
        ci = line.pop("wer_diff_ci")
        writer.writerow({**line, "wer_diff_ci_low": ci[0] if ci else None, "wer_diff_ci_high": ci[1] if ci else None})
    return buf.getvalue()
