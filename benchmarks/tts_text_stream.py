"""TTS fed streamed text, against injected truth: `python -m benchmarks.tts_text_stream [--quick]`.

**Streamed text and cancel** (METHOD "TTS: streamed text and cancel"). The Cartesia and Deepgram
Aura emulators are served seeded scenarios (time to first byte, leading silence, and the grace
`cancel_ms` after a cancel during which chunks still go, 0 included); each clip of the
tts-streamed-text dataset is fed through the real code path (harness -> adapter, word by word on the
seeded schedule of metrics.text_stream, cancelled once audible) and its stored figures are compared
with the reply as the emulator sent it (its ledger: first audio, first speech, each chunk sent after
the cancel arrived, the `Cleared` it sent) and the client's own text and cancel writes (the truth of TTFA
and of the cancel is the span between the emulator's stamps before and after its writes, as benchmarks/rig.py
reads it):
- `ttfa_first_text_ms`, `ttfa_last_text_ms`: the target is p99 |error| <= 2 ms
  (`streamed_text_ttfa_error_target_met`);
- `cancel_ms`: p99 |error| <= 2 ms where both sides have a figure, and the row's end (audio, ack,
  none) the emulator's, but for a chunk already on the wire when the cancel was written (after the
  cancel for the client, before it for the emulator; then the row reads at most 2 ms)
  (`cancel_latency_error_target_met`). No failed stream either way.

`--quick` measures two scenarios of two clips on each protocol (seconds). `--load N` measures again
with N CPU-bound processes beside it (benchmarks/load.py). Last line: one JSON object
whose `*_target_met` keys are the targets.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time

import numpy as np

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.datasets.manifest import Prompt
from voxwatch.foundation.events import CANCEL_SENT
from voxwatch.providers.emulators.ledger import (Ledger, before_and_after, cancel_as_sent, outside_span_ms,
                                                 streamed_ttfa_as_sent)
from voxwatch.providers.emulators.scenario import TTSScenario
from voxwatch.providers.emulators.server import serve
from voxwatch.providers.registry import Registry

from .load import add_load_argument, print_runs, same_targets
from .rig import KEY, PROTOCOLS, Rig, streams

VENDORS = ("cartesia", "deepgram-aura")
TARGET_MS = 2.0


def scenarios(seed: int, count: int) -> list[TTSScenario]:
    """`count` seeded scenarios; the first has no grace after a cancel (the vendor's acknowledgement, or none)."""
    rng = random.Random(seed)
    return [TTSScenario(ttfb_ms=round(rng.uniform(40.0, 150.0), 1), leading_silence_ms=rng.choice([40.0, 80.0, 120.0]),
                        speech_ms=800.0, cancel_ms=0.0 if n == 0 else round(rng.uniform(5.0, 60.0), 1), api_key=KEY)
            for n in range(count)]


def measure(registry: Registry, vendor: str, chosen: list[TTSScenario], clips: int) -> dict:
    """Each scenario served by the vendor's emulator, `clips` prompts measured one at a time; the errors."""
    rig = Rig(registry, PROTOCOLS[vendor])
    dataset = Catalog([bundled_root()]).load("tts-streamed-text")
    prompts = dataset.prompts
    ttfa, cancel, ends, failed, excluded = [], [], [], [], 0
    for n, scenario in enumerate(chosen):
        ledger = Ledger()
        with serve(PROTOCOLS[vendor].emulator, scenario, ledger=ledger) as url:
            adapter = rig.adapter(registry, url)
            asyncio.run(streams(rig.model, adapter, dataset, list(prompts[:1])))  # warm-up, discarded
            items = [Prompt(id=f"s{n}-{i}", text=f"{prompts[i % len(prompts)].text} ({vendor} {n}.{i})", category="bench")
                     for i in range(clips)]
            ledger.drain()
            measured = [asyncio.run(streams(rig.model, adapter, dataset, [item])) for item in items]
            sent = ledger.drain()
        for item, (rows, timelines) in zip(items, measured):
            row, timeline = rows[0], timelines[0]
            if row.status == "excluded":  # the worker's own stall, named by the clock witness: not published, not compared
                excluded += 1
                continue
            if row.status != "ok":
                failed.append(f"{row.status}: {row.reason}"[:120])
                continue
            mine, after = before_and_after({what: t for (key, what), t in sent.items() if key == item.text})
            spans = [streamed_ttfa_as_sent(stamps, timeline, scenario.leading_silence_ms) for stamps in (mine, after)]
            ttfa += [outside_span_ms(row.ttfa_first_text_ms, spans[0][0], spans[1][0]),
                     outside_span_ms(row.ttfa_last_text_ms, spans[0][1], spans[1][1])]
            (truth_ms, truth_end), (truth_after_ms, _) = (cancel_as_sent(stamps, timeline.first(CANCEL_SENT).t_ns)
                                                          for stamps in (mine, after))
            if truth_ms is not None and row.cancel_ms is not None:
                cancel.append(outside_span_ms(row.cancel_ms, truth_ms, truth_after_ms))
            ends.append(row.cancel_end == truth_end or (row.cancel_end == "audio" and row.cancel_ms <= TARGET_MS))
    return {"ttfa": ttfa, "cancel": cancel, "ends": ends, "failed": failed, "excluded": excluded}


def _summary(errors: list[float]) -> dict:
    a = np.abs(np.asarray(errors, dtype=np.float64))
    if not a.size:
        return {"n": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}
    return {"n": int(a.size), "p50_ms": round(float(np.percentile(a, 50)), 3),
            "p99_ms": round(float(np.percentile(a, 99)), 3), "max_ms": round(float(a.max()), 3)}


def _c(value: float | None) -> str:
    return f"{'-':>7}" if value is None else f"{value:7.3f}"


def run(vendors: list[str], count: int, clips: int, seed: int) -> dict:
    started = time.perf_counter()
    registry = Registry.default()
    chosen = scenarios(seed, count)
    results = {}
    print(f"{'protocol':14} | streamed TTFA error: {'n':>4} {'p50':>7} {'p99':>7} {'max':>7} | cancel error: "
          f"{'n':>4} {'p50':>7} {'p99':>7} {'max':>7} | end right | failed")
    for vendor in vendors:
        got = measure(registry, vendor, chosen, clips)
        t, c = _summary(got["ttfa"]), _summary(got["cancel"])
        results[vendor] = {"streamed_ttfa": t, "cancel": c, "ends_right": sum(got["ends"]), "clips": len(got["ends"]),
                           "failed": len(got["failed"]), "failures": sorted(set(got["failed"])), "excluded": got["excluded"]}
        print(f"{vendor:14} |                     {t['n']:4d} {_c(t['p50_ms'])} {_c(t['p99_ms'])} {_c(t['max_ms'])} | "
              f"             {c['n']:4d} {_c(c['p50_ms'])} {_c(c['p99_ms'])} {_c(c['max_ms'])} | "
              f"{sum(got['ends']):4d}/{len(got['ends']):<4d} | {len(got['failed'])} {sorted(set(got['failed']))}"
              + (f"; excluded as the worker's stall: {got['excluded']}" if got["excluded"] else ""))
    clean = all(r["failed"] == 0 and r["clips"] for r in results.values())
    ttfa_met = clean and all(r["streamed_ttfa"]["n"] and r["streamed_ttfa"]["p99_ms"] <= TARGET_MS
                             for r in results.values())
    cancel_met = clean and all(r["cancel"]["n"] and r["cancel"]["p99_ms"] <= TARGET_MS and r["ends_right"] == r["clips"]
                               for r in results.values())
    print(f"targets: p99 |error| <= {TARGET_MS} ms, no failed stream; every cancel end right; "
          f"{time.perf_counter() - started:.0f} s")
    return {"benchmark": "tts_text_stream", "vendors": vendors, "seed": seed,
            "scenarios": [(s.ttfb_ms, s.leading_silence_ms, s.cancel_ms) for s in chosen], "results": results,
            "streamed_text_ttfa_error_target_met": ttfa_met, "cancel_latency_error_target_met": cancel_met}


def _vendors(text: str) -> list[str]:
    chosen = text.split(",")
    if set(chosen) - set(VENDORS):
        raise argparse.ArgumentTypeError(f"known protocols: {', '.join(VENDORS)}")
    return chosen


def headline(figures: dict) -> dict[str, float | None]:
    def worst(part: str) -> float | None:
        return max((r[part]["max_ms"] for r in figures["results"].values() if r[part]["n"]), default=None)
    return {"worst streamed TTFA error (ms)": worst("streamed_ttfa"), "worst cancel error (ms)": worst("cancel")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="two scenarios of two clips on each protocol (seconds)")
    parser.add_argument("--vendors", type=_vendors, default=list(VENDORS), help=f"some of {', '.join(VENDORS)}, comma-separated")
    parser.add_argument("--scenarios", type=int, default=4, help="seeded scenarios per protocol (the first with no grace)")
    parser.add_argument("--clips", type=int, default=8, help="clips measured per scenario")
    parser.add_argument("--seed", type=int, default=44)
    add_load_argument(parser)
    args = parser.parse_args()
    if args.quick:
        args.scenarios, args.clips = 2, 2
    print_runs(lambda: run(args.vendors, args.scenarios, args.clips, args.seed), args.load, headline, same_targets)


if __name__ == "__main__":
    main()
