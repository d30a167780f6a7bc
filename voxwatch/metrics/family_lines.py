"""A dataset family's clean-against-degraded lines: for every STT series (model, region, method
version), its clean dataset against each degraded condition of the family, on the utterances
measured in both (metrics.degradation, the one statistic).

Defined here, below the store, so that one grouping serves both the page read from a store's rows
(SQLite, a span) and the lines Postgres computes as ticks finish and keeps (store.family_lines):
the page, the API and the CSV are a FamilyView, wherever it was computed. A row is anything with
the fields of FamilyRow (an Observation has them).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Protocol

from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.degradation import Degradation, Side, degradation
from voxwatch.metrics.ranking import ranked_metric

BOARD = "stt"
"""The board whose rows a family's lines compare (a degraded condition is a transform of STT input)."""
CLEAN = "clean"
"""The condition a family's degraded conditions are compared with."""


class FamilyRowLike(Protocol):
    """What the lines read of a row (store.family_reads.FamilyRow; an Observation has every field)."""
    family: str | None
    board: str
    model_id: str
    dataset: str
    region: str
    method_version: str
    protocol: str
    condition: str | None
    utterance_id: str | None
    run_id: Any  # a tick's identity: only told apart
    status: str
    substitutions: int | None
    deletions: int | None
    insertions: int | None
    ref_words: int | None
    started_at: float


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
    computed_at: float | None = None  # when the lines were computed, if kept (None: now, from the rows)


def _side(rows: list[FamilyRowLike], metric: str) -> Side:
    scored = [r.status == "ok" and None not in (r.substitutions, r.deletions, r.insertions, r.ref_words) for r in rows]
    return Side(utterances=[r.utterance_id for r in rows], ticks=[r.run_id for r in rows],
                statuses=[r.status for r in rows],
                errors=[r.substitutions + r.deletions + r.insertions if s else None for r, s in zip(rows, scored)],
                words=[r.ref_words if s else None for r, s in zip(rows, scored)],
                latency=[getattr(r, metric) if r.status == "ok" else None for r in rows])


def build(rows: Iterable[FamilyRowLike], family: str, window: str, region: str | None = None,
          computed_at: float | None = None) -> FamilyView:
    """The view from the family's rows of the window (rows of other families or boards are left out;
    rows with no utterance_id cannot be paired and count nowhere)."""
    mine = [r for r in rows if r.family == family and r.board == BOARD and r.utterance_id]
    regions = sorted({r.region for r in mine})
    mine = [r for r in mine if region is None or r.region == region]
    groups: dict[tuple[str, str, str, str], dict[tuple[str, str], list[FamilyRowLike]]] = {}
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
    return FamilyView(family, window, region, conditions, clean, regions, series, computed_at)


def to_json(view: FamilyView) -> dict:
    """The view as JSON-able values (what Postgres keeps per family, window and region)."""
    return asdict(view)


def from_json(doc: dict) -> FamilyView:
    """The view to_json wrote, with its tuples and dataclasses back."""
    def figures(d: dict) -> Degradation:
        ci = d["wer_diff_ci"]
        return Degradation(**{**d, "wer_diff_ci": tuple(ci) if ci is not None else None})

    series = [FamilySeries(s["model_id"], s["region"], s["method_version"], s["protocol"], s["latency_metric"],
                           [Comparison(c["clean_dataset"], c["dataset"], c["condition"], figures(c["figures"]))
                            for c in s["comparisons"]]) for s in doc["series"]]
    return FamilyView(doc["family"], doc["window"], doc["region"], [tuple(c) for c in doc["conditions"]],
                      list(doc["clean_datasets"]), list(doc["regions"]), series, doc.get("computed_at"))
