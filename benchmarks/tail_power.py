"""Does the paired p95 comparison tell a slow tail apart, and only that? `python -m benchmarks.tail_power [--quick]`

Simulated pairs of models on the same clips at the same ticks, compared by the production code
(metrics.paired.tail_paired_difference, and median_paired_difference beside it). 24 utterances
heard at every tick; latency = 455 ms x exp(the utterance's effect (sd 0.15, shared) + the tick's
shock (sd 0.06, shared) + each model's own row noise (sd 0.05)). Model b is model a's population
plus, on a random share of its cells, a slow tail (+250 ms on 12 % of cells, as many cells 60 ms
faster so that the medians stay about level); or nothing (identical models).

Reported per case and number of ticks: the share of pairs where the p95 comparison's two-sided
p-value is under 5 % (a single pair: no Holm), and the median's (the sign test) beside it. Targets:
identical models told apart by the p95 comparison in <= 7.5 % of pairs (5 % nominal, pooled over
tick counts, with the simulation's own error); the slow tail told apart after 20 ticks in >= 80 %.
Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from voxwatch.metrics.paired import cells, median_paired_difference, tail_paired_difference

UTTERANCES, MEDIAN_MS = 24, 455.0
TICKS = (5, 10, 20)
PAIRS = {False: 200, True: 16}
"""Pairs per (case, number of ticks), full and --quick."""
CASES = ("identical", "slow tail")


@dataclass(frozen=True)
class Trial:
    seed: int
    ticks: int
    case: str


def values(t: Trial) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """Both models' values on every (utterance, tick) cell of one simulated pair."""
    rng = np.random.default_rng(t.seed)
    u = np.repeat(np.arange(UTTERANCES), t.ticks)
    k = np.tile(np.arange(t.ticks), UTTERANCES)
    shared = rng.normal(0, 0.15, UTTERANCES)[u] + rng.normal(0, 0.06, t.ticks)[k]
    a = MEDIAN_MS * np.exp(shared + rng.normal(0, 0.05, u.size))
    b = MEDIAN_MS * np.exp(shared + rng.normal(0, 0.05, u.size))
    if t.case == "slow tail":
        draw = rng.uniform(size=u.size)
        b = b + np.select([draw < 0.12, draw > 0.88], [250.0, -60.0], 0.0)
    return [f"u{x}" for x in u], [f"t{x}" for x in k], a, b


def trial(t: Trial) -> dict:
    u, k, a, b = values(t)
    ca, cb = cells(u, k, a), cells(u, k, b)
    tail, median = tail_paired_difference(ca, cb).difference, median_paired_difference(ca, cb).difference
    return {"case": t.case, "ticks": t.ticks, "tail_apart": tail.p_value is not None and tail.p_value < 0.05,
            "tail_na": tail.p_value is None, "median_apart": median.p_value is not None and median.p_value < 0.05}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer pairs (seconds)")
    args = parser.parse_args()
    started = time.perf_counter()
    trials = [Trial(seed=100_000 * i + 100 * ticks + CASES.index(case), ticks=ticks, case=case)
              for case in CASES for ticks in TICKS for i in range(PAIRS[args.quick])]
    with ProcessPoolExecutor(2) as pool:
        results = list(pool.map(trial, trials, chunksize=8))
    summary, table = {}, []
    for case in CASES:
        for ticks in TICKS:
            got = [r for r in results if r["case"] == case and r["ticks"] == ticks]
            tail = sum(r["tail_apart"] for r in got) / len(got)
            na = sum(r["tail_na"] for r in got) / len(got)
            median = sum(r["median_apart"] for r in got) / len(got)
            summary[f"{case.replace(' ', '_')}_{ticks}ticks"] = {"pairs": len(got), "p95_apart": round(tail, 3),
                                                                 "p95_na": round(na, 3), "median_apart": round(median, 3)}
            table.append((case, ticks, len(got), tail, na, median))
    print(f"two models on the same clips ({UTTERANCES} utterances a tick); slow tail: +250 ms on 12 % of cells, "
          "as many 60 ms faster\n")
    print(f"{'case':<12}{'ticks':>6}{'pairs':>7}{'p95 told apart':>16}{'p95 n/a':>9}{'median told apart':>19}")
    for case, ticks, n, tail, na, median in table:
        print(f"{case:<12}{ticks:>6}{n:>7}{tail:>16.0%}{na:>9.0%}{median:>19.0%}")
    nulls = [r for r in results if r["case"] == "identical" and not r["tail_na"]]
    null_share = sum(r["tail_apart"] for r in nulls) / len(nulls)
    power = summary["slow_tail_20ticks"]["p95_apart"]
    print(f"\nidentical models told apart on p95 in {null_share:.1%} of {len(nulls)} pairs (target <= 7.5 %); "
          f"the slow tail after 20 ticks in {power:.0%} (target >= 80 %)")
    print(json.dumps({"quick": args.quick, "results": summary, "identical_p95_apart": round(null_share, 4),
                      "identical_pairs": len(nulls), "identical_models_target_met": null_share <= 0.075,
                      "slow_tail_target_met": power >= 0.8, "seconds": round(time.perf_counter() - started, 1)}))


if __name__ == "__main__":
    main()
