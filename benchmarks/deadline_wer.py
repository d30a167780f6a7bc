"""WER at the agent's deadline against injected truth: `python -m benchmarks.deadline_wer [--quick]`.

The Deepgram emulator sends a scripted schedule of partials and segment finals (STTScenario.script),
each at a known time after the end of speech, with one word of the final wrong: the transcript at
each deadline (0, 250, 500 and 1000 ms after the end of speech) is known exactly
(STTScenario.script_text_at), and so are its word errors against the clip's reference. Every stream
goes through the real code path (the Deepgram adapter -> measure_item -> metrics.deadline_wer), paced
in real time, one at a time, and its row's errors_at_<D>ms must equal the truth exactly. Every
scripted result is at least MARGIN_MS from every deadline, so only a worker held off the CPU that
long could read one on the wrong side (the table reports the closest arrival to a deadline).

Prints a table per schedule (streams exact, pooled WER at each deadline measured and true, the
final's) and, last, one JSON line: `wer_at_deadline_exact_target_met` (every stream's errors at
every deadline equal the truth) and `late_finaliser_worse_target_met` (the schedule that finalises
late has a worse pooled WER at 0 and 250 ms than its final's).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.foundation.events import FINAL, PARTIAL, Timeline
from voxwatch.harness.measure import MeasureContext, measure_item
from voxwatch.metrics.deadline_wer import DEADLINES_MS, errors_field, speech_end_ns
from voxwatch.metrics.wer import word_errors
from voxwatch.providers.emulators.scenario import Scripted, STTScenario
from voxwatch.providers.emulators.server import Switch, serve
from voxwatch.providers.keys import Secret, key_variable, vendor_variable
from voxwatch.providers.registry import Registry

KEY = "deadline-wer-key"
MODEL = "deepgram/nova-3"
MARGIN_MS = 125.0
SCHEDULES: dict[str, tuple[Scripted, ...]] = {
    "late final": (Scripted(-200, False, 2), Scripted(125, False, 4), Scripted(375, True, 5),
                   Scripted(750, False, 7), Scripted(1300, True, None)),
    "early final": (Scripted(-400, False, 3), Scripted(-150, True, None)),
    "three segments": (Scripted(-300, True, 3), Scripted(-125, False, 6), Scripted(125, True, 6),
                       Scripted(625, True, None)),
    "nothing until 375 ms": (Scripted(375, False, 4), Scripted(875, True, None)),
    "partials only, final at 1.2 s": (Scripted(-600, False, 1), Scripted(-300, False, 3), Scripted(125, False, 5),
                                      Scripted(375, False, 7), Scripted(1200, True, None)),
}
"""Each schedule's results, ms after the end of speech; `upto`: the transcript's words up to there."""
QUICK = ("late final", "early final", "three segments")
CLIPS = ("u044", "u020", "u019", "u046")  # 5 to 8 words each


def with_error(text: str) -> str:
    """The clip's reference with its second word wrong: the final's WER is not 0."""
    words = text.split()
    words[1] = "uh" + words[1]
    return " ".join(words)


def closest_ms(timeline: Timeline, speech_end: float, rate: int) -> float:
    """The closest any worded transcript message came to a deadline on the worker's clock (ms); the
    empty final Deepgram's emulator answers a late Finalize with (about 100 ms after the end of
    speech) changes no transcript that has its last final already, and is left out."""
    end = speech_end_ns(timeline, speech_end, rate)
    arrivals = [e.t_ns for e in timeline.events if e.kind in (PARTIAL, FINAL) and (e.text or "").strip()]
    return min(abs(t - end - d * 1e6) / 1e6 for t in arrivals for d in DEADLINES_MS)


def measure(schedule: tuple[Scripted, ...], clips: list, ds, registry: Registry, switch: Switch,
            repeats: int) -> list[dict]:
    """Each clip measured `repeats` times against the schedule: its row's errors at each deadline and the truth."""
    out = []
    model = registry.resolve(MODEL)
    adapter = registry.create(model)
    for clip in clips:
        transcript = with_error(clip.text)
        scenario = STTScenario(transcript=transcript, speech_start_s=clip.speech_start, speech_end_s=clip.speech_end,
                               api_key=KEY, script=schedule)
        truth = {d: word_errors(clip.text, scenario.script_text_at(transcript, d), "en").errors for d in DEADLINES_MS}
        switch.use(scenario)
        for _ in range(repeats):
            timelines: list[Timeline] = []
            ctx = MeasureContext(run_id="deadline-wer", seed=0, region="bench", timeout_s=30, secrets=(Secret(KEY),),
                                 emulator=True, on_timeline=timelines.append)
            row = asyncio.run(measure_item(model, adapter, ds, clip, ctx))
            if row.status != "ok":
                raise RuntimeError(f"{clip.id}: {row.status}: {row.reason}")
            out.append({"clip": clip.id, "words": row.ref_words, "truth": truth,
                        "final": row.substitutions + row.deletions + row.insertions,
                        "measured": {d: getattr(row, errors_field(d)) for d in DEADLINES_MS},
                        "closest_ms": closest_ms(timelines[0], clip.speech_end, clip.sample_rate)})
    return out


