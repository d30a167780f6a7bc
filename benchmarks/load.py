"""A busy machine for the clock benchmarks: `--load N` runs N CPU-bound processes beside them.

Production workers share their cores with other work, so a clock benchmark runs once idle and once
with N burners (pure Python spin loops), and prints both. The burners are this process's children,
stopped by their pids on the way out whatever happens; each also ends by itself after LIFETIME_S or
when its parent is gone, so a benchmark killed outright cannot leave them spinning.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from contextlib import contextmanager
from typing import Callable, Iterator

MAX_LOAD = 16
LIFETIME_S = 2 * 3600.0
_CORES = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
"""Every core this process may use, read at import: a benchmark may pin itself later (soak does), and
burners started after that would inherit the pin and load one core only."""

BURN = """
import os, sys, time
parent, end = os.getppid(), time.monotonic() + float(sys.argv[1])
print(flush=True)
while time.monotonic() < end and os.getppid() == parent:
    for _ in range(200_000):
        pass
"""
"""A burner: says it started (one line), then spins until its lifetime is up or its parent is gone."""


def load_count(text: str) -> int:
    """argparse type for --load: a whole number of burners from 0 to MAX_LOAD."""
    try:
        n = int(text)
    except ValueError:
        n = -1
    if not 0 <= n <= MAX_LOAD:
        raise argparse.ArgumentTypeError(f"takes a whole number from 0 to {MAX_LOAD}, not {text!r}")
    return n


def add_load_argument(parser: argparse.ArgumentParser) -> None:
    """The one wording of --load, shared by every benchmark that takes it."""
    parser.add_argument("--load", type=load_count, default=0, metavar="N",
                        help=f"also run the measurement with N CPU-bound processes beside it (0-{MAX_LOAD}) and "
                             "print idle and loaded figures side by side (default 0: idle only)")


def loadavg() -> list[float]:
    """The 1, 5 and 15 minute load averages, to print beside loaded figures."""
    return [round(x, 2) for x in os.getloadavg()]


@contextmanager
def burners(n: int, lifetime_s: float = LIFETIME_S) -> Iterator[list[int]]:
    """N burner processes, spinning on every core this process may use; yields their pids once each
    is running, and kills and reaps exactly those on exit (exceptions and Ctrl-C included)."""
    if not 0 <= n <= MAX_LOAD:
        raise ValueError(f"burners: n must be 0..{MAX_LOAD}, not {n}")
    started: list[subprocess.Popen] = []
    try:
        for _ in range(n):
            p = subprocess.Popen([sys.executable, "-c", BURN, str(lifetime_s)], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            started.append(p)
            if _CORES:
                os.sched_setaffinity(p.pid, _CORES)
        for p in started:
            p.stdout.readline()  # it is spinning
            p.stdout.close()
        yield [p.pid for p in started]
    finally:
        for p in started:
            p.kill()
        for p in started:
            p.wait()


def _processes(n: int) -> str:
    return f"{n} CPU-bound process{'es' if n != 1 else ''}"


def idle_and_loaded(run: Callable[[], dict], n: int) -> tuple[dict, dict, list[float], list[int]]:
    """`run` once idle, then once with n burners: both results, the load average at the loaded run's end
    and the burners' pids (gone by the time this returns)."""
    print("== idle ==", flush=True)
    idle = run()
    print(f"== loaded: {_processes(n)} beside it ==", flush=True)
    with burners(n) as pids:
        loaded = run()
        average = loadavg()
    return idle, loaded, average, pids


def _cell(value: float | None) -> str:
    return f"{'-':>10}" if value is None else f"{value:10.3f}"


def print_side_by_side(idle: dict[str, float | None], loaded: dict[str, float | None], n: int,
                       average: list[float]) -> None:
    """The headline figures, an idle and a loaded column (a figure only one run has: '-' in the other)."""
    names = list(idle) + [name for name in loaded if name not in idle]
    width = max(map(len, names), default=6)
    print(f"{'figure':{width}} {'idle':>10} {'loaded':>10}")
    for name in names:
        print(f"{name:{width}} {_cell(idle.get(name))} {_cell(loaded.get(name))}")
    print(f"loaded: {_processes(n)} beside it on {len(_CORES) or os.cpu_count()} cores, "
          f"load average (1, 5, 15 min) at its end {tuple(average)}")


def print_runs(run: Callable[[], dict], n: int, headline: Callable[[dict], dict[str, float | None]],
               loaded_targets: Callable[[dict], dict[str, bool]]) -> None:
    """A benchmark's output. With n = 0, `run` once and its JSON object last, as before --load existed.
    Otherwise each run as it prints alone, the headline figures side by side, and last one JSON object
    holding both runs (`idle`, `loaded`), the idle run's `*_target_met` keys as they are without --load,
    and the loaded targets under `loaded_` names."""
    if n == 0:
        print(json.dumps(run()))
        return
    idle, loaded, average, pids = idle_and_loaded(run, n)
    print_side_by_side(headline(idle), headline(loaded), n, average)
    print(json.dumps({"benchmark": idle.get("benchmark"), "load": n, "loadavg": average, "burner_pids": pids,
                      **{k: v for k, v in idle.items() if k.endswith("_target_met")},
                      **{f"loaded_{k}": v for k, v in loaded_targets(loaded).items()},
                      "idle": idle, "loaded": loaded}))


def same_targets(figures: dict) -> dict[str, bool]:
    """The loaded targets where they are the idle ones: the run's own `*_target_met` keys."""
    return {k: v for k, v in figures.items() if k.endswith("_target_met")}
