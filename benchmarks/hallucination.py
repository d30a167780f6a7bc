"""Words from nothing, against injected truth: `python -m benchmarks.hallucination [--quick]`.

Two emulated STT models hear the bundled clips without speech (stt-nonspeech) through the harness, as a
tick measures them: `openai/whisper-1` (batch) is told (emulators' scripted transcripts, keyed by each
clip's audio: cli.emulate.transcripts_of) to say INJECTED's words on some clips and nothing on the
others, `groq/whisper-large-v3-turbo` (batch) nothing on any; `deepgram/nova-3` (streaming, in real time:
the full run only) says INJECTED's words too. Each stored row's invented_words must be the injected
words' count after the WER normalizer, counted here by hand (HAND_COUNT), and the series' share and words
per minute (metrics.series) what the rows make by hand. The full run also measures the real local engines
(faster-whisper tiny.en, batch; pocketsphinx, streaming) on every clip and prints what they transcribed:
Whisper is known to write words on silence; here is what it does on these clips.

Prints a table (one line per model and clip) and, last, one JSON line: hallucination_counts_exact_target_met
(every emulated row's stored count is the injected one), hallucination_share_exact_target_met (each series'
share and words per minute are the hand count's), hallucination_no_clock_target_met (no clip without speech
kept a latency or a WER part).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import time
import uuid
from dataclasses import replace
from typing import Iterator

from voxwatch.cli.emulate import EMULATOR_KEY, transcripts_of
from voxwatch.datasets.catalog import Catalog, Dataset, bundled_root
from voxwatch.foundation.observation import Observation
from voxwatch.harness.measure import CLOCK_FIELDS, MeasureContext, measure_item
from voxwatch.metrics.series import series_rows
from voxwatch.providers.emulators.scenario import Scenarios, STTScenario
from voxwatch.providers.emulators.server import serve
from voxwatch.providers.keys import key_variable, vendor_variable
from voxwatch.providers.registry import Registry
from voxwatch.store.series_data import group

NONSPEECH = "stt-nonspeech"
HALLUCINATING = "openai/whisper-1"
SILENT = "groq/whisper-large-v3-turbo"
STREAMING = "deepgram/nova-3"
VENDOR = {HALLUCINATING: "openai", SILENT: "groq", STREAMING: "deepgram"}
INJECTED = {"silence-zero": "Thank you.", "silence-dither": "Thank you for watching!", "hold-music": "music",
            "noise-babble": "Um.", "line-hum": "I'm here."}
"""What the hallucinating emulators say on which clip (every other clip: nothing)."""
HAND_COUNT = {"silence-zero": 2, "silence-dither": 4, "hold-music": 1, "noise-babble": 0, "line-hum": 3}
"""The words of each injected transcript after Whisper's English normalizer, counted by hand: "um" is a
filler it drops, "I'm" it spells "i am"."""
STREAM_CLIPS = ("silence-zero", "line-hum")
"""The clips the streaming model hears (in real time: 2 s each)."""
ENGINES = ("faster-whisper/tiny.en@1.2.1", "pocketsphinx/en-us@5.1.1")


def scenario(*said: tuple[Dataset, dict[str, str]], chunk_ms: int = 20) -> Scenarios:
    """An STT emulator that says, for each (dataset, words), words[clip id] on those clips of the dataset,
    and nothing on any other."""
    return Scenarios(stt=STTScenario(transcript="", speech_start_s=0.0, speech_end_s=0.0, api_key=EMULATOR_KEY,
                                     transcripts=sum((transcripts_of(ds, words, chunk_ms) for ds, words in said),
                                                     ())))


@contextlib.contextmanager
def emulated(models: dict[str, Scenarios]) -> Iterator[None]:
    """Each model's vendor emulator serving its scenario (`scenario`), the adapters pointed at them."""
    with contextlib.ExitStack() as stack:
        before = dict(os.environ)
        for model, scripted in models.items():
            vendor = VENDOR[model]
            url = stack.enter_context(serve(vendor, scripted))
            os.environ[vendor_variable(vendor, "BASE_URL")], os.environ[key_variable(vendor)] = url, EMULATOR_KEY
        try:
            yield
        finally:
            os.environ.clear()
            os.environ.update(before)


def measure(ds: Dataset, models: dict[str, tuple[str, ...]], ticks: int, emulator: bool = True) -> list[Observation]:
    """Every model on its clips (model -> clip ids), `ticks` times, each tick a run of its own."""
    registry = Registry.default()
    rows = []
    for _ in range(ticks):
        ctx = MeasureContext(run_id=uuid.uuid4().hex, seed=1, region="bench", timeout_s=30, emulator=emulator)
        for model_id, clips in models.items():
            model = registry.resolve(model_id)
            adapter = registry.create(model)
            for clip in (c for c in ds.clips if c.id in clips):
                rows.append(asyncio.run(measure_item(model, adapter, ds, clip, ctx)))
    return rows


def expected_words(model_id: str, clip_id: str) -> int:
    """The invented words a row of an emulated model must store."""
    return HAND_COUNT.get(clip_id, 0) if model_id in (HALLUCINATING, STREAMING) else 0


def no_clock(r: Observation) -> bool:
    """Whether a row of a clip without speech kept no latency and no WER part (only its words)."""
    return all(getattr(r, name) is None for name in CLOCK_FIELDS) and \
        (r.substitutions, r.deletions, r.insertions, r.ref_words) == (None, None, None, None)


def share_by_hand(rows: list[Observation]) -> tuple[float, float, int]:
    """The share of ok rows with any invented word, the invented words per minute heard, the rows."""
    ok = [r for r in rows if r.status == "ok" and r.invented_words is not None]
    return (sum(r.invented_words > 0 for r in ok) / len(ok),
            sum(r.invented_words for r in ok) / (sum(r.audio_duration_s for r in ok) / 60), len(ok))


def series_agree(rows: list[Observation]) -> dict[str, dict]:
    """Each model's series figures (metrics.series, the rows as a vendor's) beside its hand count."""
    out = {}
    for key, data in group(replace(r, emulator=False) for r in rows).items():
        first = series_rows(key, data)[0]
        share, per_min, n = share_by_hand([r for r in rows if r.model_id == key.model_id])
        out[key.model_id] = {"share": first.hallucination_rate, "share_by_hand": share, "n": first.hallucination_clips,
                             "n_by_hand": n, "per_min": first.invented_words_per_min, "per_min_by_hand": per_min,
                             "share_ci": first.hallucination_rate_ci}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="batch emulators only, one tick: seconds")
    args = parser.parse_args()
    ds = Catalog([bundled_root()]).load(NONSPEECH)
    every = tuple(c.id for c in ds.clips)
    models = {HALLUCINATING: every, SILENT: every} if args.quick else \
        {HALLUCINATING: every, SILENT: every, STREAMING: STREAM_CLIPS}
    started = time.monotonic()
    with emulated({m: scenario((ds, INJECTED if m != SILENT else {})) for m in models}):
        rows = measure(ds, models, ticks=1 if args.quick else 2)
    print(f"{'model':<34} {'clip':<16} {'status':<8} {'words':>5} {'expected':>8}  transcript")
    exact = True
    for r in rows:
        want = expected_words(r.model_id, r.clip_id)
        exact &= r.status == "ok" and r.invented_words == want
        print(f"{r.model_id:<34} {r.clip_id:<16} {r.status:<8} {r.invented_words!s:>5} {want:>8}  {r.hypothesis!r}")
    agree = series_agree([r for r in rows if r.model_id != STREAMING])
    for model, figures in agree.items():
        print(f"{model}: share {figures['share']} (by hand {figures['share_by_hand']}, n {figures['n']}), "
              f"{figures['per_min']} words/min (by hand {figures['per_min_by_hand']}), interval {figures['share_ci']}")
    engines = {}
    if not args.quick:
        engine_rows = measure(ds, {m: every for m in ENGINES}, ticks=1, emulator=False)
        print(f"\nreal local engines on the {len(every)} clips without speech:")
        for r in engine_rows:
            print(f"{r.model_id:<34} {r.clip_id:<16} {r.status:<8} {r.invented_words!s:>5}  {r.hypothesis!r}")
            engines.setdefault(r.model_id, {})[r.clip_id] = r.invented_words
    share_exact = all(f["share"] == f["share_by_hand"] and f["n"] == f["n_by_hand"] == len(every) * (1 if args.quick else 2)
                      and abs(f["per_min"] - f["per_min_by_hand"]) < 1e-9 for f in agree.values())
    print(json.dumps({
        "quick": args.quick, "rows": len(rows), "seconds": round(time.monotonic() - started, 1),
        "series": agree, "engines": engines,
        "hallucination_counts_exact_target_met": bool(exact and rows),
        "hallucination_share_exact_target_met": bool(share_exact and len(agree) == 2),
        "hallucination_no_clock_target_met": all(no_clock(r) for r in rows),
    }))


if __name__ == "__main__":
    main()
