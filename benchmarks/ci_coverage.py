"""Coverage of the published 95 % intervals on simulated series with known population values.

A series here is drawn as voxwatch draws one: a tick every 30 minutes samples clips from a
catalog of 64 utterances. Latency = exp(log 400 ms + diurnal drift of the provider (random phase)
+ a tick shock shared by the tick's rows (1 tick in 50 slow, x2.5) + the utterance's effect +
row noise (1 row in 33 slow, x3)). WER: each utterance has its own difficulty and each tick a
small shift, errors are binomial over the utterance's words. Errors: 2 % of attempts fail, and
1 tick in 33 is a bad tick where 40 % do. The population values (what an interval should cover)
are those of the generating model at the series' tick times, over new utterances, new ticks and
new rows: computed in closed form (means, pooled WER, error rate) or by root-finding on the
mixture's CDF (percentiles).

Printed: the empirical coverage of the old intervals (method 3: rows resampled as if
independent; mean and error rate had none, so their row intervals are shown) beside the new ones
(voxwatch/metrics/series.py: clustered by utterance and tick), at series of 20 to 20,000 rows. A statistic
under its floor is n/a (p95 needs 100 values). Target: every new interval covers 92-97 %.

At the edges: a share's interval (metrics.series.rate_ci: Clopper-Pearson at the effective
sample size) on series whose true rate is 0.5 %, 3 %, 20 %, 97 % or 99.5 %, each row's chance
moved by its tick's and its utterance's effect (sd 0.4 on the logit scale each), at 2 to 200
ticks of 10 clips. Target there: every cell covers at least 92 % (an exact interval errs wide).

    python -m benchmarks.ci_coverage [--trials 1000] [--seed 1] [--quick]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit, logit
from scipy.stats import norm

from voxwatch.foundation.series_key import SeriesKey
from voxwatch.metrics.clustered import design, rate_interval, ratio_variance, t_interval
from voxwatch.metrics.row_bootstrap import bootstrap_percentile_ci, bootstrap_pooled_ci
from voxwatch.metrics.series import SeriesData, series_rows

SIZES = ((2, 10), (20, 10), (200, 10), (1000, 20))
"""(ticks, clips per tick): series of 20, 200, 2,000 and 20,000 rows."""
CATALOG = 64
TICK_S = 1800.0
MU, SD_UTTERANCE, SD_TICK, SD_ROW = np.log(400.0), 0.15, 0.12, 0.30
SLOW_TICK_P, SLOW_TICK = 0.02, np.log(2.5)
SLOW_ROW_P, SLOW_ROW = 0.03, np.log(3.0)
DRIFT = 0.15
WER_BASE, WER_SD_UTTERANCE, WER_SD_TICK = 0.10, 0.8, 0.15
FAIL_P, BAD_TICK_P, BAD_TICK_FAIL_P = 0.02, 0.03, 0.40
STATISTICS = ("mean", "p50", "p95", "pooled_wer", "error_rate")
LOW, HIGH = 0.92, 0.97
KEY = SeriesKey("stt", "sim/model@1", "sim", "local", "4", "stt-stream", "")


def _mixture() -> tuple[np.ndarray, np.ndarray]:
    """The weights and log-shifts of the four (slow tick?, slow row?) components of latency."""
    weights = np.array([(1 - SLOW_TICK_P) * (1 - SLOW_ROW_P), SLOW_TICK_P * (1 - SLOW_ROW_P),
                        (1 - SLOW_TICK_P) * SLOW_ROW_P, SLOW_TICK_P * SLOW_ROW_P])
    return weights, np.array([0.0, SLOW_TICK, SLOW_ROW, SLOW_TICK + SLOW_ROW])


def _wer_truth() -> float:
    """Pooled WER of the population: words do not depend on difficulty, so it is E[p(utterance, tick)]."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    weights = weights / weights.sum()
    sd = np.hypot(WER_SD_UTTERANCE, WER_SD_TICK)
    return float(weights @ expit(logit(WER_BASE) + sd * nodes))


WER_TRUTH = _wer_truth()
ERROR_TRUTH = (1 - BAD_TICK_P) * FAIL_P + BAD_TICK_P * BAD_TICK_FAIL_P


def truths(drift: np.ndarray) -> dict[str, float]:
    """The population values of a series whose ticks sat at these points of the provider's drift."""
    weights, shifts = _mixture()
    sd = np.sqrt(SD_UTTERANCE ** 2 + SD_TICK ** 2 + SD_ROW ** 2)
    mean = float(np.exp(MU + sd ** 2 / 2) * np.mean(np.exp(drift)) * (weights @ np.exp(shifts)))

    def quantile(q: float) -> float:
        def cdf(lx: float) -> float:
            return float(sum(w * np.mean(norm.cdf((lx - MU - drift - s) / sd)) for w, s in zip(weights, shifts))) - q
        return float(np.exp(brentq(cdf, MU - 6, MU + 10)))

    return {"mean": mean, "p50": quantile(0.5), "p95": quantile(0.95), "pooled_wer": WER_TRUTH,
            "error_rate": ERROR_TRUTH}


