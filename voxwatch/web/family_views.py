"""The clean-vs-degraded view of a dataset family (/board/stt/family/<family>, /api/v1/families/<family>):
for every STT series (model, region, method version), its clean dataset against each degraded
condition of the family on the utterances measured in both (metrics.degradation, the one definition).

Nothing here computes a statistic: the view is metrics.family_lines.build's, over the family's rows
of the window (SQLite: its observations) or as Postgres computed it when the last tick finished
(store.family_lines: a year's store holds millions of a family's rows a month). The page, the API
and the CSV are this view.
"""

from __future__ import annotations

import csv
import io
import time
from dataclasses import asdict, fields

from voxwatch.boards.leaderboard import since
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.published import degradation_record, when
from voxwatch.metrics.degradation import MIN_PAIRED_UTTERANCES, Degradation
from voxwatch.metrics.family_lines import BOARD, CLEAN, Comparison, FamilySeries, FamilyView, build

from voxwatch.web.source import Source

__all__ = ["BOARD", "CLEAN", "Comparison", "FamilySeries", "FamilyView", "build", "family_view", "lines", "document",
           "to_csv"]


def family_view(source: Source, family: str, window: str, region: str | None = None) -> FamilyView:
    """The family's view over a rolling window (the source's kept lines, or computed from its rows)."""
    return source.family_view(family, window, since(window), region)


def lines(view: FamilyView) -> list[dict]:
    """One flat record per series and degraded condition: what the API lists and the CSV has."""
    return [{"model_id": s.model_id, "region": s.region, "method_version": s.method_version, "protocol": s.protocol,
             "latency_metric": s.latency_metric, "clean_dataset": c.clean_dataset, "dataset": c.dataset,
             "condition": c.condition, **asdict(c.figures)} for s in view.series for c in s.comparisons]


def document(view: FamilyView) -> dict:
    """The API's JSON of a family (/api/v1/families/<family>)."""
    return {"family": view.family, "window": view.window, "region": view.region,
            "generated_at": when(time.time() if view.computed_at is None else view.computed_at),
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
