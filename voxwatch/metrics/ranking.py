"""Ranks from paired comparisons (METHOD "Ranking"): one definition for the web, API and CLI.

A board is ranked per dataset, protocol, region and method version (metrics.paired.ranking_of:
streaming and batch STT answer different questions, other regions were measured at other
ticks, and method versions are never pooled) by each series' first headline metric of its
protocol, lower is better. Every model of a ranking heard the same clips at the same ticks, so
two series are compared on the cells both measured (metrics/paired.py), and with Holm's
procedure over the ranking's pairs: a series' rank is 1 + the number of series shown faster than
it. Two models whose difference is not shown share their place, so no two models are ordered
by noise, and a difference too small for the two per-series intervals to separate is still
shown once the clips they share have measured it. A series measured under a superseded method
version is shown but not ranked, and so is one without an interval (its median under the
floor, or every row from one tick).
"""

from __future__ import annotations

import math
from typing import Callable, Iterable, Sequence

from voxwatch.foundation.series_key import SeriesKey
from voxwatch.metrics.paired import Comparison
from voxwatch.metrics.series import MetricRow
from voxwatch.metrics.specs import for_protocol

PROTOCOL_NAMES = {"stt-stream": "streaming STT", "stt-batch": "batch STT", "tts-stream": "streaming TTS",
                  "s2s": "speech to speech"}
"""How a ranking's protocol reads on a page or in the CLI."""


def series_id(r: MetricRow) -> SeriesKey:
    """The series a leaderboard row is a metric of."""
    return SeriesKey(r.board, r.model_id, r.dataset, r.region, r.method_version, r.protocol, r.instrument or "")


def ranked_metric(protocol: str) -> str | None:
    """The metric a protocol's series are ranked by: its first headline metric."""
    specs = for_protocol(protocol, headline_only=True)
    return specs[0].name if specs else None


def rankable(r: MetricRow, method_version: str) -> bool:
    """Whether a series' ranked-metric row can take a rank: current method, not excluded, an interval."""
    return r.method_version == method_version and r.p50 is not None and r.p50_ci is not None and not r.note


def comparable(rows: Iterable[MetricRow], method_version: str) -> Callable[[SeriesKey, str], bool]:
    """Which series metrics.paired.compare compares on which statistic: a latency metric where its
    row has a p50 interval, pooled WER where the series has a WER interval, current method only.
    Registry exclusions are the readers' (ranks leaves an excluded series unranked), so both
    stores compare the same pairs."""
    latency, wer = set(), set()
    for r in rows:
        if r.method_version != method_version:
            continue
        if r.p50_ci is not None:
            latency.add((series_id(r), r.metric))
        if r.wer_ci is not None:
            wer.add(series_id(r))
    return lambda key, statistic: key in wer if statistic == "pooled_wer" else (key, statistic) in latency


def ranks(rows: Iterable[MetricRow], method_version: str,
          comparisons: Iterable[Comparison]) -> dict[SeriesKey, int | None]:
    """Every series' rank (None: not ranked) from its leaderboard rows and its ranking's paired
    comparisons (metrics.paired.compare over the same window's rows): 1 + the number of rankable
    series of its ranking shown faster than it on the ranked metric."""
    out: dict[SeriesKey, int | None] = {}
    ranked: set[SeriesKey] = set()
    for r in rows:
        if r.metric != ranked_metric(r.protocol):
            continue
        sid = series_id(r)
        out[sid] = None
        if rankable(r, method_version):
            ranked.add(sid)
    behind: dict[SeriesKey, int] = {sid: 0 for sid in ranked}
    for c in comparisons:
        if (not c.shown or c.a not in ranked or c.b not in ranked or c.statistic != ranked_metric(c.a.protocol)
                or c.difference.estimate is None or c.difference.estimate == 0):
            continue
        behind[c.b if c.difference.estimate > 0 else c.a] += 1  # lower is better: a positive b - a puts b behind
    for sid, n in behind.items():
        out[sid] = 1 + n
    return out


def rank_order(first: MetricRow, rank: int | None) -> tuple:
    """Where a series stands in its ranking, by its ranked metric's row: ranked series by rank, then
    the unranked, each by median (n/a last), then by name: the one order of every reader."""
    return (rank is None, rank or 0, first.p50 is None, first.p50 or 0.0, first.model_id, first.region,
            first.method_version, first.instrument or "")


def ranking_title(dataset: str, protocol: str) -> str:
    """A ranking's heading, as the web page and the CLI print it."""
    return f"{dataset}, {PROTOCOL_NAMES.get(protocol, protocol)}: ranked by {ranked_metric(protocol)}, paired on the same clips"


def ranking_note() -> str:
    """What a rank means, in the words every reader prints under a ranking."""
    return ("Ranks per dataset, protocol and region by the first metric: a model ranks ahead of another only where "
            "the two, compared on the clips both heard at the same ticks, differ beyond chance (Holm over the "
            "ranking's pairs, 5 % family-wise); otherwise they share a place.")


def why_unranked(r: MetricRow, method_version: str) -> str | None:
    """Why a series has no rank, in words (None when it has one or it is not the ranked metric)."""
    if r.method_version != method_version:
        return f"method v{r.method_version} is superseded by v{method_version}: shown, not ranked"
    if r.note:
        return f"excluded: {r.note}"
    if r.p50 is None or r.p50_ci is None:
        return "no interval yet (fewer than 5 samples, or all from one tick): not ranked"
    return None


def interval_ranks(low: Sequence[float], high: Sequence[float]) -> list[int | None]:
    """Ranks of estimates where higher is better (an Elo board), by the rule above: 1 + the number of
    estimates whose whole interval lies above one's own, so overlapping intervals share a rank.
    An estimate without a finite interval has no rank (None) and outranks nothing."""
    bounds = [(float(lo), float(hi)) for lo, hi in zip(low, high)]
    ranked = [(lo, hi) for lo, hi in bounds if math.isfinite(lo) and math.isfinite(hi)]
    return [1 + sum(1 for other_low, _ in ranked if other_low > hi)
            if math.isfinite(lo) and math.isfinite(hi) else None for lo, hi in bounds]
