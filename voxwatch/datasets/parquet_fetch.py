"""`voxwatch datasets fetch` for a set published as Hugging Face parquet shards (WildASR), built as Coval builds it.

The Hub's listing of the repository (datasets.hf_parquet) names each split's shards with their
sha256 and size; every shard is downloaded as any fetched file is (resumable, bounded, checked:
datasets.download) into `<datasets dir>/.downloads/NAME/`. The rows are chosen by Coval's rule
(datasets.wildasr), only the chosen rows' audio is read out of the shards, and each condition is
imported as `voxwatch datasets import` imports a folder, under Coval's dataset name
(`<entry>-<condition>` for the family, the entry's name for a single split) and Coval's clip ids:
the family's sets share their utterance ids, so clean and degraded rows pair clip for clip, and
rows pair with Coval's published results by id. Everything is built in a staging folder and moved
into place only when all of it succeeded.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from voxwatch.datasets import hf_parquet, wildasr
from voxwatch.datasets.download import FetchError, Limits, Wanted, download
from voxwatch.datasets.hf_parquet import Shard
from voxwatch.datasets.importer import import_dataset, move_into_place, refuse_taken, staged
from voxwatch.datasets.manifest import read_info, write_info
from voxwatch.datasets.remote import RemoteEntry, built_names
from voxwatch.foundation.redaction import redact_url

if TYPE_CHECKING:
    from voxwatch.datasets.fetch import Fetched

RECIPE = "voxwatch datasets fetch v1 (parquet)"
COLUMNS = {"audio": "audio", "text": "transcript", "duration": "duration", "hash": "audio_hash_id"}
COVAL_MANIFESTS = "coval-ai/benchmarks runner/src/coval_bench/datasets/manifests/"


def dataset_names(entry: RemoteEntry) -> dict[str, str]:
    """condition -> the dataset it becomes: Coval's names (`<entry>-<condition>`; a single split: the entry's)."""
    return dict(zip(entry.layout_params["splits"], built_names(entry)))


def fetch_parquet(entry: RemoteEntry, dest_root: Path, existing: list[str], limits: Limits = Limits()) -> "Fetched":
    """The entry's sets in the catalog (see the module's docstring); a FetchError names what failed."""
    from voxwatch.datasets.fetch import Fetched  # fetch.py dispatches here: imported when called

    names = dataset_names(entry)
    taken = [n for n in names.values() if n in existing or (dest_root / n).exists()]
    if taken:
        raise FetchError(f"{entry.name}: {', '.join(taken)} already in the catalog ({dest_root}); "
                         f"remove the folder(s) to fetch again")
    refuse_taken(list(names.values()), dest_root, existing)
    cache = dest_root / ".downloads" / entry.name
    params = entry.layout_params
    try:
        shards, paths = _download(entry, cache, limits)
    except FetchError:
        _remove_if_empty(cache)  # a verified shard, or a part file to resume, stays
        _remove_if_empty(cache.parent)
        raise
    rows = {c: [r for s in group for r in hf_parquet.rows(s, paths[s.rel], COLUMNS["text"], COLUMNS["duration"],
                                                           COLUMNS["hash"])] for c, group in shards.items()}
    chosen = wildasr.family(rows) if entry.layout == "wildasr-family" else {c: wildasr.accent(r) for c, r in rows.items()}
    if "coval_ids" in params:
        check_coval_ids(Path(params["coval_ids"]), {names[c]: clips for c, clips in chosen.items()})
    with staged(dest_root, entry.name, "datasets", FetchError) as work:
        folders = [_build(entry, work, names[c], c, clips, paths, existing) for c, clips in chosen.items()]
        files = [{"name": s.rel, "url": redact_url(params["resolve"] + s.rel), "sha256": s.sha256, "size": s.size}
                 for s in sorted({s for g in shards.values() for s in g}, key=lambda s: s.rel)]
        for folder in folders:
            info = read_info(folder)
            write_info(folder, replace(info, extra={**info.extra, "files": files}))
        moved = move_into_place(folders, dest_root, FetchError)
        shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)
    _remove_if_empty(cache.parent)
    return Fetched(moved, len(next(iter(chosen.values()))), {})


def check_coval_ids(path: Path, sets: dict[str, list[wildasr.Chosen]]) -> None:
    """Each set's selection is Coval's, id for id: the rows chosen carry, in id order, the audio_hash_ids
    Coval's manifest lists (the source's own column, read from the same rows, so these bytes match
    where Coval's clip sha256, of its normalized WAV, cannot). Otherwise the ids would pair
    different recordings with Coval's results: refused before anything is written."""
    try:
        pins = json.loads(path.read_text(encoding="utf-8"))["sets"]
    except (OSError, ValueError, KeyError, TypeError):
        raise FetchError(f"{path}: cannot read Coval's ids (a JSON file with \"sets\")") from None
    for name, clips in sets.items():
        want, got = pins.get(name), [c.row.audio_hash_id for c in clips]
        if not isinstance(want, list):
            raise FetchError(f"{path}: no ids for {name}")
        if got != want:
            at = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))
            raise FetchError(f"{name}: the selection is not Coval's ({len(got)} clips, Coval's manifest {len(want)}; first "
                             f"difference at clip {at + 1:04d}): the source has changed since Coval's build; nothing was "
                             f"written (to build the new selection under new ids, copy the entry into your fetch catalog "
                             f"without coval_ids)")