def simulate(rng: np.random.Generator, ticks: int, per_tick: int) -> tuple[SeriesData, np.ndarray]:
    """One series' rows (as every store hands them to metrics.series) and its ticks' drift."""
    phase = rng.uniform(0, 2 * np.pi)
    drift = DRIFT * np.sin(2 * np.pi * np.arange(ticks) * TICK_S / 86400 + phase)
    shock = rng.normal(0, SD_TICK, ticks) + SLOW_TICK * (rng.random(ticks) < SLOW_TICK_P)
    bad = rng.random(ticks) < BAD_TICK_P
    utterance_effect = rng.normal(0, SD_UTTERANCE, CATALOG)
    difficulty = rng.normal(0, WER_SD_UTTERANCE, CATALOG)
    words_of = rng.integers(6, 30, CATALOG)
    wer_shift = rng.normal(0, WER_SD_TICK, ticks)
    utterance = np.concatenate([rng.choice(CATALOG, per_tick, replace=False) for _ in range(ticks)])
    tick = np.repeat(np.arange(ticks), per_tick)
    n = utterance.size
    row_noise = rng.normal(0, SD_ROW, n) + SLOW_ROW * (rng.random(n) < SLOW_ROW_P)
    latency = np.exp(MU + drift[tick] + shock[tick] + utterance_effect[utterance] + row_noise)
    failed = rng.random(n) < np.where(bad[tick], BAD_TICK_FAIL_P, FAIL_P)
    words = words_of[utterance]
    errors = rng.binomial(words, expit(logit(WER_BASE) + difficulty[utterance] + wer_shift[tick]))
    ok = ~failed
    data = SeriesData(statuses=np.where(failed, "error", "ok").tolist(), utterances=utterance.tolist(),
                      ticks=tick.tolist(),
                      values={"ttfs_ms": np.where(ok, latency, np.nan).tolist(),
                              "first_partial_ms": [None] * n, "ttfs_peer_ms": [None] * n, "connect_ms": [None] * n},
                      errors=np.where(ok, errors, -1).tolist(), words=[int(w) if g else None for w, g in zip(words, ok)])
    return data, drift


def new_intervals(data: SeriesData) -> dict[str, tuple[float, float] | None]:
    """The published intervals (voxwatch/metrics/series.py), read off the series' first metric row."""
    row = series_rows(KEY, data)[0]
    return {"mean": row.mean_ci, "p50": row.p50_ci, "p95": row.p95_ci, "pooled_wer": row.wer_ci,
            "error_rate": row.error_rate_ci}


def old_intervals(data: SeriesData) -> dict[str, tuple[float, float] | None]:
    """Method 3's intervals: rows resampled as if independent (mean and error rate had none: the
    same row-independent variance is used for them)."""
    ok = np.array([s == "ok" for s in data.statuses])
    x = np.asarray(data.values["ttfs_ms"], dtype=np.float64)[ok]
    errors = np.asarray(data.errors)[ok]
    words = np.asarray([w for w in data.words if w is not None])
    rows = design(row=np.arange(x.size))
    p50, p95 = bootstrap_percentile_ci(x, 50), bootstrap_percentile_ci(x, 95)
    wer = bootstrap_pooled_ci(errors, words)
    failed = ~ok
    return {"mean": t_interval(float(x.mean()), ratio_variance(rows, x, np.ones(x.size))),
            "p50": (p50.low, p50.high) if p50 else None, "p95": (p95.low, p95.high) if p95 else None,
            "pooled_wer": (wer.low, wer.high) if wer else None,
            "error_rate": rate_interval(failed.astype(np.float64), design(row=np.arange(failed.size)))}


