"""A worker measuring for a long time: `python -m benchmarks.soak [--minutes 10] [--streams 64] [--kinds stt,tts,s2s]`.

One worker process measures waves of `--streams` concurrent cloud streams against the loopback
vendor emulators (each emulator in its own process, with its send ledger), one wave after
another for `--minutes`, on one event loop with one adapter per model, as a Celery worker's
process does (voxwatch/workers/process_state.py). The waves take the stream kinds in turn (STT streaming,
TTS, S2S; `--kinds` picks some), and each kind its vendor protocols in turn.

Each window (a minute; a half of the run when it is shorter than two minutes, so that there is a
warm-up window to compare with) prints: the streams measured, the clock error (p50 / p99 / max
of its absolute value over every metric of every stream: measured minus the truth as the emulator
actually sent it, as in benchmarks/clock_truth.py) and the worker's resident memory (RSS) at its
end, with the emulators' for reference.

The worker runs on one core and the emulators on the others (where there are two or more): the
emulators stand in for vendors on other machines, and their scheduling would otherwise land in
the worker's clock error.

Targets: clock error p99 <= 2 ms in every window (on an idle machine); RSS flat: the last
window's RSS within 10 % of the first window's, the first window being the warm-up (imports,
connection pools, caches fill). `--load N` soaks again with N CPU-bound processes beside it (on every
core) and prints both (the same targets, under `loaded_` names). `--quick`: 6 s of 4 streams, each kind's
first vendor protocol only (the same code path in seconds; too short to judge a target). Last line:
one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import multiprocessing
import os
import time
from dataclasses import dataclass, field

import numpy as np

from voxwatch.metrics.witness import stalled_row
from voxwatch.providers.emulators.ledger import Ledger
from voxwatch.providers.emulators.scenario import Scenarios
from voxwatch.providers.emulators.server import serve
from voxwatch.providers.registry import Registry

from .load import add_load_argument, print_runs, same_targets
from .rig import PROTOCOLS, Errors, Rig, rig, streams, summary

KINDS = {  # the stream kinds a wave takes in turn, and each kind's vendor protocols in turn
    "stt": ("deepgram", "assemblyai", "speechmatics", "elevenlabs-scribe", "openai-realtime-stt"),
    "tts": ("cartesia", "deepgram-aura", "elevenlabs-ws", "elevenlabs-http", "openai-tts"),
    "s2s": ("openai-realtime-s2s", "gemini-live"),
}
CLOCK_P99_TARGET_MS = 2.0
RSS_FLAT_TARGET = 0.10


def rss_mb(pid: int | str = "self") -> float:
    """Resident memory of a process (Linux), MB."""
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def pin_apart(emulator_pids: list[int]) -> bool:
    """The worker on one core, the emulators on the others (Linux, 2+ cores): the emulators stand in
    for vendors on other machines, and sharing a core with the worker's loop would add their
    scheduling delays to its clock error. Whether it pinned."""
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(cores) < 2:
        return False
    os.sched_setaffinity(0, {cores[0]})
    for pid in emulator_pids:
        os.sched_setaffinity(pid, set(cores[1:]))
    return True


def wave_rig(rigs: dict[str, list[Rig]], wave: int) -> tuple[str, Rig]:
    """The kind and protocol of wave `wave`: the kinds in turn, each kind's protocols in turn."""
    kind = list(rigs)[wave % len(rigs)]
    protocols = rigs[kind]
    return kind, protocols[(wave // len(rigs)) % len(protocols)]


def bundles(rigs: list[Rig]) -> dict[str, Scenarios]:
    """One scenario bundle per emulator process (Deepgram serves its STT and TTS from one host, say)."""
    out: dict[str, dict] = {}
    for r in rigs:
        boards = out.setdefault(r.protocol.emulator, {})
        if boards.setdefault(r.model.board, r.scenario) != r.scenario:
            raise ValueError(f"two {r.model.board} scenarios for the {r.protocol.emulator} emulator")
    return {name: Scenarios(**boards) for name, boards in out.items()}


@dataclass
class Window:
    """What one window measured."""

    started: float
    waves: int = 0
    streams: int = 0
    failed: list[str] = field(default_factory=list)
    stalled: int = 0  # rows the clock witness excluded as the worker's stall (METHOD "Clock witness")
    errors: dict[str, Errors] = field(default_factory=dict)  # by vendor protocol
    pacing: dict[str, list[float]] = field(default_factory=dict)  # by kind: each audio-in row's pacing_error_ms

    def row(self, soak_started: float, emulator_pids: list[int]) -> dict:
        def p99(names) -> float | None:
            pairs = [p for name in names for values in self.errors[name].values.values() for p in values]
            return summary(pairs)["p99_ms"] if pairs else None

        pairs = [p for e in self.errors.values() for values in e.values.values() for p in values]
        s = summary(pairs) if pairs else {"p50_ms": None, "p99_ms": None, "max_ms": None}
        kinds = {kind: [n for n in names if n in self.errors] for kind, names in KINDS.items()}
        now = time.perf_counter()
        return {"end_s": round(now - soak_started, 1), "seconds": round(now - self.started, 1), "waves": self.waves,
                "streams": self.streams, "failed": len(self.failed), "failures": self.failed[:3],
                "stalled": self.stalled,
                "clock_error_ms": {k: s[k] for k in ("p50_ms", "p99_ms", "max_ms")},
                "p99_by_kind_ms": {kind: p99(names) for kind, names in kinds.items() if names},
                "p99_by_protocol_ms": {name: p99([name]) for name in self.errors},
                "pacing_p99_by_kind_ms": {kind: round(float(np.percentile(v, 99)), 3) for kind, v in self.pacing.items()},
                "rss_mb": round(rss_mb(), 1), "emulators_rss_mb": round(sum(rss_mb(p) for p in emulator_pids), 1)}


def soak(registry: Registry, seconds: float, n_streams: int, kinds: list[str],
         protocols: int | None = None) -> tuple[list[dict], bool]:
    """`protocols`: each kind's first so many vendor protocols (None: all)."""
    rigs = {kind: [rig(registry, PROTOCOLS[name]) for name in KINDS[kind][:protocols]] for kind in kinds}
    every = [r for kind in rigs.values() for r in kind]
    most = min((r.most_streams for r in every if r.most_streams is not None), default=n_streams)
    if n_streams > most:
        raise SystemExit(f"--streams at most {most}: a stream's ledger key is its clip")
    window_s = 60.0 if seconds >= 120 else seconds / 2
    loop = asyncio.new_event_loop()
    with contextlib.ExitStack() as stack:
        ledgers: dict[str, Ledger] = {}
        urls = {}
        for name, scenarios in bundles(every).items():
            ledgers[name] = Ledger()
            urls[name] = stack.enter_context(serve(name, scenarios, ledger=ledgers[name]))
        emulator_pids = [p.pid for p in multiprocessing.active_children()]
        pinned = pin_apart(emulator_pids)
        adapters = {r.protocol.name: r.adapter(registry, urls[r.protocol.emulator]) for r in every}
        for r in every:  # warm-up, discarded: imports, first connections
            loop.run_until_complete(streams(r.model, adapters[r.protocol.name], r.dataset, r.warm_up()))
        for ledger in ledgers.values():
            ledger.drain()
        started = time.perf_counter()
        windows: list[dict] = []
        window, wave = Window(started), 0
        while len(windows) < math.ceil(seconds / window_s - 1e-9):
            kind, r = wave_rig(rigs, wave)
            items = r.items(n_streams, wave)
            rows, timelines = loop.run_until_complete(streams(r.model, adapters[r.protocol.name], r.dataset, items))
            sent = ledgers[r.protocol.emulator].drain()
            errors = window.errors.setdefault(r.protocol.name, Errors())
            for item, row, timeline in zip(items, rows, timelines):
                if stalled_row(row.status, row.reason):  # the worker's own stall: counted, not a failure
                    window.stalled += 1
                    continue
                if row.status != "ok":  # a worker goes on; the window reports it
                    window.failed.append(f"{r.protocol.name} {item.id}: {row.status}: {row.reason}")
                    continue
                r.add(errors, item, row, timeline, sent)
                if row.pacing_error_ms is not None:  # how late the worker wrote the caller's audio
                    window.pacing.setdefault(kind, []).append(row.pacing_error_ms)
            window.waves, window.streams, wave = window.waves + 1, window.streams + len(items), wave + 1
            if time.perf_counter() - started >= min((len(windows) + 1) * window_s, seconds):
                windows.append(window.row(started, emulator_pids))
                _print_row(len(windows), windows[-1])
                window = Window(time.perf_counter())
    loop.close()
    return windows, pinned


def _ms(value: float | None, width: int) -> str:
    return f"{value:{width}.3f}" if value is not None else f"{'-':>{width}}"


def _print_row(n: int, w: dict) -> None:
    if n == 1:
        print(f"{'window':>6} {'end s':>6} {'waves':>5} {'streams':>7} {'failed':>6} {'stalled':>7} | clock error ms: {'p50':>6} "
              f"{'p99':>6} {'max':>7} | p99 by kind ms{'':14} | {'RSS MB':>7} {'emulators MB':>12}", flush=True)
    c = w["clock_error_ms"]
    kinds = " ".join(f"{k} {_ms(v, 0).strip()}" for k, v in w["p99_by_kind_ms"].items())
    print(f"{n:6d} {w['end_s']:6.0f} {w['waves']:5d} {w['streams']:7d} {w['failed']:6d} {w['stalled']:7d} |                "
          f"{_ms(c['p50_ms'], 6)} {_ms(c['p99_ms'], 6)} {_ms(c['max_ms'], 7)} | {kinds:28} | {w['rss_mb']:7.1f} "
          f"{w['emulators_rss_mb']:12.1f}", flush=True)


def measure(args: argparse.Namespace) -> tuple[list[dict], bool]:
    """One soak: its windows, and whether the worker and emulators were on separate cores. This process's
    cores are given back after, so that a second run (--load) pins afresh."""
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    try:
        return soak(Registry.default(), args.minutes * 60, args.streams, args.kinds.split(","),
                    1 if args.quick else None)
    finally:
        if cores:
            os.sched_setaffinity(0, cores)


def run(args: argparse.Namespace) -> dict:
    """Measure (the windows print as they end), print the verdict line, return the JSON object."""
    kinds = args.kinds.split(",")
    windows, pinned = measure(args)
    p99s = [w["clock_error_ms"]["p99_ms"] for w in windows]
    first, last = windows[0]["rss_mb"], windows[-1]["rss_mb"]
    growth = (last - first) / first
    p99_met = all(p is not None and p <= CLOCK_P99_TARGET_MS for p in p99s)
    rss_met = len(windows) > 1 and abs(growth) <= RSS_FLAT_TARGET
    worst = max((p for p in p99s if p is not None), default=None)
    print(f"worst window p99 clock error {_ms(worst, 0).strip()} ms (target <= "
          f"{CLOCK_P99_TARGET_MS:g} ms in every window); RSS {first:.1f} MB after the warm-up window -> {last:.1f} MB "
          f"at the end ({growth:+.1%}; target within {RSS_FLAT_TARGET:.0%}); "
          f"{sum(w['streams'] for w in windows)} streams, {sum(w['failed'] for w in windows)} failed")
    return {"benchmark": "soak", "minutes": args.minutes, "streams": args.streams, "kinds": kinds,
            "worker_and_emulators_on_separate_cores": pinned,
            "clock_p99_target_met": p99_met, "rss_flat_target_met": rss_met,
            "worst_p99_ms": worst, "rss_first_mb": first, "rss_last_mb": last,
            "rss_growth": round(growth, 4), "windows": windows}


def headline(figures: dict) -> dict[str, float | None]:
    """The worst window's p99 (ms): clock error, overall and by kind; pacing by kind."""
    def worst(key: str) -> dict[str, float]:
        out: dict[str, float] = {}
        for w in figures["windows"]:
            for kind, p99 in w[key].items():
                if p99 is not None:
                    out[kind] = max(out.get(kind, p99), p99)
        return out

    return {"worst window p99 clock error (ms)": figures["worst_p99_ms"],
            **{f"worst window p99 clock error, {k} (ms)": v for k, v in worst("p99_by_kind_ms").items()},
            **{f"worst window p99 pacing error, {k} (ms)": v for k, v in worst("pacing_p99_by_kind_ms").items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0, help="how long to measure (fractions allowed)")
    parser.add_argument("--streams", type=int, default=64, help="concurrent streams per wave")
    parser.add_argument("--kinds", default=",".join(KINDS), help="the stream kinds the waves take in turn")
    parser.add_argument("--quick", action="store_true",
                        help="6 s of 4 streams, each kind's first vendor protocol only (seconds)")
    add_load_argument(parser)
    args = parser.parse_args()
    if args.quick:
        args.minutes, args.streams = 0.1, 4
    kinds = args.kinds.split(",")
    if args.minutes <= 0 or args.streams < 1 or not set(kinds) <= set(KINDS):
        parser.error(f"--minutes must be > 0, --streams >= 1, --kinds from {', '.join(KINDS)}")
    print_runs(lambda: run(args), args.load, headline, same_targets)


if __name__ == "__main__":
    main()
