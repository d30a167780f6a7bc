"""Ranks from paired comparisons (METHOD "Ranking"): one definition for the web, API and CLI.

A board is ranked per dataset, protocol, region and method version (metrics.paired.ranking_of:
streaming and batch STT answer different questions, other regions were measured at other
ticks, and method versions are never pooled) by each series' first headline metric of its
protocol, lower is better. Every model of a ranking heard the same clips at the same ticks, so
two series are compared on the cells both measured (metrics/paired.py), and with Holm's
procedure over the ranking's pairs. A series' rank is the range of places it could hold given
those verdicts: from 1 + the number of series shown faster than it (directly, or through a series shown
between them) to the number of ranked series less those shown slower ("2", or "1-4" where it is not told apart from some). Rows stand in the
order of the ranked metric's estimate (its p50), and a verdict whose direction contradicts the
two estimates (the medians over all rows and over the shared cells can disagree) does not order
the pair, so a rank never puts a model ahead of one with a better estimate. A difference too
small for the two per-series intervals to separate is still shown once the clips they share have
measured it. A series measured under a superseded method version is shown but not ranked, and so
is one without an interval (its median under the floor, or every row from one tick).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

from voxwatch.foundation.series_key import SeriesKey
from voxwatch.metrics.paired import Comparison, ranking_of
from voxwatch.metrics.series import MetricRow, percentile_floor
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


def rankable(r: MetricRow, method_version: str, statistic: str = "p50") -> bool:
    """Whether a series' ranked-metric row can take a rank on `statistic` (p50, or p95 on a comparison
    page): current method, not excluded, the statistic and its interval."""
    return (r.method_version == method_version and getattr(r, statistic) is not None
            and getattr(r, f"{statistic}_ci") is not None and not r.note)


def comparable(rows: Iterable[MetricRow], method_version: str,
               statistic: str = "p50") -> Callable[[SeriesKey, str], bool]:
    """Which series metrics.paired.compare compares on which statistic: a latency metric where its
    row has a p50 interval, pooled WER where the series has a WER interval, current method only.
    Registry exclusions are the readers' (ranks leaves an excluded series unranked), so both
    stores compare the same pairs. With statistic p95: a latency metric where its row has a p95 interval
    (metrics.paired.compare_tail)."""
    latency, wer = set(), set()
    for r in rows:
        if r.method_version != method_version:
            continue
        if getattr(r, f"{statistic}_ci") is not None:
            latency.add((series_id(r), r.metric))
        if r.wer_ci is not None:
            wer.add(series_id(r))
    return lambda key, statistic: key in wer if statistic == "pooled_wer" else (key, statistic) in latency


@dataclass(frozen=True, order=True)
class Rank:
    """The places a series could hold in its ranking given the paired verdicts: `best` is 1 + the
    series shown ahead of it, `worst` the ranked series less those shown behind it. One place
    when every other series is told apart from it."""
    best: int
    worst: int

    def __str__(self) -> str:
        return str(self.best) if self.best == self.worst else f"{self.best}-{self.worst}"


def rank_text(rank: Rank | None) -> str | None:
    """A rank as every reader prints it ("2", "1-4"); None where not ranked."""
    return None if rank is None else str(rank)


def rank_fields(rank: Rank | None) -> dict:
    """A rank in a JSON or CSV record: `rank` as printed ("2", "1-4"), `rank_best` and `rank_worst`."""
    return {"rank": rank_text(rank), "rank_best": None if rank is None else rank.best,
            "rank_worst": None if rank is None else rank.worst}


def ahead(comparisons: Iterable[Comparison], members: set[SeriesKey], statistic: Callable[[SeriesKey], str | None],
          estimate: Mapping[SeriesKey, float], lower_is_better: bool = True) -> set[tuple[SeriesKey, SeriesKey]]:
    """The ordered pairs (x, y) the paired verdicts put x ahead of y on: shown apart on the statistic
    the pair is ranked by, in the direction of the difference, and agreeing with the two series'
    own estimates (a verdict the estimates contradict orders nothing). The one reading of the
    verdicts for ranks and for the frontier."""
    out = set()
    for c in comparisons:
        if (not c.shown or c.a not in members or c.b not in members or c.statistic != statistic(c.a)
                or c.difference.estimate is None or c.difference.estimate == 0):
            continue
        b_worse = (c.difference.estimate > 0) == lower_is_better
        first, second = (c.a, c.b) if b_worse else (c.b, c.a)
        better = estimate[first] < estimate[second] if lower_is_better else estimate[first] > estimate[second]
        if better:
            out.add((first, second))
    return out


def ranks(rows: Iterable[MetricRow], method_version: str, comparisons: Iterable[Comparison],
          statistic: str = "p50") -> dict[SeriesKey, Rank | None]:
    """Every series' rank (None: not ranked) from its leaderboard rows and its ranking's paired
    comparisons (metrics.paired.compare over the same window's rows; compare_tail's for p95, the
    statistic a comparison page can rank on): the range of places its verdicts leave it, among the
    rankable series of its ranking."""
    out: dict[SeriesKey, Rank | None] = {}
    estimate: dict[SeriesKey, float] = {}
    for r in rows:
        if r.metric != ranked_metric(r.protocol):
            continue
        sid = series_id(r)
        out[sid] = None
        if rankable(r, method_version, statistic):
            estimate[sid] = float(getattr(r, statistic))
    behind = ordered_behind(ahead(comparisons, set(estimate), lambda key: ranked_metric(key.protocol), estimate))
    ahead_of = Counter(second for first in behind for second in behind[first])
    size = Counter(ranking_of(sid) for sid in estimate)
    for sid in estimate:
        out[sid] = Rank(1 + ahead_of[sid], size[ranking_of(sid)] - len(behind.get(sid, ())))
    return out


def ordered_behind(pairs: set[tuple[SeriesKey, SeriesKey]]) -> dict[SeriesKey, set[SeriesKey]]:
    """Every series the verdicts put behind each one, directly or through others (a shown ahead of b
    and b of c puts a ahead of c, whether or not a and c were told apart themselves). The pairs
    agree with the estimates' order, so they hold no cycle."""
    direct: dict[SeriesKey, set[SeriesKey]] = {}
    for first, second in pairs:
        direct.setdefault(first, set()).add(second)
    closed: dict[SeriesKey, set[SeriesKey]] = {}

    def reach(sid: SeriesKey) -> set[SeriesKey]:
        if sid not in closed:
            closed[sid] = set()
            for nxt in direct.get(sid, ()):
                closed[sid] |= {nxt} | reach(nxt)
        return closed[sid]

    return {sid: reach(sid) for sid in direct}


