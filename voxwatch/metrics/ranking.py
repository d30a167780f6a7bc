"""Ranks that admit what the intervals say (METHOD "Ranking"): one definition for the web, API and CLI.

A board is ranked per dataset and protocol (streaming and batch STT answer different questions
and never share a ranking) by each series' first headline metric of its protocol: its median,
lower is better. A series' rank is 1 + the number of series whose whole 95 % interval lies
below its own, so a model shares its rank with every model whose interval overlaps its own, and
two models are never ordered by noise. A series measured under a superseded method version is
shown but not ranked, and so is one without an interval (its median under the floor, or every row
from one tick).
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

from voxwatch.foundation.series_key import SeriesKey
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


def ranks(rows: Iterable[MetricRow], method_version: str) -> dict[SeriesKey, int | None]:
    """Every series' rank (None: not ranked) from its leaderboard rows."""
    out: dict[SeriesKey, int | None] = {}
    groups: dict[tuple[str, str, str], list[tuple[SeriesKey, tuple[float, float]]]] = {}
    for r in rows:
        sid = series_id(r)
        if r.metric != ranked_metric(r.protocol):
            continue
        out[sid] = None
        if r.method_version == method_version and r.p50 is not None and r.p50_ci is not None and not r.note:
            groups.setdefault(sid.ranking_key, []).append((sid, r.p50_ci))
    for members in groups.values():
        for sid, (low, _) in members:
            out[sid] = 1 + sum(1 for _, (_, other_high) in members if other_high < low)
    return out


def rank_order(first: MetricRow, rank: int | None) -> tuple:
    """Where a series stands in its ranking, by its ranked metric's row: ranked series by rank, then
    the unranked, each by median (n/a last), then by name: the one order of every reader."""
    return (rank is None, rank or 0, first.p50 is None, first.p50 or 0.0, first.model_id, first.region,
            first.method_version, first.instrument or "")


def ranking_title(dataset: str, protocol: str) -> str:
    """A ranking's heading, as the web page and the CLI print it."""
    return f"{dataset}, {PROTOCOL_NAMES.get(protocol, protocol)}: ranked by {ranked_metric(protocol)} p50"


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
