"""`voxwatch datasets fetch NAME`: a public speech set from the fetch catalog, into the dataset catalog.

Each file of the entry is downloaded into `<datasets dir>/.downloads/NAME/` (resumable, verified:
datasets.download), its transcripts read by the entry's layout, the subset chosen, and only those
utterances' audio taken out of the archives (a member whose sha256 the entry pins is checked; each
member, and all of an archive's together, within the entry's caps, counted as the bytes come out).
They are then imported exactly as `voxwatch datasets import` imports a user's folder (catalog
format, VAD anchors, sha256 per clip) as the clean dataset NAME, and each degraded condition the
entry names is built from it as NAME-<transform> with the starter family's transforms. Everything
is written in a staging folder and moved into place only when all of it succeeded.
"""

from __future__ import annotations

import io
import json
import shutil
import tarfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

from voxwatch.datasets.build_starter import build_degraded_family
from voxwatch.datasets.download import FetchError, Limits, Wanted, download
from voxwatch.datasets.importer import import_dataset, move_into_place, staged
from voxwatch.datasets.layouts import Utterance, choose, is_transcript, utterances
from voxwatch.datasets.manifest import file_stem, read_info, write_info
from voxwatch.datasets.remote import PARQUET_LAYOUTS, RemoteEntry, RemoteFile, built_names
from voxwatch.foundation.integrity import file_sha256

RECIPE = "voxwatch datasets fetch v1"
_MAX_TRANSCRIPT_BYTES = 64 << 20


@dataclass(frozen=True)
class Fetched:
    folders: list[Path]  # the clean dataset first, then its degraded conditions
    clips: int
    pinned: dict[str, str]  # file name -> sha256 of files that had none (recorded by --pin)


def unpinned(entry: RemoteEntry) -> list[str]:
    return [f.name for f in entry.files if not f.sha256]


def fetch(entry: RemoteEntry, dest_root: Path, existing: list[str], limits: Limits = Limits(),
          pin: bool = False) -> Fetched:
    if entry.layout in PARQUET_LAYOUTS:  # shards the Hub lists, selected by Coval's rule (datasets.parquet_fetch)
        from voxwatch.datasets.parquet_fetch import fetch_parquet

        return fetch_parquet(entry, dest_root, existing, limits)
    names = built_names(entry)
    taken = [n for n in names if n in existing or (dest_root / n).exists()]
    if taken:
        raise FetchError(f"{entry.name}: {', '.join(taken)} already in the catalog ({dest_root}); "
                         f"remove the folder(s) to fetch again")
    if unpinned(entry) and not pin:
        raise FetchError(f"{entry.name}: no pinned checksum for {', '.join(unpinned(entry))}: pin it with "
                         f"`voxwatch datasets fetch {entry.name} --pin` after verifying the source")
    cache = dest_root / ".downloads" / entry.name
    paths, verified = {}, {}
    try:
        for f in entry.files:
            verified[f.name] = download(Wanted(f.url, f.name, f.sha256, f.md5, f.size), cache / f.name, limits)
            paths[f.name] = cache / f.name
    except FetchError:
        _remove_if_empty(cache)  # a verified file, or a part file to resume, stays
        raise
    chosen = choose(utterances(entry.layout, entry.layout_params, _transcripts(entry, paths)), entry.subset)
    with staged(dest_root, entry.name, "datasets", FetchError) as work:
        source = work / "source"
        _extract(entry, paths, chosen, source / "audio")
        (source / "manifest.jsonl").write_text("".join(json.dumps(
            {"id": u.id, "path": f"audio/{_local_name(u)}", "text": u.text,
             **({"speaker": u.speaker} if u.speaker else {})}) + "\n" for u in chosen))
        built = work / "built"
        clean = import_dataset(source, entry.name, built, existing, language=entry.language)  # its tags: English only
        info = read_info(clean.folder)
        write_info(clean.folder, replace(info, family=entry.name, condition="clean", recipe=RECIPE, language=entry.language,
                                         description=entry.description, extra={**info.extra, **entry.record(verified)}))
        folders = [clean.folder] + build_degraded_family(built, entry.name, clean.clips, entry.degraded,
                                                          family=entry.name, recipe=RECIPE, language=entry.language)
        moved = move_into_place(folders, dest_root, FetchError)
        shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)  # built: the downloads have done their job
    _remove_if_empty(cache)
    return Fetched(moved, len(clean.clips), {f.name: verified[f.name] for f in entry.files if not f.sha256})