def coverage(trials: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for ticks, per_tick in SIZES:
        hits = {m: {s: 0 for s in STATISTICS} for m in ("old", "new")}
        shown = {m: {s: 0 for s in STATISTICS} for m in ("old", "new")}
        started = time.perf_counter()
        for _ in range(trials):
            data, drift = simulate(rng, ticks, per_tick)
            truth = truths(drift)
            for method, intervals in (("old", old_intervals(data)), ("new", new_intervals(data))):
                for s in STATISTICS:
                    ci = intervals[s]
                    if ci is not None:
                        shown[method][s] += 1
                        hits[method][s] += ci[0] <= truth[s] <= ci[1]
        out.append({"rows": ticks * per_tick, "ticks": ticks, "clips_per_tick": per_tick,
                    "seconds": round(time.perf_counter() - started, 1),
                    **{f"{m}_{s}": (round(hits[m][s] / shown[m][s], 3) if shown[m][s] == trials else None)
                       for m in ("old", "new") for s in STATISTICS}})
    return out


EDGE_RATES = (0.005, 0.03, 0.2, 0.97, 0.995)
EDGE_TICKS = (2, 5, 20, 200)
EDGE_SD = 0.4


def edge_coverage(trials: int, seed: int) -> list[dict]:
    """Coverage of a share's published interval near 0 and 1 and at few ticks (the population rate:
    the mean chance over new ticks and utterances, by Monte Carlo)."""
    from voxwatch.metrics.series import rate_ci

    rng = np.random.default_rng(seed)
    out = []
    for base in EDGE_RATES:
        truth = float(expit(logit(base) + rng.normal(0, EDGE_SD * np.sqrt(2), 1_000_000)).mean())
        for ticks in EDGE_TICKS:
            hits = widths = 0.0
            for _ in range(trials):
                tick_effect, utterance_effect = rng.normal(0, EDGE_SD, ticks), rng.normal(0, EDGE_SD, CATALOG)
                utterance = np.concatenate([rng.choice(CATALOG, 10, replace=False) for _ in range(ticks)])
                tick = np.repeat(np.arange(ticks), 10)
                chance = expit(logit(base) + tick_effect[tick] + utterance_effect[utterance])
                x = (rng.random(utterance.size) < chance).astype(np.float64)
                low, high = rate_ci(x, design(utterance=utterance, tick=tick))
                hits += low <= truth <= high
                widths += high - low
            out.append({"rate": base, "truth": round(truth, 4), "ticks": ticks, "coverage": round(hits / trials, 3),
                        "mean_width": round(widths / trials, 4)})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000, help="simulated series per size (default 1000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="10 series per size (seconds; too few to judge a target)")
    args = parser.parse_args()
    if args.quick:
        args.trials = 10
    results = coverage(args.trials, args.seed)
    edges = edge_coverage(args.trials, args.seed)
    print(f"Coverage of nominal 95 % intervals, {args.trials} simulated series per size "
          f"(old: rows resampled as independent; new: clustered by utterance and tick; n/a: under the floor)")
    header = f"{'rows':>6} {'ticks':>5}  " + "  ".join(f"{s:>17}" for s in STATISTICS)
    print(header)
    print(f"{'':>6} {'':>5}  " + "  ".join(f"{'old':>8} {'new':>8}" for _ in STATISTICS))
    for r in results:
        cells = []
        for s in STATISTICS:
            old, new = r[f"old_{s}"], r[f"new_{s}"]
            cells.append(f"{'n/a' if old is None else f'{100 * old:.1f}%':>8} {'n/a' if new is None else f'{100 * new:.1f}%':>8}")
        print(f"{r['rows']:>6} {r['ticks']:>5}  " + "  ".join(cells))
    shown = [r[f"new_{s}"] for r in results for s in STATISTICS if r[f"new_{s}"] is not None]
    outside = [f"{s} at {r['rows']} rows: {100 * r[f'new_{s}']:.1f} %" for r in results for s in STATISTICS
               if r[f"new_{s}"] is not None and not LOW <= r[f"new_{s}"] <= HIGH]
    print("outside 92-97 %: " + ("; ".join(outside) if outside else "none"))
    print("\nA share's interval at the edges (Clopper-Pearson at the effective sample size), coverage (mean width)")
    print(f"{'true rate':>9}  " + "  ".join(f"{f'{t} ticks':>17}" for t in EDGE_TICKS))
    for base in EDGE_RATES:
        cells = [e for e in edges if e["rate"] == base]
        print(f"{100 * cells[0]['truth']:>8.2f}%  " + "  ".join(
            f"{100 * e['coverage']:>7.1f}% ({100 * e['mean_width']:>5.1f}%)" for e in cells))
    narrow = [f"{100 * e['truth']:.2f} % at {e['ticks']} ticks: {100 * e['coverage']:.1f} %" for e in edges
              if e["coverage"] < LOW]
    print("edges under 92 %: " + ("; ".join(narrow) if narrow else "none"))
    print(json.dumps({"trials": args.trials, "seed": args.seed, "results": results,
                      "new_coverage_min": min(shown), "new_coverage_max": max(shown),
                      "new_below_92": [o for o in outside if float(o.split(": ")[1][:-2]) < 100 * LOW],
                      "new_above_97": [o for o in outside if float(o.split(": ")[1][:-2]) > 100 * HIGH],
                      "edges": edges, "edges_under_92": narrow,
                      "coverage_target_met": not outside, "edge_coverage_target_met": not narrow}))


if __name__ == "__main__":
    main()
