"""The recipe for the bundled tts-coval-v1: `python -m voxwatch.datasets.build_coval TTS_V1_JSON`.

Coval's public voice-AI board reads 30 customer-service TTS prompts full of order numbers, amounts,
dates and times. They are bundled here (Apache-2.0, attributed in the folder's NOTICE and its
dataset.json) with Coval's own test-case ids, so the same prompts can be measured on the TTS board
beside tts-prompts. Entity tags: the tagger's (voxwatch.metrics.entity_tagger), checked by hand
against every prompt, plus the names and places it has no rule for (HAND_TAGS).

TTS_V1_JSON is Coval's manifest at SOURCE's path and commit (a clone of SOURCE["repository"]); a
different file is refused by its sha256, so the bundled set is always those bytes' prompts.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from voxwatch.foundation.integrity import file_sha256
from voxwatch.metrics.entity_tagger import tag_records

from voxwatch.datasets.catalog import bundled_root
from voxwatch.datasets.entity_tags import TagCount
from voxwatch.datasets.manifest import DatasetInfo, Prompt, write_info, write_records

NAME = "tts-coval-v1"
RECIPE = "voxwatch.datasets.build_coval v1"
CATEGORY = "customer_service"
SOURCE = {
    "repository": "https://github.com/coval-ai/benchmarks",
    "path": "runner/src/coval_bench/datasets/manifests/tts-v1.json",
    "commit": "bf95d1b13fa141c391c075c3938e00080d030360",
    "file_last_changed_in": "43e9c9941c5d86928e76718b4dbcc187056fb79a",
    "sha256": "e30909112f5fd886157008ca960c00d4f68f29de69b29d5913a5bf3383ad71ec",
    "dataset": "tts-v1 1.2.0",
    "license": "Apache-2.0",
    "copyright": "Copyright 2026 The Coval Benchmarks Authors",
}
"""Where the prompts come from, recorded in dataset.json."""
NOTICE = (f"{NAME}: the 30 TTS prompts of Coval's benchmark (dataset {SOURCE['dataset']}), "
          f"{SOURCE['repository']} {SOURCE['path']} at commit {SOURCE['commit']}. "
          f"{SOURCE['copyright']}. Licensed under the Apache License, Version 2.0 "
          "(http://www.apache.org/licenses/LICENSE-2.0). Changed: entity tags added by voxwatch.\n")

HAND_TAGS: dict[str, tuple[tuple[str, str], ...]] = {
    "A4": (("name", "Garcia"), ("name", "Peterson")),
    "A12": (("address", "Chicago"), ("address", "Illinois")),
    "A13": (("name", "David"),),
    "A24": (("name", "Martinez"),),
    "A27": (("name", "Lisa Chen"),),
    "A29": (("name", "O'Connor"),),
}
"""Names and places, which the tagger has no rule for, tagged by hand (METHOD "Entity accuracy")."""


def prompts_of(source: Path) -> list[Prompt]:
    """Coval's items as prompts with their entity tags: the tagger's, then the hand tags, in text order."""
    items = json.loads(source.read_text())["items"]
    out = []
    for item in items:
        text = item["transcript"]
        hand = [{"type": t, "text": span} for t, span in HAND_TAGS.get(item["testcase_id"], ())]
        tags = sorted([*tag_records(text), *hand], key=lambda e: text.index(e["text"]))
        out.append(Prompt(id=item["testcase_id"], text=text, category=CATEGORY, entities=tuple(tags) or None))
    return out


def build(source: Path, root: Path) -> Path:
    """Write root/tts-coval-v1 (manifest, dataset.json, NOTICE) from Coval's tts-v1.json."""
    digest = file_sha256(source)
    if digest != SOURCE["sha256"]:
        raise SystemExit(f"{source}: sha256 {digest[:12]}... is not {SOURCE['sha256'][:12]}... (the file at "
                         f"{SOURCE['path']}, commit {SOURCE['commit'][:12]}); refusing to bundle other prompts")
    prompts = prompts_of(source)
    count = TagCount(hand=sum(p.id in HAND_TAGS for p in prompts),
                     tagger=sum(bool(tag_records(p.text)) for p in prompts))
    folder = root / NAME
    write_records(folder / "manifest.jsonl", prompts)
    write_info(folder, DatasetInfo(
        name=NAME, kind="text", family=NAME, condition="text", recipe=RECIPE,
        description=f"Coval's {len(prompts)} customer-service TTS prompts (order numbers, amounts, dates, times), "
                    f"coval-ai/benchmarks tts-v1, {SOURCE['license']}",
        extra={"source": SOURCE, **count.note()}))
    (folder / "NOTICE").write_text(NOTICE)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path, help="Coval's tts-v1.json")
    parser.add_argument("--out", type=Path, default=bundled_root())
    args = parser.parse_args()
    print(f"built {build(args.source, args.out)}")


if __name__ == "__main__":
    main()