@dataclass
class _Unpacked:
    """What one archive may still unpack to: its entry's cap per member and in all, checked on the
    header's claim before a byte is written and on the bytes as they are written (a bomb stops there)."""

    file: RemoteFile
    total: int = 0

    def copy(self, member: tarfile.TarInfo, src: BinaryIO, dst: BinaryIO) -> None:
        self._check(member, member.size)
        n = 0
        while block := src.read(min(1 << 20, self.file.max_member_bytes - n + 1)):
            n += len(block)
            self._check(member, n)
            dst.write(block)
        self.total += n

    def _check(self, member: tarfile.TarInfo, size: int) -> None:
        f = self.file
        if size > f.max_member_bytes:
            raise FetchError(f"{f.name}: member {member.name} unpacks to more than max_member_bytes ({f.max_member_bytes}); "
                             f"refused, nothing was written")
        if self.total + size > f.max_unpacked_bytes:
            raise FetchError(f"{f.name}: the members taken out unpack to more than max_unpacked_bytes "
                             f"({f.max_unpacked_bytes}) at {member.name}; refused, nothing was written")


def _remove_if_empty(cache: Path) -> None:
    for folder in (cache, cache.parent):
        try:
            folder.rmdir()
        except OSError:  # not empty, or not there
            pass


def _local_name(u: Utterance) -> str:
    return file_stem(u.id) + Path(u.audio).suffix.lower()


def _transcripts(entry: RemoteEntry, paths: dict[str, Path]) -> dict[str, str]:
    """Every transcript file's text, from plain files and from inside archives (path -> text)."""
    texts: dict[str, str] = {}
    for f in entry.files:
        if not f.is_archive:
            if is_transcript(entry.layout, entry.layout_params, f.name):
                texts[f.name] = _decode(f.name, paths[f.name].read_bytes())
            continue
        unpacked = _Unpacked(f)
        for member, tar in _members(f, paths[f.name]):
            if member.isfile() and is_transcript(entry.layout, entry.layout_params, member.name):
                if member.size > _MAX_TRANSCRIPT_BYTES:
                    raise FetchError(f"{f.name}: {member.name} is {member.size} bytes; not a transcript")
                text = io.BytesIO()
                unpacked.copy(member, tar.extractfile(member), text)
                texts[member.name] = _decode(f"{f.name}:{member.name}", text.getvalue())
    return texts


def _decode(where: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise FetchError(f"{where}: transcripts are not UTF-8") from None


def _members(f: RemoteFile, path: Path):
    """(member, open tar) for each member, streamed: a large archive is read once, never listed whole."""
    try:
        with tarfile.open(path, mode="r|*") as tar:
            for member in tar:
                yield member, tar
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise FetchError(f"{f.name}: not a readable archive ({exc})") from None


def _extract(entry: RemoteEntry, paths: dict[str, Path], chosen: list[Utterance], out: Path) -> None:
    """The chosen utterances' audio, each under its own id's file name; a pinned member is checked."""
    out.mkdir(parents=True)
    wanted = {u.audio: u for u in chosen}
    for f in entry.files:
        if not f.is_archive:
            if f.name in wanted:
                shutil.copyfile(paths[f.name], out / _local_name(wanted.pop(f.name)))
            continue
        pins, unpacked = f.members, _Unpacked(f)
        for member, tar in _members(f, paths[f.name]):
            u = wanted.get(member.name)
            if u is None or not member.isfile():
                continue
            target = out / _local_name(u)
            try:
                with tar.extractfile(member) as src, target.open("wb") as dst:
                    unpacked.copy(member, src, dst)
            except FetchError:
                target.unlink(missing_ok=True)
                raise
            if member.name in pins and file_sha256(target) != pins[member.name]:
                raise FetchError(f"{f.name}: member {member.name}: checksum mismatch (sha256 {file_sha256(target)} "
                                 f"is not the pinned {pins[member.name]}); nothing was written")
            del wanted[member.name]
    if wanted:
        raise FetchError(f"{entry.name}: audio named by the transcripts is missing from the fetched files: "
                         f"{', '.join(sorted(wanted)[:5])}")
