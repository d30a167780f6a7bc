"""Do the Elo intervals cover the truth? Simulated human-preference studies with known strengths.

A study as the method runs one: 19 configurations, 800 prompts of difficulty L1-L5, on every prompt
each configuration is paired at least once (a random matching, plus 5 random pairs: 15 pairs a
prompt, every pair at an equal rate), each pair rated by 1-3 raters (median 2) from the prompt's
panel of 3, drawn from 120 raters, each side shown first half the time. A rating's latent
preference for A is

    g(difficulty) * (mu_A - mu_B) + (v_pA - v_pB) + (u_rA - u_rB) + beta_r * o + logistic noise,

cut into CMOS -3..+3 at symmetric cut-points: mu the configurations' strengths, g spreads them on
harder prompts (0.7 to 1.3), v a prompt's effect on each configuration (a prompt that trips one
model), u a rater's taste per configuration, beta_r the rater's bias for the side shown first
(o = +1 where A was first).

The truth: the rater and prompt effects are random, so what a fit can recover is the strengths the
ordinal model converges to over infinitely many raters and prompts under this design: the fit
(ridge 0) to the expected share of each category in each (pair, side shown first) cell, computed
from the generating model by Gauss-Hermite quadrature over the summed random effects (normal, of
variance 2 sd_v^2 + 2 sd_u^2 + sd_beta^2) and averaged over the difficulty levels. Estimates and
truth both sum to zero over the 19 configurations, so they are compared as they are.

Printed: the coverage of the 95 % intervals of the method (the multiway-variance t interval:
raters + prompts - cells, each a one-way cluster bootstrap of the refit), of the crossed
("pigeonhole") rater x prompt bootstrap's percentile interval reported beside it, and of the
i.i.d. bootstrap that resamples ratings; the Spearman correlation between the three engines; the
time of one fit and of the board with its 1,000-resample bootstraps at 50,000 ratings. Targets:
coverage 92-97 % (`coverage_target_met`: the method's interval), the full bootstrap of 50,000
ratings under 2 minutes, the engines' Spearman >= 0.99 (the source's figure).

    python -m benchmarks.preference_recovery [--trials 30] [--resamples 400] [--speed-resamples 1000] [--seed 1]

`--quick`: 1 study, 20 resamples, a 10-resample timed board (seconds; the same code path, too few to
judge a target).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from scipy.special import expit

from voxwatch.metrics.clustered import row_weights
from voxwatch.metrics.preference import CMOS_MAX, Ratings, elo, ratings
from voxwatch.metrics.preference_bootstrap import board
from voxwatch.metrics.preference_engines import agreement
from voxwatch.metrics.preference_ordinal import CATEGORIES, Cells, fit_cells

CONFIGS = 19
PROMPTS, EXTRA_PAIRS = 800, 5
RATERS, PANEL = 120, 3
RATERS_PER_PAIR, RATERS_PER_PAIR_P = (1, 2, 3), (0.2, 0.6, 0.2)
MU = np.linspace(-1.0, 1.0, CONFIGS) + np.random.default_rng(17).normal(0.0, 0.08, CONFIGS)
GAP = np.array([0.7, 0.85, 1.0, 1.15, 1.3])
SD_PROMPT, SD_TASTE, FIRST, SD_FIRST = 0.6, 0.35, 0.15, 0.2
CUTS = np.array([-2.4, -1.3, -0.35, 0.35, 1.3, 2.4])
LOW, HIGH, SPEED_S, SPEARMAN_MIN = 0.92, 0.97, 120.0, 0.99


def pairs_of_prompt(rng: np.random.Generator) -> np.ndarray:
    """A random matching (the odd configuration out paired with a random other) plus random pairs:
    every configuration on every prompt, every pair at an equal rate."""
    order = rng.permutation(CONFIGS)
    pairs = [order[i:i + 2] for i in range(0, CONFIGS - 1, 2)]
    if CONFIGS % 2:
        pairs.append(np.array([order[-1], rng.choice(order[:-1])]))
    for _ in range(EXTRA_PAIRS):
        pairs.append(rng.choice(CONFIGS, 2, replace=False))
    return np.array(pairs)


def simulate(rng: np.random.Generator, prompts: int = PROMPTS, extra: int = EXTRA_PAIRS) -> Ratings:
    """One study's overall-rubric ratings, drawn from the generating model above."""
    level = rng.integers(0, GAP.size, prompts)
    v = rng.normal(0.0, SD_PROMPT, (prompts, CONFIGS))
    u = rng.normal(0.0, SD_TASTE, (RATERS, CONFIGS))
    bias = rng.normal(FIRST, SD_FIRST, RATERS)
    cols: dict[str, list[np.ndarray]] = {"rater": [], "prompt": [], "a": [], "b": []}
    for p in range(prompts):
        pairs = pairs_of_prompt(rng)
        if extra > EXTRA_PAIRS:
            pairs = np.vstack([pairs, [rng.choice(CONFIGS, 2, replace=False) for _ in range(extra - EXTRA_PAIRS)]])
        panel = rng.choice(RATERS, PANEL, replace=False)
        for a, b in pairs:
            for r in rng.choice(panel, rng.choice(RATERS_PER_PAIR, p=RATERS_PER_PAIR_P), replace=False):
                cols["rater"].append(r), cols["prompt"].append(p), cols["a"].append(a), cols["b"].append(b)
    rater, prompt, a, b = (np.asarray(cols[k]) for k in ("rater", "prompt", "a", "b"))
    a_first = rng.random(a.size) < 0.5
    o = np.where(a_first, 1.0, -1.0)
    eta = (GAP[level[prompt]] * (MU[a] - MU[b]) + v[prompt, a] - v[prompt, b] + u[rater, a] - u[rater, b]
           + bias[rater] * o)
    cmos = np.searchsorted(CUTS, eta + rng.logistic(size=a.size)) - CMOS_MAX
    return ratings(rater, prompt, [f"c{x:02d}" for x in a], [f"c{x:02d}" for x in b], a_first, cmos,
                   configs=tuple(f"c{x:02d}" for x in range(CONFIGS)))


def truth() -> np.ndarray:
    """The population strengths: the ordinal fit to each cell's expected category shares."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    weights = weights / weights.sum()
    sd = np.sqrt(2 * SD_PROMPT ** 2 + 2 * SD_TASTE ** 2 + SD_FIRST ** 2)
    a, b = np.triu_indices(CONFIGS, 1)
    a, b, first = np.repeat(a, 2), np.repeat(b, 2), np.tile([1, -1], a.size)
    upper = np.concatenate([CUTS, [np.inf]])
    share = np.zeros((a.size, CATEGORIES))
    for g in GAP:
        eta = g * (MU[a] - MU[b]) + FIRST * first
        cdf = expit(upper[None, :, None] - eta[:, None, None] - sd * nodes[None, None, :]) @ weights
        share += np.diff(np.concatenate([np.zeros((a.size, 1)), cdf], axis=1), axis=1) / GAP.size
    cell = Cells(np.repeat(a, CATEGORIES), np.repeat(b, CATEGORIES), np.repeat(first, CATEGORIES),
                 np.tile(np.arange(CATEGORIES), a.size), np.arange(a.size * CATEGORIES), CONFIGS)
    return fit_cells(cell, 1e6 * share.ravel(), ridge=0.0, tol=1e-14).strength


def coverage(trials: int, resamples: int, seed: int) -> dict:
    """Per trial: a new study, its clustered and row-bootstrap boards, the engines' agreement."""
    rng = np.random.default_rng(seed)
    target = elo(truth())
    hits = {"multiway": 0, "crossed": 0, "rows": 0}
    widths: dict[str, list[float]] = {k: [] for k in hits}
    rho: list[float] = []
    sizes: list[int] = []
    for t in range(trials):
        r = simulate(rng)
        sizes.append(len(r))
        method = board(r, resamples, seed=seed + t)
        rows = board(r, weights=row_weights(len(r), resamples, seed=seed + t))
        intervals = {"multiway": (method.low, method.high), "crossed": (method.crossed_low, method.crossed_high),
                     "rows": (rows.low, rows.high)}
        for name, (low, high) in intervals.items():
            hits[name] += int(np.sum((low <= target) & (target <= high)))
            widths[name].append(float(np.mean(high - low)))
        rho.append(min(agreement(r).spearman.values()))
    n = trials * CONFIGS
    return {"ratings_median": int(np.median(sizes)),
            **{f"{k}_coverage": round(hits[k] / n, 4) for k in hits},
            **{f"{k}_mean_width_elo": round(float(np.mean(widths[k])), 1) for k in widths},
            "spearman_min": round(min(rho), 4), "spearman_mean": round(float(np.mean(rho)), 4)}


def speed(resamples: int, seed: int) -> dict:
    """One fit and the full bootstrap of a study of about 50,000 ratings (31 pairs a prompt)."""
    r = simulate(np.random.default_rng(seed + 10_000), extra=EXTRA_PAIRS + 16)
    started = time.perf_counter()
    board(r, resamples=0)
    fit_s = time.perf_counter() - started
    started = time.perf_counter()
    bd = board(r, resamples=resamples)
    return {"speed_ratings": len(r), "fit_s": round(fit_s, 3), "bootstrap_s": round(time.perf_counter() - started, 2),
            "speed_missing_resamples": int(bd.missing.sum())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=30, help="simulated studies (default 30)")
    parser.add_argument("--resamples", type=int, default=400, help="resamples per bootstrap in the coverage study")
    parser.add_argument("--speed-resamples", type=int, default=1000, help="resamples of the timed board (default 1000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="1 study, 20 resamples, a 10-resample timed board (seconds)")
    args = parser.parse_args()
    if args.quick:
        args.trials, args.resamples, args.speed_resamples = 1, 20, 10
    started = time.perf_counter()
    cov = coverage(args.trials, args.resamples, args.seed)
    fast = speed(args.speed_resamples, args.seed)
    print(f"Elo 95 % intervals over {args.trials} simulated studies x {CONFIGS} configurations "
          f"({cov['ratings_median']} ratings each, median); truth: the ordinal fit's population limit")
    print(f"{'bootstrap':<28} {'coverage':>9} {'mean width (Elo)':>17}")
    for name, label in (("multiway", "multiway variance, t (method)"), ("crossed", "rater x prompt crossed, pct"),
                        ("rows", "ratings i.i.d., percentile")):
        print(f"{label:<28} {100 * cov[f'{name}_coverage']:>8.1f}% {cov[f'{name}_mean_width_elo']:>17.1f}")
    print(f"Spearman between engines (worst pair per study): min {cov['spearman_min']:.4f}, mean {cov['spearman_mean']:.4f}")
    print(f"{fast['speed_ratings']} ratings: one fit {fast['fit_s']:.3f} s, {args.speed_resamples}-resample board "
          f"{fast['bootstrap_s']:.1f} s (target < {SPEED_S:.0f} s)")
    print(json.dumps({"trials": args.trials, "resamples": args.resamples, "seed": args.seed, **cov, **fast,
                      "seconds": round(time.perf_counter() - started, 1),
                      "coverage_target_met": LOW <= cov["multiway_coverage"] <= HIGH,
                      "speed_target_met": fast["bootstrap_s"] < SPEED_S,
                      "spearman_target_met": cov["spearman_mean"] >= SPEARMAN_MIN}))


if __name__ == "__main__":
    main()
