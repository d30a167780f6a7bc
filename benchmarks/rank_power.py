"""Do ranks separate models that differ on every clip, and only those? `python -m benchmarks.rank_power [--quick]`

Simulated boards with a known population, written to a real SQLite store as stored rows and read
back by the production readers (leaderboard.from_store, boards.comparisons.from_store,
metrics.ranking.ranks: what `voxwatch leaderboard` prints). A board is two streaming-STT models
on one dataset: a tick every 30 minutes draws 10 of 64 utterances and both models hear that
draw. Latency (ttfs_ms) = 455 ms x exp(the utterance's effect (sd 0.15, shared: a long clip is
slow for both) + the tick's shock (sd 0.06, shared: the worker's network at that moment) + a
diurnal drift + each model's own tick shock (sd 0.02; one tick in 48 slow for one model, x1.5-3)
+ heavy-tailed row noise (0.15 x Student's t, 3 df)). WER: each utterance its own difficulty
(beta(1.2, 14)) and 2-16 words, errors binomial. 1 % of attempts fail.

Model b is model a plus a consistent difference on every clip: 10 ms / 0.75 WER points, 20 ms /
1.5 points (the case of issue 29: 4.4 % of the p50), 40 ms / 3 points; or nothing (identical).
Reported per size and number of ticks: the share of boards where b ranks behind a (for identical
models: ranked apart at all), the per-series 95 % intervals' rule of method 7 (overlap) beside
it, and the share where pooled WER's paired comparison shows the difference. Targets: the 20 ms
/ 1.5-point difference ranked apart within 96 ticks in >= 85 % of boards; identical models
ranked apart in <= 5 % (all tick counts pooled). Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voxwatch.boards import comparisons as board_comparisons
from voxwatch.boards import leaderboard
from voxwatch.foundation.observation import Observation
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.ranking import ranks
from voxwatch.metrics.series import MetricRow
from voxwatch.store import open_store

TICK_S, CATALOG, PER_TICK, MEDIAN_MS = 1800.0, 64, 10, 455.0
SIZES = ((10.0, 0.75), (20.0, 1.5), (40.0, 3.0), (0.0, 0.0))
TICKS = (10, 20, 40, 96)
BOARDS = {False: {10.0: 40, 20.0: 200, 40.0: 40, 0.0: 150}, True: {10.0: 1, 20.0: 2, 40.0: 1, 0.0: 2}}
"""Boards per (size, number of ticks), full and --quick: the target's case and the identical pairs get the most,
so the shares they are judged by are known to about +-2.5 points (full)."""
MODELS = ("sim/a@1", "sim/b@1")
DATASET = "sim-starter"


@dataclass(frozen=True)
class Trial:
    seed: int
    ticks: int
    ms: float
    points: float


def rows(t: Trial) -> list[Observation]:
    """One board's stored rows: both models on the same draws, b = a + the trial's difference."""
    rng = np.random.default_rng(t.seed)
    latency_u, wer_u, words_u = rng.normal(0, 0.15, CATALOG), rng.beta(1.2, 14, CATALOG), rng.integers(2, 17, CATALOG)
    start = time.time() - t.ticks * TICK_S - 60
    shared_shock = rng.normal(0, 0.06, t.ticks) + 0.05 * np.sin(2 * np.pi * (np.arange(t.ticks) * TICK_S) / 86400)
    out = []
    for m, (model, ms, points) in enumerate(((MODELS[0], 0.0, 0.0), (MODELS[1], t.ms, t.points))):
        own = rng.normal(0, 0.02, t.ticks) + np.where(rng.random(t.ticks) < 1 / 48,
                                                      np.log(rng.uniform(1.5, 3.0, t.ticks)), 0.0)
        for k in range(t.ticks):
            draw = np.random.default_rng([t.seed, k]).choice(CATALOG, PER_TICK, replace=False)  # one draw for both
            for j, u in enumerate(draw):
                ok = rng.random() >= 0.01
                value = MEDIAN_MS * np.exp(latency_u[u] + shared_shock[k] + own[k] + 0.15 * rng.standard_t(3)) + ms
                errors = int(rng.binomial(words_u[u], min(1.0, wer_u[u] + points / 100)))
                out.append(Observation(
                    run_id=f"tick-{k}", model_id=model, dataset=DATASET, clip_id=f"u{u:02d}", attempt=1, board="stt",
                    vendor="sim", protocol="stt-stream", region="local", started_at=start + k * TICK_S + j * 18 + m,
                    status="ok" if ok else "server_error", ttfs_ms=float(value) if ok else None,
                    first_partial_ms=float(value) / 2 if ok else None, substitutions=errors if ok else 0,
                    deletions=0, insertions=0, ref_words=int(words_u[u]) if ok else None,
                    method_version=METHOD_VERSION, hypothesis="", reference="", emulator=False))
    return out


def _overlap_apart(board: list[MetricRow]) -> bool:
    """Method 7's rule: ranked apart when the two series' whole 95 % p50 intervals do not overlap."""
    ttfs = {r.model_id: r.p50_ci for r in board if r.metric == "ttfs_ms"}
    a, b = ttfs.get(MODELS[0]), ttfs.get(MODELS[1])
    return a is not None and b is not None and (a[1] < b[0] or b[1] < a[0])


def trial(t: Trial) -> dict:
    """One board through the store and the production readers: its ranks, and WER's comparison."""
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{Path(tmp) / 'board.sqlite'}")
        try:
            store.add(rows(t))
            board = leaderboard.from_store(store, "30d")
            compared = board_comparisons.from_store(store, "30d")
        finally:
            store.close()
    ranked = {k.model_id: v for k, v in ranks(board, METHOD_VERSION, compared).items()}
    ra, rb = ranked.get(MODELS[0]), ranked.get(MODELS[1])
    wer = [c for c in compared if c.statistic == "pooled_wer"]
    return {"ms": t.ms, "ticks": t.ticks, "apart": ra is not None and rb is not None and ra != rb,
            "right_way": ra is not None and rb is not None and ra < rb, "overlap_apart": _overlap_apart(board),
            "wer_shown": bool(wer) and wer[0].shown and (wer[0].difference.estimate or 0) > 0,
            "wer_apart": bool(wer) and wer[0].shown}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1-2 boards per cell (seconds; too few to judge a target)")
    args = parser.parse_args()
    started = time.perf_counter()
    boards = BOARDS[args.quick]
    trials = [Trial(seed=1_000_000 * i + 1000 * ticks + int(ms), ticks=ticks, ms=ms, points=points)
              for ms, points in SIZES for ticks in TICKS for i in range(boards[ms])]
    with ProcessPoolExecutor(2) as pool:
        results = list(pool.map(trial, trials, chunksize=4))
    table, summary = [], {}
    for ms, points in SIZES:
        for ticks in TICKS:
            got = [r for r in results if r["ms"] == ms and r["ticks"] == ticks]
            key = "right_way" if ms else "apart"
            wer_key = "wer_shown" if ms else "wer_apart"
            share = sum(r[key] for r in got) / len(got)
            old = sum(r["overlap_apart"] for r in got) / len(got)
            wer = sum(r[wer_key] for r in got) / len(got)
            summary[f"{ms:g}ms_{points:g}pt_{ticks}ticks"] = {"boards": len(got), "ranked_apart": round(share, 3),
                                                             "overlap_rule_apart": round(old, 3),
                                                             "wer_shown": round(wer, 3)}
            table.append((f"{ms:g} ms / {points:g} pt" if ms else "identical", ticks, len(got), share, old, wer))
    print("two models on the same clips; b = a + a consistent difference on every clip (identical: none)\n")
    print(f"{'difference':<18}{'ticks':>6}{'boards':>8}{'paired ranks apart':>20}{'overlap rule apart':>20}"
          f"{'WER pair shown':>16}")
    for name, ticks, n, share, old, wer in table:
        print(f"{name:<18}{ticks:>6}{n:>8}{share:>20.0%}{old:>20.0%}{wer:>16.0%}")
    case = summary["20ms_1.5pt_96ticks"]
    nulls = [r for r in results if r["ms"] == 0]
    null_share = sum(r["apart"] for r in nulls) / len(nulls)
    null_wer = sum(r["wer_apart"] for r in nulls) / len(nulls)
    print(f"\n20 ms / 1.5 points after 96 ticks: ranked apart in {case['ranked_apart']:.0%} of boards (target >= 85 %); "
          f"identical models ranked apart in {null_share:.1%} of {len(nulls)} boards (target <= 5 %), their WER "
          f"pair shown in {null_wer:.1%}")
    result = {"quick": args.quick, "results": summary, "identical_ranked_apart": round(null_share, 4),
              "identical_wer_shown": round(null_wer, 4), "identical_boards": len(nulls),
              "consistent_difference_target_met": case["ranked_apart"] >= 0.85,
              "identical_models_target_met": null_share <= 0.05,
              "seconds": round(time.perf_counter() - started, 1)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
