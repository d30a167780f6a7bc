"""Manifests: frozen records serialised to jsonl, one line per clip or prompt.

A dataset is a folder holding `dataset.json` (what it is, how it was made) and `manifest.jsonl`
(one record per item). Derived audio names its source clip and the transform that made it, with
the transform's parameters, so no file is unexplained.
"""

from __future__ import annotations

import json
import re
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable, Iterator

from voxwatch.foundation.languages import checked
from voxwatch.metrics.answers import checked_answers
from voxwatch.metrics.entities import ENTITY_TYPES

SCHEMA_VERSION = 1
_NOT_FILE_CHARS = re.compile(r"[^A-Za-z0-9._-]")


class ManifestError(ValueError):
    """A manifest that cannot be read or breaks its schema; the message names the file and line."""


@dataclass(frozen=True)
class Clip:
    id: str
    utterance_id: str  # shared by every variant of one utterance across a family
    text: str
    path: str  # relative to the dataset folder
    sha256: str
    duration_s: float
    sample_rate: int
    speech_start: float
    speech_end: float
    voice: str | None = None  # the speaker (a recording's speaker id, or the synthesizer's voice)
    source_clip: str | None = None
    transform: dict[str, Any] | None = None
    entities: tuple[dict[str, str], ...] | None = None  # METHOD "Entity accuracy": spans of `text` to get right
    accent: str | None = None  # the speaker's accent, as the dataset's maker describes it (free text)
    source: str | None = None  # a recording's origin: "<registry>:<package>@<version>:<path inside it>"
    license: str | None = None  # the recording's licence (SPDX identifier, or "public-domain")
    answers: tuple[str, ...] | None = None  # a spoken question's accepted answers (METHOD "Answer accuracy")

    def __post_init__(self) -> None:
        if self.entities is not None:
            object.__setattr__(self, "entities", checked_entities(self.entities, self.text))
        if self.answers is not None:
            object.__setattr__(self, "answers", checked_answers(self.answers, self.text))


def checked_entities(entities: Any, text: str) -> tuple[dict[str, str], ...]:
    """A clip's tagged entities, each {"type": one of ENTITY_TYPES, "text": a substring of the
    reference}, as a tuple; ValueError says which entity is wrong and why."""
    if not isinstance(entities, (list, tuple)):
        raise ValueError(f"entities: expected a list, got {type(entities).__name__}")
    out = []
    for i, e in enumerate(entities):
        where = f"entities[{i}]"
        if not isinstance(e, dict) or set(e) != {"type", "text"}:
            raise ValueError(f"{where}: expected an object with exactly \"type\" and \"text\", got {e!r}"[:200])
        if e["type"] not in ENTITY_TYPES:
            raise ValueError(f"{where}: type {e['type']!r} is not one of {', '.join(ENTITY_TYPES)}")
        if not isinstance(e["text"], str) or not e["text"].strip() or e["text"] not in text:
            raise ValueError(f"{where}: text {e['text']!r} is not a span of the reference text {text!r}")
        out.append({"type": e["type"], "text": e["text"]})
    return tuple(out)


@dataclass(frozen=True)
class Prompt:
    id: str
    text: str
    category: str
    entities: tuple[dict[str, str], ...] | None = None  # METHOD "Entity accuracy": spans the voice must say right

    def __post_init__(self) -> None:
        if self.entities is not None:
            object.__setattr__(self, "entities", checked_entities(self.entities, self.text))


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    kind: str  # "audio" (clips for STT / S2S) or "text" (prompts for TTS)
    family: str
    condition: str
    description: str
    recipe: str
    schema: int = SCHEMA_VERSION
    sample_rate: int | None = None
    vad: dict[str, Any] | None = None
    transform: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    wire: dict[str, Any] | None = None  # how its clips are sent and stored, when not 16 kHz PCM (datasets.wire)
    language: str = "en"  # what is spoken (or to be spoken): a BCP 47 tag; boards never pool two languages

    def __post_init__(self) -> None:
        checked(self.language)


def file_stem(item_id: str) -> str:
    """An id as a file name (an imported clip's, a call recording's): every character but letters,
    digits, '.', '_' and '-' as '_', so no id can name a folder ("/", "..") or a device."""
    return _NOT_FILE_CHARS.sub("_", item_id)


def _from_record(cls, record: dict[str, Any], where: str):
    names = {f.name for f in fields(cls)}
    required = {f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING}
    unknown, missing = set(record) - names, required - set(record)
    if unknown or missing:
        raise ManifestError(f"{where}: " + "; ".join(
            p for p in (f"unknown field(s) {sorted(unknown)}" if unknown else "",
                        f"missing field(s) {sorted(missing)}" if missing else "") if p))
    try:
        return cls(**record)
    except ValueError as exc:  # a field's own check (Clip.entities, Prompt.entities)
        raise ManifestError(f"{where}: {exc}") from None


def read_info(folder: Path) -> DatasetInfo:
    path = folder / "dataset.json"
    try:
        record = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ManifestError(f"{path}: {exc}") from None
    info = _from_record(DatasetInfo, record, str(path))
    if info.schema != SCHEMA_VERSION:
        raise ManifestError(f"{path}: schema {info.schema} is not {SCHEMA_VERSION}")
    return info


def write_info(folder: Path, info: DatasetInfo) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dataset.json").write_text(json.dumps(asdict(info), indent=2, sort_keys=True) + "\n")


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; a bad line raises naming the file and line."""
    try:
        lines = path.read_bytes().split(b"\n")
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read ({exc.strerror})") from None
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise ManifestError(f"{path}:{n}: not UTF-8 (byte {exc.start + 1} of the line)") from None
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, or a number or nesting past Python's limits
            raise ManifestError(f"{path}:{n}: not JSON ({exc})") from None
        if not isinstance(record, dict):
            raise ManifestError(f"{path}:{n}: expected a JSON object")
        yield n, record


def read_records(path: Path, cls: type) -> list:
    items = [_from_record(cls, record, f"{path}:{n}") for n, record in iter_jsonl(path)]
    ids = [i.id for i in items]
    if len(set(ids)) != len(ids):
        raise ManifestError(f"{path}: duplicate ids")
    return items


def write_records(path: Path, items: Iterable) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for item in items:
            f.write(json.dumps({k: v for k, v in asdict(item).items() if v is not None}, sort_keys=True) + "\n")
