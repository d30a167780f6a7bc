"""voxwatch's HTTP clocks against an independent server: `python -m benchmarks.http_clock`.

`benchmarks.independent_tts` (standard library only, written apart from voxwatch and its
emulators) serves OpenAI's `POST /v1/audio/speech` (a chunked PCM body) or, with `--api minimax`,
MiniMax's `POST /v1/t2a_v2` (server-sent events, each chunk's audio as hex) on loopback and stamps,
on the machine's shared monotonic clock, each request's arrival in its read callback and each chunk
immediately before its socket write. One stream, one kept-alive connection: each request goes
through the vendor's real TTS adapter, `measure_item` and `metrics/`, and the measured TTFB and
TTFA are compared with the server's stamps. For each head placement (the head written with the
first audio chunk, or at once), signed errors in ms:

- **ttfb**: measured TTFB minus (the first chunk's write - voxwatch's request stamp): the response
  path, loopback transit plus voxwatch's receive path (clock_truth's "clock error").
- **ttfa**: measured TTFA minus (when the tone's first sample is heard under the playout model,
  from the server's write stamps - voxwatch's request stamp). The tone is sent late, after its
  leading silence has played, so this is the stamp of a chunk in mid-stream, not the first.
- **request**: the server's arrival stamp minus voxwatch's request stamp (loopback transit plus
  how early voxwatch stamps its request).
- **ttfb, server only**: measured TTFB minus (the first chunk's write - the request's arrival),
  both from the server's clock: the two paths together.

Targets (as for WebSockets, one stream, idle machine): p99 of |error| <= 1 ms for ttfb and ttfa.
The machine's load average is printed with the figures: other processes on 2 cores show up in
every percentile, so rerun when the load is low; `--load N` measures again with N CPU-bound
processes beside it and prints both (the same targets, under `loaded_` names). Last line: one JSON
object. `--quick`: 3 requests per head placement (the same code path in seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import urllib.request
from contextlib import contextmanager
from typing import Iterator

import numpy as np

from benchmarks.independent_tts import RATE
from benchmarks.load import add_load_argument, print_runs, same_targets
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.datasets.manifest import Prompt
from voxwatch.foundation.events import REQUEST_SENT, Timeline
from voxwatch.providers.keys import Secret, key_variable, vendor_variable
from voxwatch.providers.registry import Registry
from voxwatch.metrics.witness import stalled_row
from voxwatch.harness.measure import MeasureContext, measure_item

MODELS = {"openai": "openai/gpt-4o-mini-tts-2025-12-15", "minimax": "minimax/speech-2.8-turbo"}  # by API shape
KEY = "http-clock-key"
SILENCE_MS = 80
TARGET_MS = 1.0
HEADS = ("with-audio", "early")


@contextmanager
def independent_server(head: str, poll: bool, api: str = "openai") -> Iterator[str]:
    """The independent server speaking `api` in its own process; yields its base URL."""
    command = [sys.executable, "-m", "benchmarks.independent_tts", "--head", head, "--silence-ms", str(SILENCE_MS),
               "--api", api]
    process = subprocess.Popen(command + (["--poll"] if poll else []), stdout=subprocess.PIPE, text=True)
    try:
        yield f"http://127.0.0.1:{int(process.stdout.readline())}"
    finally:
        process.kill()
        process.wait()


def heard_ns(writes: list[list[int]], sample: int) -> float:
    """When `sample` is heard by a caller whose playout starts with the first chunk and stalls on late
    chunks (METHOD, TTFA), from the server's own (offset, n, written at) records."""
    return max(at - offset * 1e9 / RATE for offset, _, at in writes if offset <= sample) + sample * 1e9 / RATE


def timed_requests(url: str, requests: int, tag: str, stalled: list[str],
                   api: str = "openai") -> list[tuple[str, object, Timeline]]:
    """The requests one after another on one event loop (as a worker's tick), after two discarded; a row
    the clock witness excluded as the worker's stall is counted in `stalled` (its reason), not measured."""
    registry = Registry.default()
    model = registry.resolve(MODELS[api])
    os.environ[vendor_variable(model.vendor, "BASE_URL")] = url
    os.environ[key_variable(model.vendor)] = KEY
    adapter = registry.create(model)
    dataset = Catalog([bundled_root()]).load("tts-prompts")

    async def run() -> list:
        out = []
        for i in range(requests + 2):
            timelines: list[Timeline] = []
            prompt = Prompt(id=f"{tag}{i}", text=f"{dataset.prompts[i % len(dataset.prompts)].text} ({tag}{i})",
                            category="bench")
            ctx = MeasureContext(run_id="http-clock", seed=0, region="bench", timeout_s=30, secrets=(Secret(KEY),),
                                 emulator=True, on_timeline=timelines.append)
            row = await measure_item(model, adapter, dataset, prompt, ctx)
            if stalled_row(row.status, row.reason):
                if i >= 2:  # the two warm-up requests are discarded, stalled or not
                    stalled.append(row.reason)
                continue
            if row.status != "ok":
                raise RuntimeError(f"{prompt.id}: {row.status}: {row.reason}")
            if i >= 2:
                out.append((prompt.text, row, timelines[0]))
            await asyncio.sleep(0.02)
        return out

    return asyncio.run(run())


