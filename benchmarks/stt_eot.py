"""The STT's own end of turn against injected truth: `python -m benchmarks.stt_eot [--quick] [--load N]`.

Loopback emulators of the protocols whose adapters stamp an end of turn (METHOD "STT end of turn")
serve the calibration rig's scenario (benchmarks/rig.py: per-stream anchors and transcripts, keyed by
each stream's first chunk, with per-stream jitter), with the end of turn scripted `EOT_MS` after the end
of speech, and, where the emulator speaks them (Flux, Speechmatics), end-of-turn messages injected at
fixed times into the stream (`CUTOFFS_S`): inside a clip's speech they are false cut-offs, before it
they are neither. Every stream is measured through the real code path (adapter -> measure_item ->
metrics/end_of_turn.py), the caller staying on the line up to `WAIT_S` for the end of turn, at 1 and 16
streams at once.

Two figures per protocol and level:
- **eot error**: the stored eot_ms minus the end of turn as the emulator sent it (its send stamps come
  back through the ledger, on the machine's shared monotonic clock) from the end of speech's write:
  voxwatch's clock error alone (target: p99 <= 2 ms, idle and under `--load`). As in clock_truth, the
  truth is the span between the emulator's stamps before and after its write (a value inside it is no
  error of voxwatch's); `raw p99` is from the stamp before the write, loopback transit included.
- **cut-offs**: the rows whose eot_false_cutoffs differs from the cut-offs injected inside the clip's
  speech (target: none). A stream whose injected time lies within `MARGIN_S` of an anchor is left out
  of this count (which side of the write it falls on is the emulator's scheduling, not the definition).
Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import replace

import numpy as np

from voxwatch.foundation.events import Timeline
from voxwatch.metrics.as_sent import sent_at_ns
from voxwatch.providers.emulators.ledger import AFTER, Ledger
from voxwatch.providers.emulators.server import serve
from voxwatch.providers.registry import Registry

from .load import add_load_argument, print_runs, same_targets
from .rig import PROTOCOLS, AudioRig, Protocol, _ctx, chosen

from voxwatch.harness.measure import measure_item

EOT_MS = 280.0
CUTOFFS_S = (0.15, 1.1)
WAIT_S = 2.0
MARGIN_S = 0.05
TARGET_MS = 2.0
LEVELS = (1, 16)
EOT_PROTOCOLS = {
    "deepgram-flux": Protocol("deepgram-flux", "deepgram", "deepgram/flux-general-en"),
    "deepgram": PROTOCOLS["deepgram"],
    "assemblyai": PROTOCOLS["assemblyai"],
    "speechmatics": PROTOCOLS["speechmatics"],
}
CUTS = ("deepgram-flux", "speechmatics")  # the emulators that speak a mid-speech end of turn
SEPARATE = ("speechmatics",)  # where the end of turn is a message of its own, not the final


def _scenario(setup: AudioRig, name: str):
    eot = {"eot_ms": EOT_MS} if name in SEPARATE else {"final_ms": EOT_MS}
    return replace(setup.scenario, **eot, cutoffs_s=CUTOFFS_S if name in CUTS else ())


async def _streams(model, adapter, dataset, items) -> list[tuple]:
    async def one(item) -> tuple:
        held: list[Timeline] = []
        ctx = replace(_ctx(held), eot_wait_s=WAIT_S)
        return item, await measure_item(model, adapter, dataset, item, ctx), held[0]
    return list(await asyncio.gather(*(one(item) for item in items)))


def _ambiguous(clip) -> bool:
    return any(abs(c - a) < MARGIN_S for c in CUTOFFS_S for a in (clip.speech_start, clip.speech_end))


def calibrate(registry: Registry, name: str, levels, rounds: int) -> dict[int, dict]:
    """Per level: the eot errors (ms) and the cut-off counts of one protocol's streams."""
    setup = AudioRig(registry, EOT_PROTOCOLS[name])
    scenario = _scenario(setup, name)
    ledger = Ledger()
    out: dict[int, dict] = {}
    with serve(setup.protocol.emulator, scenario, ledger=ledger) as url:
        adapter = setup.adapter(registry, url)
        asyncio.run(_streams(setup.model, adapter, setup.dataset, setup.warm_up()))
        for level in levels:
            figures = out.setdefault(level, {"errors": [], "from_before": [], "rows": 0, "excluded": 0, "not_ok": 0, "no_eot": 0,
                                             "counted": 0, "cutoff_mismatches": 0, "injected_cutoffs": 0,
                                             "reasons": []})
            for r in range(max(1, rounds // level)):
                ledger.drain()
                measured = asyncio.run(_streams(setup.model, adapter, setup.dataset, setup.items(level, r)))
                sent = ledger.drain()
                for clip, row, timeline in measured:
                    _add(figures, scenario, setup, clip, row, timeline, sent, name in CUTS)
    return out


def _add(figures: dict, scenario, setup: AudioRig, clip, row, timeline: Timeline, sent: dict, cuts: bool) -> None:
    figures["rows"] += 1
    if row.status == "excluded":  # the clock witness: the worker stalled around a timed event (not published)
        figures["excluded"] += 1
        return
    if row.status != "ok":
        figures["not_ok"] += 1
        figures["reasons"].append(f"{row.status}: {row.reason}")
        return
    key = setup.texts[clip.id]
    before, after = sent.get((key, "end_of_turn")), sent.get((key, "end_of_turn" + AFTER))
    if row.eot_ms is None or before is None:
        figures["no_eot"] += 1
    else:  # the write went out between the emulator's stamps before and after it: no error of voxwatch's inside
        end = sent_at_ns(timeline, clip.speech_end * clip.sample_rate, clip.sample_rate)
        low, high = (before - end) / 1e6, ((after or before) - end) / 1e6
        figures["errors"].append(row.eot_ms - min(max(row.eot_ms, low), high))
        figures["from_before"].append(row.eot_ms - low)  # transit and receive path included: the raw gap
    if _ambiguous(clip):
        return
    injected = scenario.truth(setup.firsts[clip.id])["eot_false_cutoffs"] if cuts else 0
    figures["counted"] += 1
    figures["injected_cutoffs"] += injected
    figures["cutoff_mismatches"] += int(row.eot_false_cutoffs != injected)


def _summary(figures: dict) -> dict:
    e = np.abs(np.asarray(figures["errors"], dtype=np.float64))
    stats = {"n": int(e.size), "p50_ms": None, "p99_ms": None, "max_ms": None}
    if e.size:
        stats.update(p50_ms=round(float(np.percentile(e, 50)), 3), p99_ms=round(float(np.percentile(e, 99)), 3),
                     max_ms=round(float(e.max()), 3))
    raw = np.asarray(figures["from_before"], dtype=np.float64)
    stats["from_before_p99_ms"] = round(float(np.percentile(raw, 99)), 3) if raw.size else None
    return {**stats, **{k: v for k, v in figures.items() if k not in ("errors", "from_before")},
            "reasons": sorted(set(figures["reasons"]))}


def run(names: list[str], levels: list[int], rounds: int) -> dict:
    """Measure, print the table, return the JSON object."""
    started = time.perf_counter()
    registry = Registry.default()
    results = {level: {} for level in levels}
    for name in names:
        for level, figures in calibrate(registry, name, levels, rounds).items():
            results[level][name] = _summary(figures)
    print(f"{'streams':>7} {'protocol':14} {'rows':>4} {'stall':>5} {'not ok':>6} {'no eot':>6} | eot error: {'p50':>7} {'p99':>7} "
          f"{'max':>7} {'raw p99':>7} | cut-offs injected {'':>1} counted rows  mismatched")
    for level in levels:
        for name, s in results[level].items():
            cell = (lambda v: "-" if v is None else f"{v:7.3f}")
            print(f"{level:7d} {name:14} {s['rows']:4d} {s['excluded']:5d} {s['not_ok']:6d} {s['no_eot']:6d} |            "
                  f"{cell(s['p50_ms']):>7} {cell(s['p99_ms']):>7} {cell(s['max_ms']):>7} "
                  f"{cell(s['from_before_p99_ms']):>7} | "
                  f"{s['injected_cutoffs']:17d} {s['counted']:12d}  {s['cutoff_mismatches']:10d}")
    for level in levels:
        for name, s in results[level].items():
            for reason in s["reasons"]:
                print(f"{level:7d} {name:14} not ok: {reason[:160]}")
    worst = max((s["p99_ms"] for by in results.values() for s in by.values() if s["p99_ms"] is not None),
                default=None)
    every_row = all(s["n"] == s["rows"] - s["excluded"] > 0 for by in results.values() for s in by.values())
    exact = all(s["cutoff_mismatches"] == 0 and s["counted"] > 0 for by in results.values() for s in by.values())
    injected = sum(s["injected_cutoffs"] for by in results.values() for s in by.values())
    print(f"worst eot error p99 {worst} ms (target <= {TARGET_MS} ms, every row with its end of turn: {every_row}); "
          f"false cut-off counts exact: {exact} ({injected} injected inside speech); "
          f"{time.perf_counter() - started:.0f} s")
    return {"benchmark": "stt_eot", "protocols": names, "levels": levels, "worst_eot_error_p99_ms": worst,
            "every_row_has_its_end_of_turn": every_row, "cutoffs_injected_inside_speech": injected,
            "eot_latency_error_target_met": worst is not None and worst <= TARGET_MS and every_row,
            "false_cutoff_counts_exact_target_met": exact and injected > 0,
            "results": {str(k): v for k, v in results.items()}}


def headline(figures: dict) -> dict[str, float | None]:
    return {"worst eot error p99 (ms)": figures["worst_eot_error_p99_ms"],
            "cut-offs injected inside speech": figures["cutoffs_injected_inside_speech"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="two protocols, 4 streams, 1 stream at once (seconds)")
    parser.add_argument("--streams", type=int, default=16, help="streams measured per protocol and level")
    parser.add_argument("--protocols", default="all", help=f"all, or a comma-separated list of {', '.join(EOT_PROTOCOLS)}")
    parser.add_argument("--levels", default=",".join(map(str, LEVELS)), help="streams at once, comma-separated")
    add_load_argument(parser)
    args = parser.parse_args()
    names = chosen(parser, args.protocols, EOT_PROTOCOLS, "protocol")
    levels, rounds = [int(x) for x in args.levels.split(",")], args.streams
    if args.quick:
        names, levels, rounds = list(CUTS), [1], 4
    print_runs(lambda: run(names, levels, rounds), args.load, headline, same_targets)


if __name__ == "__main__":
    main()
