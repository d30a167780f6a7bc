"""Aggregate statistics (METHOD "Aggregates"): percentiles by linear interpolation, n < 5 is n/a."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

MIN_N = 5


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float | None
    p50: float | None
    p95: float | None
    p99: float | None
    max: float | None
    std: float | None


def summarize(values: Sequence[float]) -> Summary:
    """Linear-interpolation percentiles, as Postgres percentile_cont; n/a (None) below MIN_N."""
    v = np.asarray([x for x in values if x is not None], dtype=np.float64)
    if v.size < MIN_N:
        return Summary(int(v.size), None, None, None, None, None, None)
    p50, p95, p99 = np.percentile(v, [50, 95, 99], method="linear")
    return Summary(
        n=int(v.size),
        mean=float(v.mean()),
        p50=float(p50),
        p95=float(p95),
        p99=float(p99),
        max=float(v.max()),
        std=float(v.std(ddof=1)),
    )


def rate(hits: int, total: int) -> float | None:
    return hits / total if total else None