def rank_order(first: MetricRow, rank: Rank | None) -> tuple:
    """Where a series stands in its ranking, by its ranked metric's row: ranked series by the ranked
    metric's estimate (p50), then the unranked by median (n/a last), then by rank and name: the
    one order of every reader, in which no row stands above one with a better estimate."""
    return (rank is None, first.p50 is None, first.p50 or 0.0, rank or Rank(0, 0), first.model_id, first.region,
            first.method_version, first.instrument or "")


def ranking_title(dataset: str, protocol: str) -> str:
    """A ranking's heading, as the web page and the CLI print it."""
    return f"{dataset}, {PROTOCOL_NAMES.get(protocol, protocol)}: ranked by {ranked_metric(protocol)}, paired on the same clips"


RANK_RULE = ("a rank is the range of places a model could hold given the paired comparisons (compared on the "
             "clips both heard at the same ticks, Holm over the ranking's pairs, 5 % family-wise): '2' where it is "
             "told apart from every other model, '1-4' where it is not told apart from some; rows stand in the "
             "order of the ranked median")
"""The rank rule in the words every page footer, API document and CLI note uses."""


def ranking_note() -> str:
    """What a rank means, in the words every reader prints under a ranking."""
    return f"Ranks per dataset, protocol and region by the first metric: {RANK_RULE}."


def why_unranked(r: MetricRow, method_version: str, statistic: str = "p50") -> str | None:
    """Why a series has no rank on `statistic`, in words (None when it has one or it is not the ranked metric)."""
    if r.method_version != method_version:
        return f"method v{r.method_version} is superseded by v{method_version}: shown, not ranked"
    if r.note:
        return f"excluded: {r.note}"
    if r.p50 is None or r.p50_ci is None:
        return "no interval yet (fewer than 5 samples, or all from one tick): not ranked"
    if getattr(r, statistic) is None or getattr(r, f"{statistic}_ci") is None:
        return f"no {statistic} interval yet (fewer than {percentile_floor(float(statistic[1:]))} samples, or all from one tick): not ranked"
    return None


def interval_ranks(low: Sequence[float], high: Sequence[float]) -> list[int | None]:
    """Ranks of estimates where higher is better (an Elo board), by the rule above: 1 + the number of
    estimates whose whole interval lies above one's own, so overlapping intervals share a rank.
    An estimate without a finite interval has no rank (None) and outranks nothing."""
    bounds = [(float(lo), float(hi)) for lo, hi in zip(low, high)]
    ranked = [(lo, hi) for lo, hi in bounds if math.isfinite(lo) and math.isfinite(hi)]
    return [1 + sum(1 for other_low, _ in ranked if other_low > hi)
            if math.isfinite(lo) and math.isfinite(hi) else None for lo, hi in bounds]
