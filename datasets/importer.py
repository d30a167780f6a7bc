"""`voxwatch datasets import DIR --name NAME`: bring your own audio into the catalog.

DIR holds audio (WAV or FLAC, 8-192 kHz, mono or not) and a manifest.jsonl whose lines have at
least {"id", "path", "text"}. Each file is converted to the catalog format (16 kHz mono 16-bit,
-20 dBFS RMS), given VAD anchors, and hashed. The dataset is written to a temporary folder and
moved into place only when every clip succeeded, so a bad file leaves nothing half-imported.

What the manifest says is not trusted: every path must stay inside DIR (no "..", no absolute
path, no symlink out of it), every text and id is free of control characters, no two ids may
name the same file (`c/1` and `c:1` both become `c_1.wav`; `A` and `a` collide on a
case-insensitive disk), and each file's header is checked before it is decoded (datasets.audio.probe).
A file shorter than its header says is refused unless `allow_truncated`.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from voxwatch.metrics.vad import VAD_NAME, VAD_PARAMS, VAD_VERSION, speech_anchors
from voxwatch.integrity import file_sha256
from voxwatch.text import control_chars
from voxwatch.languages import checked

from .audio import CATALOG_RATE, AudioError, decode_mono, normalize_loudness, probe, resample, to_pcm16, write_wav
from .manifest import Clip, DatasetInfo, ManifestError, file_stem, iter_jsonl, write_info, write_records

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
MAX_ID_CHARS = 128


class DatasetImportError(ValueError):
    pass


@dataclass(frozen=True)
class Imported:
    folder: Path
    clips: list[Clip]
    truncated: list[str] = field(default_factory=list)  # ids imported short of their header (allow_truncated)


@dataclass(frozen=True)
class _Entry:
    id: str
    text: str
    audio: Path  # resolved, inside the source folder
    speaker: str | None


def import_dataset(source: Path, name: str, dest_root: Path, existing: list[str],
                   allow_truncated: bool = False, language: str = "en") -> Imported:
    if not _NAME.match(name):
        raise DatasetImportError(f"dataset name {name!r}: use lower-case letters, digits, '.', '_' or '-'")
    if name in existing:
        raise DatasetImportError(f"a dataset named {name!r} already exists; choose another --name")
    try:
        checked(language)
    except ValueError as exc:
        raise DatasetImportError(f"--language: {exc}") from None
    final = dest_root / name
    if final.exists() or final.is_symlink():
        raise DatasetImportError(f"{final} already exists (not a dataset voxwatch knows); remove it or choose another --name")
    entries = _read_manifest(source)
    work = staging_folder(dest_root, name, "datasets", DatasetImportError)
    try:
        clips, truncated = [], []
        for e in entries:
            header = probe(e.audio)
            x, complete = decode_mono(e.audio, header, allow_truncated)
            if not complete:
                truncated.append(e.id)
            x = normalize_loudness(resample(x, header.rate, CATALOG_RATE))
            anchors = speech_anchors(to_pcm16(x))
            if anchors is None:
                raise AudioError(f"{e.audio}: the VAD found no speech")
            path = work / "clips" / f"{file_stem(e.id)}.wav"
            write_wav(path, x)
            clips.append(Clip(id=e.id, utterance_id=e.id, text=e.text, path=f"clips/{path.name}",
                              sha256=file_sha256(path), duration_s=round(x.size / CATALOG_RATE, 4),
                              sample_rate=CATALOG_RATE, speech_start=anchors.speech_start,
                              speech_end=anchors.speech_end, voice=e.speaker))
        write_records(work / "manifest.jsonl", clips)
        write_info(work, DatasetInfo(
            name=name, kind="audio", family=name, condition="imported", recipe="voxwatch datasets import",
            sample_rate=CATALOG_RATE, description=f"imported from {source.resolve()}",
            vad={"name": VAD_NAME, "version": VAD_VERSION, "params": VAD_PARAMS.as_record()},
            extra={"truncated": truncated} if truncated else {}, language=language))
        try:
            work.rename(final)
        except OSError as exc:  # made meanwhile by someone else
            raise DatasetImportError(f"cannot move the dataset into {final} ({exc.strerror})") from None
        return Imported(final, clips, truncated)
    except OSError as exc:  # the datasets folder's disk, full or gone (a source file's errors are AudioErrors)
        shutil.rmtree(work, ignore_errors=True)
        raise DatasetImportError(f"cannot write the dataset into {dest_root} ({exc.strerror or exc})") from None
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


@contextmanager
def staged(dest_root: Path, name: str, section: str, error: type[Exception]) -> Iterator[Path]:
    """A staging folder (staging_folder) removed when the block fails; an OSError there is `error`
    naming dest_root. The block moves the folder into place once it is complete."""
    work = staging_folder(dest_root, name, section, error)
    try:
        yield work
    except OSError as exc:
        shutil.rmtree(work, ignore_errors=True)
        raise error(f"cannot write into {dest_root} ({exc.strerror or exc})") from None
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def staging_folder(dest_root: Path, name: str, section: str, error: type[Exception]) -> Path:
    """A new dot folder inside dest_root (a catalog skips it) to import into, moved into place once
    complete; `error` names the [section] dir to fix when the folder cannot be written."""
    try:
        dest_root.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f".{name}-", dir=dest_root))
    except OSError as exc:
        raise error(f"cannot write to the {section} folder {dest_root} ({exc.strerror}); "
                    f"set [{section}] dir to a folder you can write") from None


def _read_manifest(source: Path) -> list[_Entry]:
    """Every manifest line checked: its fields, its texts, its id as a file name, its path inside DIR."""
    root = _resolved(source, source)
    manifest = source / "manifest.jsonl"
    if not manifest.is_file():
        raise DatasetImportError(f"{manifest}: not found (DIR needs a manifest.jsonl with id, path and text per line)")
    _inside(root, manifest, f"{manifest}")
    entries: list[_Entry] = []
    stems: dict[str, tuple[int, str]] = {}
    for n, record in iter_jsonl(manifest):
        where = f"{manifest}:{n}"
        missing = [k for k in ("id", "path", "text") if not isinstance(record.get(k), str) or not record[k].strip()]
        if missing:
            raise ManifestError(f"{where}: missing or empty {', '.join(missing)} (each must be a non-empty string)")
        speaker = record.get("speaker")
        if speaker is not None and not isinstance(speaker, str):
            raise ManifestError(f"{where}: speaker must be a string")
        for key in ("id", "text", "path", "speaker"):
            bad = control_chars(record.get(key) or "")
            if bad:
                raise ManifestError(f"{where}: {key} holds control characters ({', '.join(bad)}); "
                                    "a store refuses NUL and no text should carry the others")
        clip_id = record["id"]
        if len(clip_id) > MAX_ID_CHARS:
            raise ManifestError(f"{where}: id is {len(clip_id)} characters long; at most {MAX_ID_CHARS}")
        stem = file_stem(clip_id).casefold()
        if stem in stems:
            other_line, other = stems[stem]
            what = "duplicate id" if other == clip_id else f"ids {other!r} (line {other_line}) and {clip_id!r} name the same file"
            raise ManifestError(f"{where}: {what} ({file_stem(clip_id)}.wav); give each clip its own id")
        stems[stem] = (n, clip_id)
        entries.append(_Entry(clip_id, record["text"], _audio_path(root, record["path"], where), speaker))
    if not entries:
        raise ManifestError(f"{manifest}: no clips")
    return entries


def _audio_path(root: Path, relative: str, where: str) -> Path:
    """The manifest's path resolved inside DIR; an absolute path, '..', or a symlink out of it is refused."""
    given = Path(relative)
    if given.is_absolute() or given.drive or ".." in given.parts:
        raise ManifestError(f"{where}: path {relative!r} must be relative to DIR, without '..'")
    path = _resolved(root / given, root, where)
    _inside(root, path, f"{where}: path {relative!r}")
    if not path.is_file():
        raise ManifestError(f"{where}: path {relative!r}: no such file in DIR")
    return path


def _resolved(path: Path, root: Path, where: str | None = None) -> Path:
    try:
        return path.resolve(strict=True)
    except FileNotFoundError:
        if where is None:
            raise DatasetImportError(f"{path}: no such folder") from None
        raise ManifestError(f"{where}: path {str(path.relative_to(root))!r}: no such file in DIR") from None
    except (OSError, RuntimeError) as exc:  # a symlink loop: RuntimeError up to Python 3.12, OSError after
        raise DatasetImportError(f"{path}: cannot resolve ({getattr(exc, 'strerror', None) or exc})") from None


def _inside(root: Path, path: Path, what: str) -> None:
    if not path.resolve().is_relative_to(root):
        raise ManifestError(f"{what} leads outside DIR ({root}); every file must be inside it")
