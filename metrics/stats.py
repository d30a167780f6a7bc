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


BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20261129


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


def _interval(estimates: np.ndarray, level: float) -> Interval:
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(estimates, [tail, 100 - tail])
    return Interval(float(low), float(high))


def bootstrap_percentile_ci(values: Sequence[float], q: float, level: float = 0.95,
                            resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> Interval | None:
    """Percentile-bootstrap CI of the q-th percentile, resampling clips; None below MIN_N."""
    v = np.asarray([x for x in values if x is not None], dtype=np.float64)
    if v.size < MIN_N:
        return None
    idx = np.random.default_rng(seed).integers(0, v.size, size=(resamples, v.size))
    return _interval(np.percentile(v[idx], q, axis=1, method="linear"), level)


def bootstrap_pooled_ci(errors: Sequence[int], words: Sequence[int], level: float = 0.95,
                        resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> Interval | None:
    """CI of a pooled ratio (pooled WER) resampling clips: each draw is sum(errors) / sum(words)."""
    e, w = np.asarray(errors, dtype=np.float64), np.asarray(words, dtype=np.float64)
    if e.size < MIN_N or w.sum() == 0:
        return None
    idx = np.random.default_rng(seed).integers(0, e.size, size=(resamples, e.size))
    totals = w[idx].sum(axis=1)
    ratios = np.divide(e[idx].sum(axis=1), totals, out=np.full(resamples, np.nan), where=totals > 0)
    return _interval(ratios[~np.isnan(ratios)], level)
