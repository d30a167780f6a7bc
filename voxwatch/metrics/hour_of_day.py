"""A series by hour of day (METHOD "Hour of day and region"): when, and where, a provider is slow.

voxwatch measures on a schedule, around the clock, from fixed regions: every row has its start
(`started_at`, UTC) and its region. Cut one series (board, model, dataset, region, method version,
protocol, instrument) by the hour of day its rows started in, 0-23, and each hour is a series of its
own: its p50 and p95 with their clustered intervals, its attempts and pooled WER, every figure
`series_rows`' (voxwatch/metrics/series.py), floors included (p50 from MIN_N values, p95 from
percentile_floor(95) = 100, pooled WER from MIN_N scored clips). Nothing is defined twice.

The hour is read on one of two clocks: UTC, the same for every region, or the region's local time,
from the IANA time zone stated for it ([schedule] time_zones; a region with none is read in UTC
and says so). Local hours follow the zone's offset at each row's start, daylight saving time
included, so 09:00 local is the morning rush in every season.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Mapping, Sequence
from zoneinfo import ZoneInfo

import numpy as np

from voxwatch.foundation.series_key import SeriesKey
from voxwatch.metrics.series import SeriesData, series_rows

HOURS = tuple(range(24))
UTC = "UTC"
CLOCKS = ("utc", "local")
"""The clocks an hour is read on: UTC for every region, or each region's own time zone."""
_STEP_S = 900
"""Every time zone's offset, and every change of it, falls on a quarter of an hour in UTC."""


def zone_of(region: str, zones: Mapping[str, str]) -> str:
    """The IANA time zone stated for a region; UTC when none is stated."""
    return zones.get(region, UTC)


def hours_of(started_at: Sequence[float], zone: str = UTC) -> np.ndarray:
    """Each start's hour of day (0-23) in `zone`: the UTC time plus the zone's offset at that moment
    (looked up once per quarter hour the rows fall in, which is where any offset changes)."""
    t = np.asarray(started_at, dtype=np.float64)
    if zone == UTC or t.size == 0:
        return (np.floor(t / 3600) % 24).astype(np.int64)
    tz = ZoneInfo(zone)
    quarters, inverse = np.unique(np.floor(t / _STEP_S).astype(np.int64), return_inverse=True)
    offsets = np.array([datetime.fromtimestamp(int(q) * _STEP_S, timezone.utc).astimezone(tz).utcoffset().total_seconds()
                        for q in quarters])
    return (np.floor((t + offsets[inverse.ravel()]) / 3600) % 24).astype(np.int64)


@dataclass(frozen=True)
class HourCell:
    """One hour of day of one series and metric: the metric's n, p50 and p95 with their 95 % intervals
    (None under their floors), the hour's attempts and its pooled WER (STT; None under its floor)."""
    region: str
    zone: str  # the zone the hour is read in: UTC, or the region's
    hour: int
    n: int
    p50: float | None
    p95: float | None
    p50_ci: tuple[float, float] | None
    p95_ci: tuple[float, float] | None
    attempts: int
    pooled_wer: float | None
    wer_clips: int
    wer_ci: tuple[float, float] | None
    utterances: int
    ticks: int


def _take(data: SeriesData, keep: np.ndarray) -> SeriesData:
    """The rows of a series where `keep` holds, as a series of their own."""
    idx = np.flatnonzero(keep)

    def pick(column: Sequence) -> list:
        return [column[i] for i in idx] if len(column) else []

    return SeriesData(statuses=pick(data.statuses), utterances=pick(data.utterances), ticks=pick(data.ticks),
                      values={m: pick(v) for m, v in data.values.items()}, errors=pick(data.errors),
                      words=pick(data.words), entities_missed=pick(data.entities_missed),
                      entities_total=pick(data.entities_total), quality=pick(data.quality), answers=pick(data.answers))


def by_hour(key: SeriesKey, data: SeriesData, started_at: Sequence[float], metric: str,
            zone: str = UTC) -> list[HourCell]:
    """The series' hours of day in `zone` that have rows, in hour order: each hour's rows summarized
    as series_rows summarizes a series (`metric` must be one of its protocol's headline metrics)."""
    if len(started_at) != len(data.statuses):
        raise ValueError(f"{len(started_at)} start times for {len(data.statuses)} rows")
    hours = hours_of(started_at, zone)
    out = []
    for hour in np.unique(hours):
        rows = {r.metric: r for r in series_rows(key, _take(data, hours == hour))}
        if metric not in rows:
            raise ValueError(f"{metric!r} is not a headline metric of {key.protocol}")
        r = rows[metric]
        out.append(HourCell(key.region, zone, int(hour), r.n, r.p50, r.p95, r.p50_ci, r.p95_ci, r.attempts,
                            r.pooled_wer, r.wer_clips, r.wer_ci, r.utterances, r.ticks))
    return out
