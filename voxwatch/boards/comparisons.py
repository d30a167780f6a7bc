"""The paired comparisons of a board's rankings, for the CLI and the API: read, filtered and formatted.

Numbers come from metrics.paired (through store.comparisons.compute, or the Postgres table it
fills); this module picks the window's set and writes it as a table, CSV or JSON records.
"""

from __future__ import annotations

import csv
import io
from dataclasses import replace
from typing import Iterable

from voxwatch.boards.leaderboard import since
from voxwatch.boards.listing import fitted, prose
from voxwatch.metrics.paired import COLUMNS, Comparison, flat
from voxwatch.metrics.published import PLACES, comparison_record, signed
from voxwatch.metrics.specs import METRICS
from voxwatch.store.comparisons import compute
from voxwatch.store.row_filter import RowFilter

ABOUT = ("These two models, the same clips: each difference is model b minus model a, estimated only on the clips "
         "both measured in the same ticks, so what the clips share cancels. Latency: the median of the per-clip "
         "differences; WER: the difference of the pooled WERs. 'shown' is Holm's verdict over the ranking's pairs "
         "(5 % family-wise), and each interval is at the level Holm tested its pair at, so it excludes 0 exactly "
         "when the difference is shown: ranks follow only shown differences.")
"""What a comparison's interval is about, in the words every reader prints beside it."""
SERIES_ABOUT = ("This model, speech like this dataset: a series' own interval covers how its number would vary over "
                "other clips and ticks like these (clustered by utterance and tick).")
"""What a series' own interval is about, beside ABOUT."""
_UNITS = {m.name: m.unit for m in METRICS}


def from_store(store, window: str, only: RowFilter | None = None) -> list[Comparison]:
    """A window's comparisons over every model (a filter of models never changes a comparison): the
    stored set for a rolling window where the store keeps one (Postgres), else computed from the
    rows the board itself is computed from (leaderboard.from_store's)."""
    only = replace(only or RowFilter(), models=())
    stored = getattr(store, "comparisons", None)
    if stored is not None and only.since is None and only.until is None and not only.by_clip:
        return [c for c in stored(window) if _keeps(only, c)]
    start = since(window) if only.since is None else only.since
    return compute(store.observations(only=replace(only, since=start)))


def _keeps(only: RowFilter, c: Comparison) -> bool:
    return (not only.boards or c.a.board in only.boards) and (not only.datasets or c.a.dataset in only.datasets)


def involving(comparisons: Iterable[Comparison], models: Iterable[str]) -> list[Comparison]:
    """The comparisons with at least one of these models on a side (all when none are named)."""
    wanted = set(models)
    return [c for c in comparisons if not wanted or c.a.model_id in wanted or c.b.model_id in wanted]


def records(comparisons: Iterable[Comparison]) -> list[dict]:
    """Each comparison as a flat record (metrics.paired.COLUMNS), with its unit: the API's JSON rows."""
    return [{**flat(c), "unit": "fraction" if c.statistic == "pooled_wer" else _UNITS.get(c.statistic, "")}
            for c in comparisons]


def published(comparisons: Iterable[Comparison]) -> list[dict]:
    """The records at their published precision (metrics.published): the JSON's; CSV keeps full precision."""
    return [comparison_record(r) for r in records(comparisons)]


def format_csv(comparisons: Iterable[Comparison]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=[*COLUMNS, "unit"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(records(comparisons))
    return buf.getvalue()


def verdict(c: Comparison, short: bool = False) -> str:
    """A comparison in words: which model is ahead on the same clips, or that no difference is shown
    (`short`: 'a ahead' or 'b ahead', beside the columns that name them)."""
    d = c.difference
    if d.estimate is None:
        return "not compared" if short else "not compared (too few shared clips or ticks)"
    if not c.shown:
        return "no difference shown"
    if short:
        return "a ahead" if d.estimate > 0 else "b ahead"
    better, worse = (c.a, c.b) if d.estimate > 0 else (c.b, c.a)
    return f"{better.model_id} ahead of {worse.model_id}"


def _value(statistic: str, v: float | None) -> str:
    if v is None:
        return "n/a"
    return f"{signed(100 * v, 2)} pts" if statistic == "pooled_wer" else signed(v, 1)


def _short(statistic: str, v: float | None) -> str:
    """A difference as a fitted table shows it: ms to the unit, rtf to 0.01, WER in points to 0.1."""
    if v is None:
        return "n/a"
    if statistic == "pooled_wer":
        return signed(100 * v, 1)
    return signed(v, max(0, PLACES.get(_UNITS.get(statistic, ""), 1) - 1))


def format_table(comparisons: list[Comparison], width: int | None = None) -> str:
    """The comparisons as text, one line per pair and statistic, grouped by ranking; with a width,
    fitted to it (differences to the precision they are compared at, a ranking's one instrument in
    its heading, long ids wrapped, the verdict as 'a ahead' or 'b ahead'), else every cell whole."""
    if not comparisons:
        return "No paired comparisons: a ranking needs two models with intervals measured on the same clips."
    fit = width is not None
    header = ("statistic", "model a", "model b", "b - a [Holm CI]", "p (Holm)", "cells", "ticks", "verdict")
    table: list[tuple[str, ...] | str] = [header]
    instruments: dict[tuple, set[str]] = {}
    for c in comparisons:
        instruments.setdefault(c.ranking, set()).update({c.a.instrument or "", c.b.instrument or ""})
    last = None
    for c in sorted(comparisons, key=lambda c: (c.ranking, c.statistic, c.a, c.b)):
        one = fit and len(instruments[c.ranking]) == 1  # every series of the ranking scored by one instrument
        if c.ranking != last:
            _, dataset, protocol, region, method = c.ranking
            scored = f"; scored by {c.a.instrument}" if one and c.a.instrument else ""
            table.append(f"-- {dataset}, {protocol} @ {region} (method v{method}{scored})")
            last = c.ranking
        d, value = c.difference, _short if fit else _value
        ci = "" if d.ci is None else f" [{value(c.statistic, d.ci[0])}, {value(c.statistic, d.ci[1])}]"
        points = " pts" if fit and c.statistic == "pooled_wer" and d.estimate is not None else ""
        table.append((c.statistic, c.a.model_id + (f" ({c.a.instrument})" if c.a.instrument and not one else ""),
                      c.b.model_id + (f" ({c.b.instrument})" if c.b.instrument and not one else ""),
                      value(c.statistic, d.estimate) + ci + points, "n/a" if c.p_holm is None else f"{c.p_holm:.2g}",
                      str(d.cells), str(d.ticks), verdict(c, short=fit)))
    return "\n".join(fitted(table, width, flexible={1, 2})) + "\n\n" + prose(ABOUT, width)
