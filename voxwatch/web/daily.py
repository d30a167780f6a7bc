"""A model's history by UTC day, from its rows (both stores): per series, each headline metric's
daily n, p50 and p95, and the day's own figures (attempts, error and timeout rates, pooled WER).

Every number is metrics.series' (summarize, attempt_figures): the same definitions as the
leaderboard's windows, over one day's rows. Emulator rows are never read.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterable

from voxwatch.metrics.series import AttemptFigures, attempt_figures, summarize
from voxwatch.metrics.specs import METRICS, for_protocol
from voxwatch.store import layout

HEADLINE = tuple(dict.fromkeys(m.name for m in METRICS if m.headline))


@dataclass(frozen=True)
class DailyPoint:
    """One UTC day of one series and headline metric; p50/p95 are None when n < 5 (METHOD: n/a)."""
    dataset: str
    region: str
    method_version: str
    instrument: str | None
    metric: str
    day: str  # ISO date, UTC
    n: int
    p50: float | None
    p95: float | None


@dataclass(frozen=True)
class DailyFigures:
    """One UTC day of one series: its attempts, rates and pooled WER (None under their floors: METHOD
    "Aggregates", 5 attempts, 5 scored clips)."""
    dataset: str
    region: str
    method_version: str
    instrument: str | None
    day: str
    figures: AttemptFigures


@dataclass(frozen=True)
class Daily:
    points: list[DailyPoint]
    figures: list[DailyFigures]


HISTORY_SQL = layout.series_sql(
    "d.name, c.region, c.method_version, c.protocol, CASE WHEN c.board = 'tts' THEN coalesce(c.instrument_id, '') "
    "ELSE '' END, floor(f.started_at / 86400)::bigint, f.status, f.substitutions + f.deletions + f.insertions, "
    "f.ref_words, " + ", ".join(f"f.{m}" for m in HEADLINE), keys=("model_id",))
"""A model's rows of the window (every status), keyed by series and UTC day; `daily` summarizes them."""
DayRow = tuple
"""dataset, region, method_version, protocol, instrument ('' when none), day, status, S + D + I, N, *headline values."""
_KEY, _STATUS, _ERRORS, _WORDS, _VALUES = slice(0, 6), 6, 7, 8, 9


def iso_day(day: int) -> str:
    return datetime.fromtimestamp(day * 86400, timezone.utc).date().isoformat()


def daily(rows: Iterable[DayRow]) -> Daily:
    """Each series' days: every headline metric's n, p50 and p95 over its ok rows, and the day's figures."""
    groups: dict[tuple, list] = defaultdict(list)
    for r in rows:
        groups[r[_KEY]].append(r)
    points, figures = [], []
    for (dataset, region, method, protocol, instrument, day), members in sorted(groups.items()):
        ok = [m for m in members if m[_STATUS] == "ok"]
        for spec in for_protocol(protocol, headline_only=True):
            i = _VALUES + HEADLINE.index(spec.name)
            stats = summarize([m[i] for m in ok])
            if stats.n:
                points.append(DailyPoint(dataset, region, method, instrument or None, spec.name, iso_day(day),
                                         stats.n, stats.p50, stats.p95))
        f = attempt_figures([m[_STATUS] for m in members], [m[_ERRORS] for m in members], [m[_WORDS] for m in members])
        if f.attempts:
            figures.append(DailyFigures(dataset, region, method, instrument or None, iso_day(day), f))
    return Daily(points, figures)
