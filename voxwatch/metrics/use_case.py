"""A model's figures over a use case, and the latency-accuracy Pareto frontier (METHOD "Use cases and
the frontier"): defined once for the comparison pages, their API and CSV.

A use case is a named set of datasets (the clean sets, the phone-line sets, one language's...).
A model's figure over it is not an average of its per-dataset figures: its series' rows on the
use case's datasets are pooled into one series and summarized by metrics.series as any series is
(p50 over the pooled rows, pooled WER over the pooled scored clips, the same clustered
intervals), each row's utterance labelled by its dataset and clip, so the same clip id in two
datasets is two utterances, and paired comparisons pair only the same audio. A series measured
on only some of the use case's datasets has no figure for it (a model heard only on clean audio
would otherwise be compared with one heard on clean and noisy audio).

The frontier is over points (latency, accuracy), latency lower-better and accuracy lower-better
(an error rate) unless said otherwise (a pass rate, a quality score): a point is on it when no
other point is at least as good on both and better on one, where "better" is the paired verdicts'
when the page has them (metrics.ranking.ahead): a model is never put off the frontier by a
difference its rank calls a tie.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Collection, Hashable, Iterable, Mapping, Sequence

from voxwatch.foundation.series_key import SeriesKey
from voxwatch.metrics.paired import Comparison
from voxwatch.metrics.ranking import ahead
from voxwatch.metrics.deadline_wer import ERRORS_FIELDS
from voxwatch.metrics.series import SeriesData


def pooled(parts: Mapping[str, SeriesData]) -> SeriesData:
    """One series' rows on several datasets (dataset -> its rows) as one series' columns: rows
    concatenated in dataset order, each utterance labelled (dataset, clip)."""
    names = sorted(parts)
    if not names:
        raise ValueError("nothing to pool: no dataset's rows")

    def joined(column: str) -> list:
        return [v for d in names for v in getattr(parts[d], column)]

    def optional(column: str) -> list:  # an optional column is empty or one entry per row: None where absent
        return [v for d in names for v in (getattr(parts[d], column) or [None] * len(parts[d].statuses))]

    metrics = sorted({m for d in names for m in parts[d].values})
    values = {m: [v for d in names for v in parts[d].values.get(m, [None] * len(parts[d].statuses))] for m in metrics}
    return SeriesData(statuses=joined("statuses"),
                      utterances=[f"{d}/{u}" for d in names for u in parts[d].utterances],
                      ticks=joined("ticks"), values=values, errors=joined("errors"), words=joined("words"),
                      entities_missed=optional("entities_missed"), entities_total=optional("entities_total"),
                      quality=optional("quality"), answers=optional("answers"),
                      stalls=optional("stalls"), **{name: optional(name) for name in ERRORS_FIELDS},
                      eot=optional("eot"), cutoffs=optional("cutoffs"),
                      invented_words=optional("invented_words"), invented_audio_ms=optional("invented_audio_ms"),
                      heard_s=optional("heard_s"))


@dataclass(frozen=True)
class UseCaseSeries:
    """A use case's pooled series (keyed as series are, the use case's name in the dataset's place)
    and, for each series left out, the use case's datasets it was not measured on."""
    series: dict[SeriesKey, SeriesData]
    missing: dict[SeriesKey, tuple[str, ...]]


def use_case_series(series: Mapping[SeriesKey, SeriesData], name: str, datasets: Collection[str]) -> UseCaseSeries:
    """Each series (model, region, method version, protocol, instrument) pooled over the use case's
    datasets, when it was measured on every one of them."""
    wanted = set(datasets)
    if not wanted:
        raise ValueError(f"use case {name!r} names no dataset")
    parts: dict[SeriesKey, dict[str, SeriesData]] = {}
    for key, data in series.items():
        if key.dataset in wanted:
            parts.setdefault(key._replace(dataset=name), {})[key.dataset] = data
    found, missing = {}, {}
    for key in sorted(parts):
        absent = tuple(sorted(wanted - set(parts[key])))
        if absent:
            missing[key] = absent
        else:
            found[key] = pooled(parts[key])
    return UseCaseSeries(found, missing)


@dataclass(frozen=True)
class Point:
    """One model's place on a comparison chart: its headline latency and its accuracy (None: n/a).
    A `reference` (a baseline: a script, not a model) is drawn beside the frontier: never on it,
    and it puts no model off it."""
    key: Hashable
    latency: float | None
    accuracy: float | None
    reference: bool = False


Apart = Callable[[str, "Point", "Point"], bool]
"""Whether the first point is told better than the second on a figure ("latency" or "accuracy")
beyond its estimate: the paired verdicts' say. By default every better estimate counts."""


def _estimates(figure: str, a: Point, b: Point) -> bool:
    return True


def dominates(a: Point, b: Point, accuracy_lower_is_better: bool = True, apart: Apart = _estimates) -> bool:
    """Whether `a` is at least as good as `b` on both figures and better on one (both present), a
    figure counting as better only where `apart` tells the two apart on it."""
    if None in (a.latency, a.accuracy, b.latency, b.accuracy):
        return False
    sign = 1.0 if accuracy_lower_is_better else -1.0
    ay, by = sign * a.accuracy, sign * b.accuracy
    return (a.latency <= b.latency and ay <= by
            and ((a.latency < b.latency and apart("latency", a, b)) or (ay < by and apart("accuracy", a, b))))


def frontier(points: Sequence[Point], accuracy_lower_is_better: bool = True, apart: Apart = _estimates) -> list[Point]:
    """The points no other point dominates, fastest first (ties by accuracy, best first); a point
    missing either figure is never on it and dominates none. Equal points are all on it."""
    complete = [p for p in points if p.latency is not None and p.accuracy is not None and not p.reference]
    sign = 1.0 if accuracy_lower_is_better else -1.0
    on = [p for p in complete if not any(dominates(q, p, accuracy_lower_is_better, apart) for q in complete)]
    return sorted(on, key=lambda p: (p.latency, sign * p.accuracy))


def told_apart(comparisons: Iterable[Comparison], points: Sequence[Point], latency_metric: str,
               paired_accuracy: bool) -> Apart:
    """Which of two points the paired verdicts tell apart on a figure (the frontier's reading of the
    ranks' verdicts, metrics.ranking.ahead): latency on `latency_metric`, accuracy on pooled WER
    where that is the accuracy (`paired_accuracy`); a figure with no paired comparison (answer
    accuracy, adherence) is read on the estimates."""
    comparisons = list(comparisons)
    latency = {p.key: p.latency for p in points if p.latency is not None}
    accuracy = {p.key: p.accuracy for p in points if p.accuracy is not None}
    faster = ahead(comparisons, set(latency), lambda key: latency_metric, latency)
    better = ahead(comparisons, set(accuracy), lambda key: "pooled_wer", accuracy) if paired_accuracy else set()

    def apart(figure: str, a: Point, b: Point) -> bool:
        if figure == "latency":
            return (a.key, b.key) in faster
        return (a.key, b.key) in better if paired_accuracy else True

    return apart