def _download(entry: RemoteEntry, cache: Path, limits: Limits) -> tuple[dict[str, list[Shard]], dict[str, Path]]:
    """The listing (read fresh, then deleted: it has no pin to resume against) and every shard it names
    for the entry's splits, each checked against the listing's sha256 and size."""
    params = entry.layout_params
    listing = cache / "listing.json"
    try:
        download(Wanted(params["listing"], "the repository listing", "", size=None), listing, limits)
        siblings = hf_parquet.read_listing(listing, entry.name)
    finally:
        listing.unlink(missing_ok=True)
    shards = {c: hf_parquet.split_shards(siblings, params["config"], split, entry.name)
              for c, split in params["splits"].items()}
    paths: dict[str, Path] = {}
    for shard in sorted({s for group in shards.values() for s in group}, key=lambda s: s.rel):
        paths[shard.rel] = cache / shard.name
        download(Wanted(params["resolve"] + shard.rel, shard.name, shard.sha256, size=shard.size), paths[shard.rel], limits)
    return shards, paths


def _build(entry: RemoteEntry, work: Path, name: str, condition: str, clips: list[wildasr.Chosen],
           paths: dict[str, Path], existing: list[str]) -> Path:
    """One condition's dataset, in work/built/NAME: its chosen rows' audio under Coval's ids, imported."""
    source = work / f"source-{condition}"
    audio = source / "audio"
    audio.mkdir(parents=True)
    local = _extract(clips, paths, audio)
    (source / "manifest.jsonl").write_text("".join(json.dumps(
        {"id": c.id, "path": f"audio/{local[c.id]}", "text": c.row.transcript}) + "\n" for c in clips))
    built = import_dataset(source, name, work / "built", existing, language=entry.language, leave_out_silent=True)
    if not built.clips:
        raise FetchError(f"{name}: the VAD found speech in none of its {len(clips)} clips; nothing was written")
    shutil.rmtree(source, ignore_errors=True)
    info = read_info(built.folder)
    split = entry.layout_params["splits"][condition]
    write_info(built.folder, replace(
        info, family=entry.name, condition=condition, recipe=RECIPE, language=entry.language,
        description=f"{entry.description}; condition {condition} (split {split})",
        extra={**info.extra, "license": entry.license, "citation": entry.citation, "homepage": entry.homepage,
               "language": entry.language, "speech": entry.speech, "subset": entry.subset, "split": split,
               "coval_manifest": f"{COVAL_MANIFESTS}{name}.json",
               "pins": "each clip's sha256 is voxwatch's, of the clip it wrote; each shard's is the source listing's",
               "source_rows": {c.id: {"row": c.row.source_name, "audio_hash_id": c.row.audio_hash_id,
                                      "condition_idx": c.condition_idx, "condition_count": c.condition_count}
                               for c in clips}}))
    return built.folder


def _extract(clips: list[wildasr.Chosen], paths: dict[str, Path], out: Path) -> dict[str, str]:
    """Each chosen row's audio bytes written as `<id><suffix>`; clip id -> its file name."""
    by_shard: dict[Shard, dict[int, str]] = {}
    for c in clips:
        by_shard.setdefault(c.row.shard, {})[c.row.index] = c.id
    local: dict[str, str] = {}
    for shard, wanted in by_shard.items():
        for index, data, suffix in hf_parquet.audio(shard, paths[shard.rel], COLUMNS["audio"], set(wanted)):
            local[wanted[index]] = f"{wanted[index]}{suffix}"
            (out / local[wanted[index]]).write_bytes(data)
        missing = set(wanted.values()) - set(local)
        if missing:
            raise FetchError(f"{shard.name}: rows {sorted(i for i, cid in wanted.items() if cid in missing)[:5]} "
                             f"are not in the shard's audio column")
    return local


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass

