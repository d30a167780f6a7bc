"""The answer instrument on eSpeak NG's own spoken answers: `python -m benchmarks.answer_accuracy`.

How often does the fixed instrument (Whisper tiny.en, faster-whisper) hear a correct spoken answer as
correct (metrics.answers), and never a non-answer? For each bundled spoken question (s2s-questions):

- the OpenAI Realtime emulator's reply, exactly as it speaks it (`voxwatch emulate`'s
  "The answer is <first accepted answer>." through emulators/speech.speech_pcm at 24 kHz, eSpeak NG's
  en-us voice at its default rate), and the same sentence in the bundled set's four voice and rate
  settings: the share heard correct is the instrument's answer accuracy on correct answers (the
  ceiling an always-right model reaches on this instrument);
- two controls that must never count: the question's own clip (an echoed question) and the
  emulator's non-answer (`NO_ANSWER`);
- on recorded human speech (../shared/data/speech, or VOXWATCH_SPEECH_DIR; left out when absent): the
  share of utterances whose last word, taken as the answer, the instrument hears said (a sentence-final
  word in natural voices, as a vendor's reply ends on its answer), by the same rule.

Target: the controls never count (`controls_never_correct_target_met`); the share heard correct is the
instrument's ceiling, reported, not a target. `--quick`: the first question, no recorded speech (the
same code path in seconds). Prints a table and each reply misheard with what was heard; last line: JSON.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
from pathlib import Path
from typing import Callable

import numpy as np

from voxwatch import config
from voxwatch.cli.emulate import NO_ANSWER, answer_sentence
from voxwatch.datasets.build_starter import VOICES
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.foundation.audio import CATALOG_RATE, normalize_loudness, resample
from voxwatch.metrics.answers import answer_correct
from voxwatch.providers.emulators.speech import speech_pcm
from voxwatch.providers.local.espeak_engine import EspeakEngine
from voxwatch.harness.tick import load_instrument
from voxwatch.providers.registry import Registry

from benchmarks.speech_files import read_mono

EMULATOR_RATE = 24000  # the OpenAI Realtime emulator's output rate
SPEECH = Path(os.environ.get("VOXWATCH_SPEECH_DIR", Path(__file__).resolve().parents[2] / "shared" / "data" / "speech"))


@functools.cache
def instrument() -> tuple[Callable, str]:
    """The configured instrument (harness.tick.load_instrument) and its id, loaded once."""
    return load_instrument(config.load(), Registry.default())


def heard(samples: np.ndarray, rate: int) -> str:
    """What the instrument hears in float audio at `rate` (resampled to 16 kHz, as the harness does)."""
    return instrument()[0](resample(samples, rate, 16000).astype(np.float32))


def emulator_audio(text: str) -> np.ndarray:
    """The emulator's reply as it sends it (int16 at 24 kHz), as floats."""
    pcm, _ = speech_pcm(text, EMULATOR_RATE, voice="espeak")
    return pcm.astype(np.float64) / 32768.0


def voiced(text: str, voice: str, rate_wpm: int) -> np.ndarray:
    """The sentence in one of the bundled set's voice and rate settings, at catalog loudness and rate."""
    engine = EspeakEngine.get()
    return normalize_loudness(resample(engine.render(text, voice, rate_wpm) / 32768.0, engine.sample_rate, CATALOG_RATE))


def recorded_last_words(root: Path, limit: int) -> list[tuple[str, str, bool]]:
    """(utterance id, what was heard, whether its last word was heard) for recorded utterances."""
    items = [json.loads(line) for line in (root / "manifest.jsonl").read_text().splitlines() if line.strip()]
    out = []
    for item in items[:limit] if limit else items:
        x, rate = read_mono(root / item["path"])
        text = heard(x, rate)
        out.append((item["id"], text, answer_correct([item["text_norm"].split()[-1]], text)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0, help="the first N questions only (0: all)")
    parser.add_argument("--quick", action="store_true", help="the first question, no recorded speech (seconds)")
    args = parser.parse_args()
    if args.quick:
        args.limit = 1
    ds = Catalog([bundled_root()]).load("s2s-questions")
    clips = ds.clips[:args.limit] if args.limit else ds.clips
    sentences = {c.id: answer_sentence(c.answers) for c in clips}
    # the emulator's own voice first: eSpeak keeps the last rate set, and its default is the emulator's
    trials: dict[str, list[tuple[str, str, bool]]] = {"emulator (en-us, default rate)": []}
    for c in clips:
        text = heard(emulator_audio(sentences[c.id]), EMULATOR_RATE)
        trials["emulator (en-us, default rate)"].append((c.id, text, answer_correct(c.answers, text)))
    for voice, rate in VOICES:
        label = f"{voice} at {rate} wpm"
        trials[label] = []
        for c in clips:
            text = heard(voiced(sentences[c.id], voice, rate), CATALOG_RATE)
            trials[label].append((c.id, text, answer_correct(c.answers, text)))
    controls: dict[str, list[tuple[str, str, bool]]] = {"the question's own clip": [], "the emulator's non-answer": []}
    no_answer = heard(emulator_audio(NO_ANSWER), EMULATOR_RATE)
    for c in clips:
        text = heard(ds.audio(c).astype(np.float64) / 32768.0, c.sample_rate)
        controls["the question's own clip"].append((c.id, text, answer_correct(c.answers, text)))
        controls["the emulator's non-answer"].append((c.id, no_answer, answer_correct(c.answers, no_answer)))
    if not args.quick and (SPEECH / "manifest.jsonl").is_file():
        trials["recorded speech, its last word"] = recorded_last_words(SPEECH, args.limit)
    answers = {c.id: c.answers for c in clips}
    print(f"{len(clips)} spoken questions (s2s-questions), instrument {instrument()[1]}")
    print(f"{'reply':34} {'heard correct':>14}")
    results = {}
    for label, rows in {**trials, **controls}.items():
        correct = sum(ok for _, _, ok in rows)
        results[label] = {"n": len(rows), "correct": correct, "share": correct / len(rows)}
        print(f"{label:34} {correct:>5} / {len(rows):<3} {100 * correct / len(rows):5.1f}%")
    for label, rows in trials.items():
        for uid, text, ok in rows:
            if not ok and uid in answers:
                print(f"  misheard ({label}): {uid} said {answers[uid][0]!r}, heard {text!r}")
    for label, rows in controls.items():
        for uid, text, ok in rows:
            if ok:
                print(f"  counted although not an answer ({label}): {uid} heard {text!r}")
    spoken = [ok for label, rows in trials.items() if not label.startswith("recorded") for _, _, ok in rows]
    never = all(not ok for rows in controls.values() for _, _, ok in rows)
    out = {"benchmark": "answer_accuracy", "questions": len(clips), "results": results,
           "correct_answers_heard_correct": sum(spoken) / len(spoken),
           "controls_never_correct": never, "controls_never_correct_target_met": never}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
