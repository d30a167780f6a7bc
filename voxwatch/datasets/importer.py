"""`voxwatch datasets import DIR --name NAME`: bring your own audio into the catalog.

DIR holds audio (WAV or FLAC, 8-192 kHz, mono or not) and a manifest.jsonl (datasets.import_manifest
says what a line holds and how it is checked). Each file is converted to the catalog format (16 kHz
mono 16-bit, -20 dBFS RMS), given VAD anchors, and hashed; each file's header is checked before it is
decoded (datasets.audio.probe), and a file shorter than its header says is refused unless
`allow_truncated`.

One import can make a family of datasets paired by utterance id: the manifest's conditions (user
recordings of the same utterances: `clean` is NAME, every other condition NAME-<condition>) and
`degrade` (NAME-<transform> built from the clean clips exactly as `voxwatch datasets fetch` builds
its degraded sets). Everything is written to a temporary folder and moved into place only when
every clip of every dataset succeeded, so a bad file leaves nothing half-imported.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from voxwatch.metrics.vad import speech_anchors
from voxwatch.foundation.integrity import file_sha256
from voxwatch.foundation.languages import checked
from voxwatch.foundation.termination import terminable

from voxwatch.datasets import degrade as degrade_mod
from voxwatch.foundation.audio import (CATALOG_RATE, AudioError, decode_mono, normalize_loudness, probe, resample,
                                       to_pcm16, write_wav)
from voxwatch.datasets.build_starter import build_degraded_family, vad_record
from voxwatch.datasets.import_manifest import CLEAN, DatasetImportError, Entry, read_manifest
from voxwatch.datasets.entity_tags import TagCount, filled
from voxwatch.datasets.manifest import Clip, DatasetInfo, file_stem, write_info, write_records

__all__ = ["DatasetImportError", "Imported", "Member", "degrade_names", "import_dataset", "staged"]

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
RECIPE = "voxwatch datasets import"
PLAIN = "imported"
"""The condition of a plain import (no conditions in the manifest, no --degrade): one dataset, no family to compare."""


@dataclass(frozen=True)
class Member:
    """One dataset an import made."""
    folder: Path
    condition: str
    clips: int


@dataclass(frozen=True)
class Imported:
    folder: Path  # the dataset NAME (the clean condition when the import made a family)
    clips: list[Clip]  # its clips
    truncated: list[str] = field(default_factory=list)  # ids imported short of their header (allow_truncated)
    members: list[Member] = field(default_factory=list)  # every dataset made, NAME first
    silent: list[str] = field(default_factory=list)  # ids left out: the VAD found no speech (leave_out_silent)


def degrade_names(text: str) -> tuple[str, ...]:
    """`--degrade`: "all" (every transform of datasets.degrade) or a comma-separated list of them."""
    names = list(degrade_mod.TRANSFORMS) if text.strip() == "all" else [x.strip() for x in text.split(",") if x.strip()]
    unknown = [n for n in names if n not in degrade_mod.TRANSFORMS]
    if unknown or not names:
        raise DatasetImportError(f"--degrade {text!r}: unknown transform(s) {', '.join(map(repr, unknown))}; "
                                 f"use all, or a comma-separated list of {', '.join(degrade_mod.TRANSFORMS)}")
    return tuple(dict.fromkeys(names))


def import_dataset(source: Path, name: str, dest_root: Path, existing: list[str],
                   allow_truncated: bool = False, degrade: tuple[str, ...] = (), language: str = "en",
                   leave_out_silent: bool = False) -> Imported:
    """`leave_out_silent`: a clip the VAD finds no speech in is left out (listed in dataset.json
    `no_speech`) rather than refused: for a published set whose harshest recordings may hold none a
    VAD can anchor (WildASR's reverberation), where a user's import is refused so the file gets fixed."""
    if not _NAME.match(name):
        raise DatasetImportError(f"dataset name {name!r}: use lower-case letters, digits, '.', '_' or '-'")
    try:
        checked(language)
    except ValueError as exc:
        raise DatasetImportError(f"--language: {exc}") from None
    entries = read_manifest(source)
    plan = _plan(name, entries, degrade)
    refuse_taken([n for n, _c, _e in plan] + [f"{name}-{t}" for t in degrade], dest_root, existing)
    with staged(dest_root, name, "datasets", DatasetImportError) as work:
        members, truncated, clean, silent = [], [], [], []
        for ds_name, condition, group in plan:
            tags = TagCount()
            clips, short, quiet = _convert(group, work / ds_name, allow_truncated, language, tags, leave_out_silent)
            silent += [c if ds_name == name else f"{ds_name}/{c}" for c in quiet]
            truncated += [c if ds_name == name else f"{ds_name}/{c}" for c in short]
            write_records(work / ds_name / "manifest.jsonl", clips)
            write_info(work / ds_name, DatasetInfo(
                name=ds_name, kind="audio", family=name, condition=condition, recipe=RECIPE,
                sample_rate=CATALOG_RATE, description=f"imported from {source.resolve()}"
                + (f", recorded in condition {condition}" if condition not in (PLAIN, CLEAN) else ""),
                vad=vad_record(), extra=({"truncated": short} if short else {}) | ({"no_speech": quiet} if quiet else {})
                | tags.note(), language=language))
            members.append(Member(dest_root / ds_name, condition, len(clips)))
            clean = clean or clips
        for folder, t in zip(build_degraded_family(work, name, clean, degrade, family=name, recipe=RECIPE,
                                                                language=language), degrade):
            members.append(Member(dest_root / folder.name, t, len(clean)))
        move_into_place([work / m.folder.name for m in members], dest_root, DatasetImportError)
        shutil.rmtree(work, ignore_errors=True)
    return Imported(dest_root / name, clean, truncated, members, silent)


def _plan(name: str, entries: list[Entry], degrade: tuple[str, ...]) -> list[tuple[str, str, list[Entry]]]:
    """(dataset name, condition, its lines) for each recorded condition, the clean one (NAME) first."""
    conditions = sorted({e.condition for e in entries if e.condition is not None}, key=lambda c: (c != CLEAN, c))
    if not conditions:
        return [(name, CLEAN if degrade else PLAIN, entries)]
    clash = [c for c in conditions if c in degrade]
    if clash:
        raise DatasetImportError(f"condition(s) {', '.join(clash)} of the manifest would be built by --degrade too "
                                 f"({name}-{clash[0]}); rename the recorded condition or leave the transform out")
    return [(name if c == CLEAN else f"{name}-{c}", c, [e for e in entries if e.condition == c]) for c in conditions]


def refuse_taken(names: list[str], dest_root: Path, existing: list[str]) -> None:
    """Each dataset an import would make must be a new, valid name with no folder in the way."""
    for n in names:
        if not _NAME.match(n):
            raise DatasetImportError(f"dataset name {n!r}: use up to 64 lower-case letters, digits, '.', '_' or '-', "
                                     "starting with a letter or digit")
        if n in existing:
            raise DatasetImportError(f"a dataset named {n!r} already exists; choose another --name")
        final = dest_root / n
        if final.exists() or final.is_symlink():
            raise DatasetImportError(f"{final} already exists (not a dataset voxwatch knows); "
                                     "remove it or choose another --name")


def _convert(entries: list[Entry], folder: Path, allow_truncated: bool, language: str, tags: TagCount,
             leave_out_silent: bool = False) -> tuple[list[Clip], list[str], list[str]]:
    """Each line's audio in the catalog format with its anchors and entity tags (its own, else the
    tagger's, counted in `tags`); the ids read short of their header; the ids left out for no speech."""
    clips, truncated, silent = [], [], []
    for e in entries:
        header = probe(e.audio)
        x, complete = decode_mono(e.audio, header, allow_truncated)
        if not complete:
            truncated.append(e.id)
        x = normalize_loudness(resample(x, header.rate, CATALOG_RATE))
        anchors = speech_anchors(to_pcm16(x))
        if anchors is None and leave_out_silent:
            silent.append(e.id)
            continue
        if anchors is None:
            raise AudioError(f"{e.audio}: the VAD found no speech")
        path = folder / "clips" / f"{file_stem(e.id)}.wav"
        write_wav(path, x)
        clips.append(Clip(id=e.id, utterance_id=e.utterance, text=e.text, path=f"clips/{path.name}",
                          sha256=file_sha256(path), duration_s=round(x.size / CATALOG_RATE, 4),
                          sample_rate=CATALOG_RATE, speech_start=anchors.speech_start,
                          speech_end=anchors.speech_end, voice=e.speaker, accent=e.accent,
                          entities=filled(e.entities, e.text, language, tags)))
    return clips, truncated, silent


def move_into_place(folders: list[Path], dest_root: Path, error: type[Exception]) -> list[Path]:
    """Every finished folder renamed into dest_root, or none: a failed rename takes back the ones made."""
    moved = []
    try:
        for folder in folders:
            folder.rename(dest_root / folder.name)
            moved.append(dest_root / folder.name)
    except OSError as exc:  # made meanwhile by someone else, or the disk
        for done in moved:
            shutil.rmtree(done, ignore_errors=True)
        raise error(f"cannot move {folder.name} into {dest_root} ({exc.strerror or exc}); nothing was written") from None
    return moved


@contextmanager
def staged(dest_root: Path, name: str, section: str, error: type[Exception]) -> Iterator[Path]:
    """A staging folder (staging_folder) removed when the block fails, Ctrl-C and SIGTERM included;
    an OSError there is `error` naming dest_root. The block moves the folder into place once it is
    complete. One import of a name at a time (its lock): holding it, the staging folders a killed
    import of that name left are removed first."""
    with terminable(), import_lock(dest_root, name, section, error):
        for stale in stale_staging(dest_root, name):
            shutil.rmtree(stale, ignore_errors=True)
        work = staging_folder(dest_root, name, section, error)
        try:
            yield work
        except OSError as exc:
            shutil.rmtree(work, ignore_errors=True)
            raise error(f"cannot write into {dest_root} ({exc.strerror or exc})") from None
        except BaseException as exc:
            shutil.rmtree(work, ignore_errors=True)
            if isinstance(exc, KeyboardInterrupt):
                exc.add_note(f"nothing was imported into {dest_root}")
            raise


@contextmanager
def import_lock(dest_root: Path, name: str, section: str, error: type[Exception]) -> Iterator[None]:
    """The lock of imports of `name` into dest_root: a dot file beside the datasets, flock'ed (the
    kernel frees it when its process dies, however it dies) and removed when the import ends;
    `error` when a live import holds it."""
    path = dest_root / f".{name}.lock"
    try:
        dest_root.mkdir(parents=True, exist_ok=True)
        lock = path.open("a")
    except OSError as exc:
        raise error(f"cannot write to the {section} folder {dest_root} ({exc.strerror}); "
                    f"set [{section}] dir to a folder you can write") from None
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if not _same_file(path, lock.fileno()):  # its holder removed it as we opened it: a new one may be held
                raise BlockingIOError
        except BlockingIOError:
            raise error(f"another import of {name!r} into {dest_root} is running; wait for it to finish") from None
        try:
            yield
        finally:
            path.unlink(missing_ok=True)  # still held: whoever opened it meanwhile sees it is not the file any more


def _same_file(path: Path, fd: int) -> bool:
    try:
        on_disk, held = os.stat(path), os.fstat(fd)
    except FileNotFoundError:
        return False
    return (on_disk.st_dev, on_disk.st_ino) == (held.st_dev, held.st_ino)


def stale_staging(dest_root: Path, name: str) -> list[Path]:
    """The staging folders of `name` (staging_folder's: `.NAME-` and tempfile's 8 characters, so no
    other name's) in dest_root; with its lock held, a killed import's."""
    own = re.compile(rf"\.{re.escape(name)}-[a-z0-9_]{{8}}")
    return [p for p in dest_root.iterdir() if own.fullmatch(p.name) and p.is_dir() and not p.is_symlink()]


def staging_folder(dest_root: Path, name: str, section: str, error: type[Exception]) -> Path:
    """A new dot folder inside dest_root (a catalog skips it) to import into, moved into place once
    complete; `error` names the [section] dir to fix when the folder cannot be written."""
    try:
        dest_root.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f".{name}-", dir=dest_root))
    except OSError as exc:
        raise error(f"cannot write to the {section} folder {dest_root} ({exc.strerror}); "
                    f"set [{section}] dir to a folder you can write") from None
