"""The manifest of `voxwatch datasets import DIR`: every line of DIR/manifest.jsonl checked before a
file is decoded.

A line is {"id", "path", "text"} with optional "speaker", "accent", "entities", "utterance" and
"condition". What the manifest says is not trusted: every path must stay inside DIR (no "..", no
absolute path, no symlink out of it), every string is free of control characters, no two ids of
one condition may name the same file (`c/1` and `c:1` both become `c_1.wav`; `A` and `a` collide on
a case-insensitive disk).

Conditions make one family of user recordings: lines naming the same `utterance` in different
`condition`s are the same words recorded in different conditions (a quiet room and a car), paired
by utterance id on every board. The `clean` condition is the reference the others are compared
with, so it is required, and every other condition's utterance must have a clean recording.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voxwatch.foundation.text import control_chars

from voxwatch.datasets.manifest import ManifestError, checked_entities, file_stem, iter_jsonl

MAX_ID_CHARS = 128
CLEAN = "clean"
CONDITION = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
_STRINGS = ("id", "text", "path", "speaker", "accent", "utterance", "condition")


class DatasetImportError(ValueError):
    pass


@dataclass(frozen=True)
class Entry:
    line: int
    id: str
    text: str
    audio: Path  # resolved, inside the source folder
    speaker: str | None
    accent: str | None
    entities: tuple[dict[str, str], ...] | None
    utterance: str  # shared by the recordings of one utterance across conditions (default: the id)
    condition: str | None  # None: the manifest names no conditions


def read_manifest(source: Path) -> list[Entry]:
    """Every manifest line checked (fields, texts, ids as file names, paths inside DIR), then the
    lines together (one condition per line or none, a clean reference, paired texts that agree)."""
    root = _resolved(source, source)
    manifest = source / "manifest.jsonl"
    if not manifest.is_file():
        raise DatasetImportError(f"{manifest}: not found (DIR needs a manifest.jsonl with id, path and text per line)")
    _inside(root, manifest, f"{manifest}")
    entries = [_entry(root, n, record, f"{manifest}:{n}") for n, record in iter_jsonl(manifest)]
    if not entries:
        raise ManifestError(f"{manifest}: no clips")
    _check_files(entries, manifest)
    _check_conditions(entries, manifest)
    return entries


def _entry(root: Path, n: int, record: dict[str, Any], where: str) -> Entry:
    missing = [k for k in ("id", "path", "text") if not isinstance(record.get(k), str) or not record[k].strip()]
    if missing:
        raise ManifestError(f"{where}: missing or empty {', '.join(missing)} (each must be a non-empty string)")
    for key in ("speaker", "accent", "utterance", "condition"):
        if record.get(key) is not None and not isinstance(record[key], str):
            raise ManifestError(f"{where}: {key} must be a string")
    for key in _STRINGS:
        bad = control_chars(record.get(key) or "")
        if bad:
            raise ManifestError(f"{where}: {key} holds control characters ({', '.join(bad)}); "
                                "a store refuses NUL and no text should carry the others")
    for key in ("id", "utterance", "speaker", "accent"):
        if len(record.get(key) or "") > MAX_ID_CHARS:
            raise ManifestError(f"{where}: {key} is {len(record[key])} characters long; at most {MAX_ID_CHARS}")
    utterance = record.get("utterance", record["id"])
    if not utterance.strip():
        raise ManifestError(f"{where}: utterance is empty (leave it out to use the id)")
    condition = record.get("condition")
    if condition is not None and not CONDITION.match(condition):
        raise ManifestError(f"{where}: condition {condition!r}: use 1-32 lower-case letters, digits, '-' or '_' "
                            "(it names the dataset NAME-<condition>)")
    entities = None
    if record.get("entities") is not None:
        try:
            entities = checked_entities(record["entities"], record["text"])
        except ValueError as exc:
            raise ManifestError(f"{where}: {exc}") from None
    return Entry(n, record["id"], record["text"], _audio_path(root, record["path"], where), record.get("speaker"),
                 record.get("accent"), entities, utterance, condition)


def _check_files(entries: list[Entry], manifest: Path) -> None:
    """Within each condition, each id (and each utterance: a degraded clip is named by it) its own file."""
    for key in ("id", "utterance"):
        stems: dict[tuple[str | None, str], tuple[int, str]] = {}
        for e in entries:
            value = getattr(e, key)
            stem = (e.condition, file_stem(value).casefold())
            if stem in stems:
                other_line, other = stems[stem]
                what = (f"duplicate {key}" if other == value else
                        f"{key}s {other!r} (line {other_line}) and {value!r} name the same file")
                scope = f" in condition {e.condition}" if e.condition else ""
                raise ManifestError(f"{manifest}:{e.line}: {what}{scope} ({file_stem(value)}.wav); "
                                    f"give each clip its own {key}")
            stems[stem] = (e.line, value)


def _check_conditions(entries: list[Entry], manifest: Path) -> None:
    named = [e for e in entries if e.condition is not None]
    if not named:
        return
    if len(named) != len(entries):
        bare = next(e for e in entries if e.condition is None)
        raise ManifestError(f"{manifest}:{bare.line}: no condition, but line {named[0].line} names one; "
                            "give every line a condition, or none")
    if all(e.condition != CLEAN for e in entries):
        raise ManifestError(f"{manifest}: no line has condition {CLEAN!r}; the clean recordings are the reference "
                            "the other conditions are paired with (dataset NAME), so one condition must be clean")
    clean = {e.utterance: e for e in entries if e.condition == CLEAN}
    for e in entries:
        ref = clean.get(e.utterance)
        if ref is None:
            raise ManifestError(f"{manifest}:{e.line}: utterance {e.utterance!r} ({e.condition}) has no {CLEAN} "
                                "recording to be paired with; add one, or give the line the utterance it repeats")
        if e.text != ref.text:
            raise ManifestError(f"{manifest}:{e.line}: utterance {e.utterance!r} ({e.condition}) has text {e.text!r}, "
                                f"line {ref.line} ({CLEAN}) has {ref.text!r}; one utterance has one reference text")


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