def pooled(streams: list[dict], key: str, d: int | None = None) -> float:
    words = sum(s["words"] for s in streams)
    return sum(s[key] if d is None else s[key][d] for s in streams) / words


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="three schedules on one clip, once (seconds)")
    parser.add_argument("--repeats", type=int, default=2, help="streams per clip and schedule (after a warm-up)")
    args = parser.parse_args()
    os.environ[key_variable("deepgram")] = KEY
    ds = Catalog([bundled_root()]).load("stt-starter-clean")
    by_id = {c.id: c for c in ds.clips}
    clips = [by_id[c] for c in (CLIPS[:1] if args.quick else CLIPS)]
    names = QUICK if args.quick else tuple(SCHEDULES)
    repeats = 1 if args.quick else args.repeats
    registry = Registry.default()
    switch = Switch()
    with serve("deepgram", STTScenario("warm up", 0.0, 0.5, api_key=KEY, script=SCHEDULES["early final"]),
               switch=switch) as url:
        os.environ[vendor_variable("deepgram", "BASE_URL")] = url
        measure(SCHEDULES["early final"], clips[:1], ds, registry, switch, 1)  # a warm-up, discarded
        results = {name: measure(SCHEDULES[name], clips, ds, registry, switch, repeats) for name in names}
    report(results, clips)


def report(measured: dict[str, list[dict]], clips: list) -> None:
    """The table and the JSON line."""
    results, exact_all = {}, True
    heads = " ".join(f"{f'{d} ms':>15}" for d in DEADLINES_MS)
    print(f"{MODEL} against its emulator; stt-starter-clean clips {', '.join(c.id for c in clips)}; pooled WER "
          "measured / injected truth")
    print(f"{'schedule':32} {'exact':>7} {heads} {'final':>7} {'closest':>8}")
    for name, streams in measured.items():
        exact = sum(s["measured"] == s["truth"] for s in streams)
        exact_all &= exact == len(streams)
        at = {d: (pooled(streams, "measured", d), pooled(streams, "truth", d)) for d in DEADLINES_MS}
        results[name] = {"streams": len(streams), "exact": exact, "final_wer": pooled(streams, "final"),
                         "wer_at": {str(d): {"measured": m, "truth": t} for d, (m, t) in at.items()},
                         "closest_ms": min(s["closest_ms"] for s in streams)}
        cells = " ".join(f"{100 * m:6.1f}/{100 * t:6.1f}%" for m, t in at.values())
        print(f"{name:32} {exact:>3}/{len(streams):<3} {cells} {100 * results[name]['final_wer']:6.1f}% "
              f"{results[name]['closest_ms']:6.1f}ms")
        for s in streams:
            if s["measured"] != s["truth"]:
                print(f"  {name} {s['clip']}: measured {s['measured']}, truth {s['truth']}")
    late = results["late final"]
    print(json.dumps({"results": results, "margin_ms": MARGIN_MS,
                      "wer_at_deadline_exact_target_met": exact_all,
                      "late_finaliser_worse_target_met": all(late["wer_at"][str(d)]["measured"] > late["final_wer"]
                                                              for d in (0, 250))}))


if __name__ == "__main__":
    main()
