"""The entity tagger against hand tags: `python -m benchmarks.entity_tagger [--live]`.

Agreement (precision and recall, a tagger span agreeing with a hand span of its type that it
overlaps) against the 64 starter utterances' hand tags (starter_texts.STT_ENTITIES) and against
the hand count of Coval's 30 TTS prompts (tests/test_entity_tagger.py COVAL_HAND_COUNT), over the
tagger's types and over every hand tag (names and places have no rule). Then the entity error
rate of eSpeak NG read by the Whisper tiny.en instrument on those prompts, from the transcripts the
test keeps, beside its hand count; `--live` measures it again through the TTS path (`voxwatch run
--board tts --datasets tts-coval-v1 --models espeak-ng/en-us@1.52.0`, all 30 prompts, a temporary
SQLite store; about a minute on 2 cores). Targets: precision and recall >= 0.95 on the tagger's
types, on both sets. Without `--live` it takes seconds: `--quick` is that run (the same code path). Last
line: JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.test_entity_tagger import COVAL_HAND_COUNT, ESPEAK_WHISPER_TINY, HEARD_WRONG, TAGGED_TYPES, agreement
from voxwatch.datasets.build_coval import NAME as COVAL
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.datasets.starter_texts import STT_ENTITIES, STT_UTTERANCES
from voxwatch.metrics.entities import entity_errors
from voxwatch.metrics.series import entity_error_rate

TARGET = 0.95
ESPEAK = "espeak-ng/en-us@1.52.0"


def scores(hand: list[tuple[str, str, str]], texts: dict[str, str]) -> dict[str, float | int]:
    """Precision and recall of the tagger against the hand tags, over the tagger's types and all."""
    covered = [h for h in hand if h[1] in TAGGED_TYPES]
    missed, extra, agreed = agreement(covered, texts)
    return {"hand": len(hand), "hand_of_tagger_types": len(covered), "agreed": agreed, "extra": len(extra),
            "missed": len(missed), "precision": agreed / (agreed + len(extra)) if agreed + len(extra) else 1.0,
            "recall": agreed / len(covered), "recall_all_types": agreed / len(hand)}


def eer(heard: dict[str, str]) -> tuple[float | None, int, int]:
    """The entity error rate of transcripts of tts-coval-v1's prompts: (rate, missed, entities)."""
    prompts = {p.id: p for p in Catalog([bundled_root()]).load(COVAL).prompts}
    counted = [entity_errors(prompts[i].entities or (), h) for i, h in heard.items()]
    missed, total = [c.missed for c in counted], [c.total for c in counted]
    return entity_error_rate(missed, total), sum(missed), sum(total)


def live() -> dict[str, str]:
    """eSpeak NG's 30 readings heard by the instrument now, through `voxwatch run`'s TTS path."""
    with tempfile.TemporaryDirectory() as tmp:
        store = f"sqlite:///{Path(tmp) / 'store.db'}"
        run = [sys.executable, "-m", "voxwatch.cli", "run", "--board", "tts", "--datasets", COVAL, "--models", ESPEAK,
               "--sample-size", "30", "--seed", "1", "--store", store, "--no-progress"]
        subprocess.run(run, check=True, cwd=tmp, stdout=subprocess.DEVNULL)
        out = subprocess.run([sys.executable, "-m", "voxwatch.cli", "export", "--format", "jsonl", "--store", store],
                             check=True, cwd=tmp, capture_output=True, text=True).stdout
    return {r["clip_id"]: r["hypothesis"] or "" for r in map(json.loads, out.splitlines()) if r["status"] == "ok"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--live", action="store_true", help="measure eSpeak NG + Whisper tiny.en again (about a minute)")
    parser.add_argument("--quick", action="store_true", help="the recorded transcripts only, never --live (seconds)")
    args = parser.parse_args()
    if args.quick:
        args.live = False
    starter = scores([(u, t, s) for u, tags in STT_ENTITIES.items() for t, s in tags],
                     {u: text for u, _c, text in STT_UTTERANCES})
    coval_texts = {p.id: p.text for p in Catalog([bundled_root()]).load(COVAL).prompts}
    coval = scores([(i, t, s) for i, tags in COVAL_HAND_COUNT.items() for t, s in tags], coval_texts)
    print(f"{'hand tags':<28} {'hand':>5} {'of its types':>12} {'agreed':>6} {'extra':>5} {'precision':>9} "
          f"{'recall':>6} {'recall, all types':>17}")
    for name, s in (("starter (64 utterances)", starter), ("Coval tts-v1 (30 prompts)", coval)):
        print(f"{name:<28} {s['hand']:>5} {s['hand_of_tagger_types']:>12} {s['agreed']:>6} {s['extra']:>5} "
              f"{s['precision']:>9.3f} {s['recall']:>6.3f} {s['recall_all_types']:>17.3f}")
    rate, missed, total = eer(ESPEAK_WHISPER_TINY)
    hand_missed = sum(len(v) for v in HEARD_WRONG.values())
    print(f"\neSpeak NG en-us read by Whisper tiny.en on tts-coval-v1 (recorded transcripts): entity error rate "
          f"{rate:.3f} ({missed} of {total} entities missed); hand count {hand_missed} of {total}")
    result = {"benchmark": "entity_tagger", "starter": starter, "coval": coval, "recorded_entity_error_rate": rate,
              "recorded_missed": missed, "hand_count_missed": hand_missed, "entities": total}
    if args.live:
        live_rate, live_missed, live_total = eer(live())
        print(f"the same, measured now through voxwatch run: {live_rate:.3f} ({live_missed} of {live_total})")
        result |= {"live_entity_error_rate": live_rate, "live_missed": live_missed}
    result |= {
        "starter_precision_target_met": starter["precision"] >= TARGET,
        "starter_recall_target_met": starter["recall"] >= TARGET,
        "coval_precision_target_met": coval["precision"] >= TARGET,
        "coval_recall_target_met": coval["recall"] >= TARGET,
        "coval_entity_error_rate_equals_hand_count_target_met": missed == hand_missed,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
