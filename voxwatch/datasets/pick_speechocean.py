"""The rule that chose the speechocean762 utterances of the recorded starter set, so the choice can be checked:
`python -m voxwatch.datasets.pick_speechocean --mirror DIR [--exclude MANIFEST]` prints their
recorded_sources.toml entries.

Adult speakers (spk2age >= 18) whose utterances are none of the shared validation set's (MANIFEST's
`source_path`s under WAVE/: that speaker is left out entirely, so the starter and the validation set share no
voice); utterances of at least 5 words; from the sorted speakers with two such utterances, SPEAKERS drawn with
numpy's default_rng(SEED), then two utterances of each drawn with the same generator from its sorted ids.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np

from voxwatch.datasets.git_tree import GitTree
from voxwatch.datasets.recorded_sources import SOURCES

SEED = 762
SPEAKERS = 15
PER_SPEAKER = 2
MIN_WORDS = 5
ADULT_AGE = 18


def _table(mirror: GitTree, name: str) -> dict[str, str]:
    rows = {}
    for split in ("train", "test"):
        for line in mirror.read(f"{split}/{name}").decode().splitlines():
            key, value = line.split(None, 1)
            rows[key] = value.strip()
    return rows


def validation_speakers(manifest: Path | None) -> set[str]:
    """The speakers of the shared validation set's speechocean762 clips (none when it is absent)."""
    if manifest is None or not manifest.is_file():
        return set()
    paths = [json.loads(line).get("source_path", "") for line in manifest.read_text().splitlines() if line.strip()]
    return {p.split("/")[1].removeprefix("SPEAKER") for p in paths if p.startswith("WAVE/")}


def pick(mirror: GitTree, exclude: set[str], speakers: int = SPEAKERS) -> list[dict]:
    """The chosen utterances: id, path, words, speaker, age, gender (the module docstring's rule)."""
    text, paths = _table(mirror, "text"), _table(mirror, "wav.scp")
    age, gender, spk = _table(mirror, "spk2age"), _table(mirror, "spk2gender"), _table(mirror, "utt2spk")
    by_speaker: dict[str, list[str]] = {}
    for utt in sorted(text):
        s = spk[utt]
        if int(age[s]) >= ADULT_AGE and s not in exclude and len(text[utt].split()) >= MIN_WORDS:
            by_speaker.setdefault(s, []).append(utt)
    rng = np.random.default_rng(SEED)
    eligible = sorted(s for s, utts in by_speaker.items() if len(utts) >= PER_SPEAKER)
    out = []
    for s in sorted(rng.choice(eligible, speakers, replace=False)):
        for utt in sorted(rng.choice(by_speaker[s], PER_SPEAKER, replace=False)):
            out.append({"id": str(utt), "path": paths[utt], "text": text[utt], "speaker": str(s),
                        "age": int(age[s]), "gender": gender[s]})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirror", type=Path, required=True, help="the repository's git directory or an export")
    parser.add_argument("--exclude", type=Path, default=Path("../shared/data/speech/manifest.jsonl"))
    args = parser.parse_args()
    mirror = GitTree(args.mirror, SOURCES["speechocean762"].version)
    for u in pick(mirror, validation_speakers(args.exclude)):
        pin = hashlib.sha256(mirror.read(u["path"])).hexdigest()
        print(f'\n[[speechocean]]\nid = "{u["id"]}"\npath = "{u["path"]}"\nsha256 = "{pin}"\n'
              f'text = "{u["text"]}"\nspeaker = "{u["speaker"]}"\nage = {u["age"]}\ngender = "{u["gender"]}"')


if __name__ == "__main__":
    main()