def errors(measured: list, stamps: dict) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"ttfb": [], "ttfa": [], "request": [], "ttfb, server only": []}
    onset = RATE * SILENCE_MS // 1000
    for text, row, timeline in measured:
        s, t0 = stamps[text], timeline.first(REQUEST_SENT).t_ns
        first = s["writes"][0][2]
        out["ttfb"].append(row.ttfb_ms - (first - t0) / 1e6)
        out["ttfa"].append(row.ttfa_ms - (heard_ns(s["writes"], onset) - t0) / 1e6)
        out["request"].append((s["arrived"] - t0) / 1e6)
        out["ttfb, server only"].append(row.ttfb_ms - (first - s["arrived"]) / 1e6)
    return out


def summary(values: list[float]) -> dict:
    if not values:  # every row excluded as the worker's stall
        return {"n": 0, "median_ms": None, "p99_ms": None, "max_ms": None, "min_ms": None}
    v = np.asarray(values)
    a = np.abs(v)
    return {"n": int(v.size), "median_ms": round(float(np.median(v)), 3), "p99_ms": round(float(np.percentile(a, 99)), 3),
            "max_ms": round(float(a.max()), 3), "min_ms": round(float(v.min()), 3)}


def measure(heads: list[str], requests: int, poll: bool, api: str = "openai") -> dict[str, dict[str, dict]]:
    """One run's errors per head placement: {head: {error name: summary}}."""
    results: dict[str, dict[str, dict]] = {}
    for head in heads:
        stalled: list[str] = []
        with independent_server(head, poll=poll, api=api) as url:
            measured = timed_requests(url, requests, head, stalled, api)
            stamps = json.loads(urllib.request.urlopen(f"{url}/stamps").read())
        results[head] = {name: summary(values) for name, values in errors(measured, stamps).items()}
        results[head]["stalled"] = {"rows": len(measured) + len(stalled), "excluded": len(stalled)}
    return results


def run(heads: list[str], requests: int, poll: bool, api: str = "openai") -> dict:
    """Measure, print the table, return the JSON object."""
    load_before = os.getloadavg()
    results = measure(heads, requests, poll, api)
    load_after = os.getloadavg()
    print(f"{'head':11} {'error (measured - server)':22} {'n':>4} {'median':>8} {'p99 |e|':>8} {'max |e|':>8} {'min':>8}")
    for head, rows in results.items():
        print(f"{head:11} rows excluded as the worker's stall (clock witness): {rows['stalled']['excluded']} of "
              f"{rows['stalled']['rows']}")
        for name, s in rows.items():
            if name == "stalled":
                continue
            print(f"{head:11} {name:22} {s['n']:4d} " + " ".join(f"{s[k]:8.3f}" if s[k] is not None else f"{'-':>8}"
                                                                   for k in ("median_ms", "p99_ms", "max_ms", "min_ms")))
    print(f"load average (1, 5, 15 min) before {tuple(round(x, 2) for x in load_before)}, "
          f"after {tuple(round(x, 2) for x in load_after)}; {MODELS[api]}; target p99 <= {TARGET_MS} ms for ttfb and ttfa")
    met = {metric: all(rows[metric]["p99_ms"] is not None and rows[metric]["p99_ms"] <= TARGET_MS
                       for rows in results.values()) for metric in ("ttfb", "ttfa")}
    return {"benchmark": "http_clock", "api": api, "model": MODELS[api], "load_before": load_before,
            "load_after": load_after,
            "results": results, "http_ttfb_p99_target_met": met["ttfb"], "http_ttfa_p99_target_met": met["ttfa"]}


def headline(figures: dict) -> dict[str, float | None]:
    """The p99 of each error's absolute value per head placement (ms)."""
    return {f"{head} {name} p99 |e| (ms)": s["p99_ms"] for head, rows in figures["results"].items()
            for name, s in rows.items() if name != "stalled"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=60, help="measured requests per head placement")
    parser.add_argument("--heads", default=",".join(HEADS), help=f"comma-separated: {', '.join(HEADS)}")
    parser.add_argument("--no-poll", action="store_true", help="the server sleeps in the kernel between events "
                        "(its arrival stamps then carry its own wake-up)")
    parser.add_argument("--api", choices=tuple(MODELS), default="openai",
                        help="the response's shape: openai (chunked PCM) or minimax (server-sent events)")
    parser.add_argument("--quick", action="store_true", help="3 requests per head placement (seconds)")
    add_load_argument(parser)
    args = parser.parse_args()
    if args.quick:
        args.requests = 3
    heads = args.heads.split(",")
    print_runs(lambda: run(heads, args.requests, not args.no_poll, args.api), args.load, headline, same_targets)


if __name__ == "__main__":
    main()
