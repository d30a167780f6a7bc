"""The reproducible recipe for the bundled spoken questions: `python -m voxwatch.datasets.build_questions`.

s2s-questions is question_texts.QUESTIONS spoken by eSpeak NG in the starter's four voice and rate
settings, each clip made exactly as a starter clip is (build_starter.synthesized_clip: 16 kHz, padded
with seeded silences over a faint noise floor, -20 dBFS RMS, VAD anchors, sha256), its manifest line
carrying the question's accepted answers. Its condition is `questions`: the S2S single-turn use case
whose replies are scored for answer accuracy (METHOD "Answer accuracy (S2S single turn)").
eSpeak NG's frication noise is random, so a rebuild gives equivalent, not byte-identical, audio: the
committed files and their sha256s are the reference; `--reanswer` rewrites the accepted answers only
(text metadata: no clip is re-synthesized).
"""

from __future__ import annotations

import argparse
import shutil
from dataclasses import replace
from pathlib import Path

from voxwatch.providers.local.espeak_engine import EspeakEngine

from voxwatch.datasets.build_starter import VOICES, synthesized_clip, vad_record
from voxwatch.datasets.catalog import bundled_root
from voxwatch.datasets.manifest import Clip, DatasetInfo, read_records, write_info, write_records
from voxwatch.datasets.question_texts import QUESTIONS

NAME = "s2s-questions"
CONDITION = "questions"
RECIPE = "voxwatch.datasets.build_questions v1"
LICENSE = "Apache-2.0"
LICENSE_NOTE = ("the questions and their answers are voxwatch's own text, under the project's licence (Apache-2.0); "
                "the audio is eSpeak NG's synthesis of that text, as the synthesized starter sets' is. eSpeak NG "
                "(GPL-3.0-or-later) is the program that spoke it; its licence covers the program, not the speech it "
                "outputs, so the clips carry the text's licence")


def answers_of(uid: str) -> tuple[str, ...]:
    """A question's accepted answers, as its manifest line holds them."""
    return next(answers for qid, _category, _text, answers in QUESTIONS if qid == uid)


def build(root: Path) -> list[Clip]:
    """root/s2s-questions: every question spoken, its manifest (answers included) and dataset.json."""
    engine = EspeakEngine.get()
    folder = root / NAME
    clips = []
    for i, (uid, _category, text, answers) in enumerate(QUESTIONS):
        voice, rate = VOICES[i % len(VOICES)]
        clip, _ = synthesized_clip(engine, folder, uid, text, voice, rate, answers=answers)
        clips.append(clip)
    write_records(folder / "manifest.jsonl", clips)
    categories: dict[str, int] = {}
    for _uid, category, _text, _answers in QUESTIONS:
        categories[category] = categories.get(category, 0) + 1
    write_info(folder, DatasetInfo(
        name=NAME, kind="audio", family=NAME, condition=CONDITION, recipe=RECIPE, sample_rate=16000,
        description=f"{len(clips)} spoken questions with known short answers (arithmetic, counting, colours, the "
                    f"calendar, capitals, facts, opposites), eSpeak NG {engine.version}, {len(VOICES)} voice/rate "
                    "settings, 16 kHz mono, -20 dBFS RMS; each clip's accepted answers in its manifest line",
        vad=vad_record(),
        extra={"voices": [f"{v}@{r}wpm" for v, r in VOICES], "categories": categories, "license": LICENSE,
               "license_note": LICENSE_NOTE}))
    return clips


def reanswer(root: Path) -> int:
    """Rewrite the committed clips' accepted answers from QUESTIONS, audio untouched; how many changed."""
    path = root / NAME / "manifest.jsonl"
    old = read_records(path, Clip)
    new = [replace(c, answers=answers_of(c.utterance_id)) for c in old]
    write_records(path, new)
    return sum(a != b for a, b in zip(old, new))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=bundled_root())
    parser.add_argument("--reanswer", action="store_true", help="only rewrite the accepted answers of the existing clips")
    args = parser.parse_args()
    if args.reanswer:
        print(f"rewrote {reanswer(args.out)} questions' answers in {args.out / NAME}")
        return
    shutil.rmtree(args.out / NAME, ignore_errors=True)
    clips = build(args.out)
    print(f"built {len(clips)} spoken questions in {args.out / NAME}")


if __name__ == "__main__":
    main()
