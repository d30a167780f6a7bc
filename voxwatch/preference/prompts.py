"""Prompt sets: single-turn audio prompts with what the preference board needs to know of each.

A prompt set is a folder holding `promptset.json` (what the set is, how it was made, whether its
audio was synthesized) and `prompts.jsonl` (one prompt a line), each prompt's audio a WAV in the
folder pinned by its sha256, as datasets are (voxwatch/datasets/manifest.py). A degraded prompt names the
clean prompt it was made from and the transform, with its parameters, that made it.

Every field is checked at load, and a malformed one is named with its file and line.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from voxwatch.foundation.audio import CATALOG_RATE, AudioError, probe
from voxwatch.datasets.manifest import ManifestError, iter_jsonl
from voxwatch.foundation.integrity import file_sha256
from voxwatch.foundation.text import control_chars

SCHEMA = 1
INFO, MANIFEST = "promptset.json", "prompts.jsonl"
CONDITIONS = ("clean", "indoor-noise", "outdoor-noise", "far-field")
DIFFICULTIES = ("L1", "L2", "L3", "L4", "L5")
MAX_ID_CHARS = 128
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_TAG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_SHA = re.compile(r"^[0-9a-f]{64}$")


class PromptSetError(ManifestError):
    """A prompt set that cannot be loaded: the message names the file, the line and the field."""


@dataclass(frozen=True)
class Prompt:
    id: str
    audio: str  # relative to the set's folder
    sha256: str
    text: str  # what the caller says
    category: str
    difficulty: str  # L1 (easiest) .. L5
    condition: str  # one of CONDITIONS
    tags: tuple[str, ...] = ()  # gate rubrics (rubrics.py): needs_reasoning, multilingual, ...
    reply: str | None = None  # what the scripted baseline says (a baseline's script, never a model's answer)
    source: str | None = None  # a degraded prompt: the id of the clean prompt it was made from
    transform: dict[str, Any] | None = None  # ... and the transform: {"name", "params"}


@dataclass(frozen=True)
class PromptSetInfo:
    name: str
    description: str
    synthesized: bool  # the audio was synthesized (eSpeak NG), not recorded from people
    recipe: str
    schema: int = SCHEMA
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """How every listing names the set's origin."""
        return "SYNTHESIZED (eSpeak NG), not human recordings" if self.synthesized else "recorded"


@dataclass(frozen=True)
class PromptSet:
    info: PromptSetInfo
    folder: Path
    prompts: tuple[Prompt, ...]
    pin: str  # sha256 of prompts.jsonl (which pins every audio file)

    @property
    def name(self) -> str:
        return self.info.name

    def audio_path(self, prompt: Prompt) -> Path:
        return self.folder / prompt.audio

    def prompt(self, prompt_id: str) -> Prompt:
        for p in self.prompts:
            if p.id == prompt_id:
                return p
        raise KeyError(f"prompt set {self.name!r} has no prompt {prompt_id!r}")


def _text(record: dict, key: str, where: str, required: bool = True) -> str | None:
    value = record.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise PromptSetError(f"{where}: {key} must be a non-empty string, got {value!r}")
    bad = control_chars(value)
    if bad:
        raise PromptSetError(f"{where}: {key} holds control characters ({', '.join(bad)})")
    return value


def _info(folder: Path) -> PromptSetInfo:
    path = folder / INFO
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PromptSetError(f"{path}: {exc}") from None
    if not isinstance(record, dict):
        raise PromptSetError(f"{path}: expected a JSON object")
    unknown = set(record) - {"name", "description", "synthesized", "recipe", "schema", "extra"}
    if unknown:
        raise PromptSetError(f"{path}: unknown field(s) {sorted(unknown)}")
    name = _text(record, "name", str(path))
    if not _NAME.match(name):
        raise PromptSetError(f"{path}: name {name!r}: use lower-case letters, digits, '.', '_' or '-'")
    if not isinstance(record.get("synthesized"), bool):
        raise PromptSetError(f"{path}: synthesized must be true or false (was the audio synthesized?)")
    if record.get("schema", SCHEMA) != SCHEMA:
        raise PromptSetError(f"{path}: schema {record.get('schema')!r} is not {SCHEMA}")
    extra = record.get("extra", {})
    if not isinstance(extra, dict):
        raise PromptSetError(f"{path}: extra must be an object")
    return PromptSetInfo(name, _text(record, "description", str(path)), record["synthesized"],
                         _text(record, "recipe", str(path)), SCHEMA, extra)


def _audio(folder: Path, relative: str, sha256: str, where: str, verify: bool) -> None:
    given = Path(relative)
    if given.is_absolute() or given.drive or ".." in given.parts:
        raise PromptSetError(f"{where}: audio {relative!r} must be a path inside the set's folder, without '..'")
    path = folder / given
    if not path.resolve().is_relative_to(folder.resolve()):
        raise PromptSetError(f"{where}: audio {relative!r} leads outside the set's folder")
    if not path.is_file():
        raise PromptSetError(f"{where}: audio {relative!r}: no such file")
    if not verify:
        return
    if file_sha256(path) != sha256:
        raise PromptSetError(f"{where}: audio {relative!r}: its sha256 does not match the manifest's")
    try:
        header = probe(path)
    except AudioError as exc:
        raise PromptSetError(f"{where}: audio: {exc}") from None
    if header.format not in ("WAV", "WAVEX") or header.channels != 1 or header.rate != CATALOG_RATE:
        raise PromptSetError(f"{where}: audio {relative!r} is {header.format} {header.channels} ch {header.rate} Hz; "
                             f"a prompt is a mono WAV at {CATALOG_RATE} Hz")


def parse_prompt(record: dict[str, Any], where: str) -> Prompt:
    """One manifest line as a Prompt; each malformed field raises PromptSetError naming it."""
    known = {"id", "audio", "sha256", "text", "category", "difficulty", "condition", "tags", "reply", "source",
             "transform"}
    unknown = set(record) - known
    if unknown:
        raise PromptSetError(f"{where}: unknown field(s) {sorted(unknown)}")
    prompt_id = _text(record, "id", where)
    if len(prompt_id) > MAX_ID_CHARS or "/" in prompt_id:
        raise PromptSetError(f"{where}: id {prompt_id!r}: at most {MAX_ID_CHARS} characters, no '/'")
    sha = record.get("sha256")
    if not isinstance(sha, str) or not _SHA.match(sha):
        raise PromptSetError(f"{where}: sha256 must be 64 lower-case hex digits, got {sha!r}")
    difficulty = record.get("difficulty")
    if difficulty not in DIFFICULTIES:
        raise PromptSetError(f"{where}: difficulty must be one of {', '.join(DIFFICULTIES)}, got {difficulty!r}")
    condition = record.get("condition")
    if condition not in CONDITIONS:
        raise PromptSetError(f"{where}: condition must be one of {', '.join(CONDITIONS)}, got {condition!r}")
    tags = record.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) and _TAG.match(t) for t in tags):
        raise PromptSetError(f"{where}: tags must be a list of lower-case tags (letters, digits, '_', '-'), got {tags!r}")
    if len(set(tags)) != len(tags):
        raise PromptSetError(f"{where}: tags lists a tag twice")
    transform = record.get("transform")
    if transform is not None and not (isinstance(transform, dict) and isinstance(transform.get("name"), str)):
        raise PromptSetError(f"{where}: transform must be an object with a name (and its params)")
    source = _text(record, "source", where, required=False)
    if source is not None and transform is None:
        raise PromptSetError(f"{where}: a prompt derived from {source!r} names the transform that made it")
    return Prompt(prompt_id, _text(record, "audio", where), sha, _text(record, "text", where),
                  _text(record, "category", where), difficulty, condition, tuple(tags),
                  _text(record, "reply", where, required=False), source, transform)


def load_prompt_set(folder: Path, verify: bool = True) -> PromptSet:
    """The set in `folder`, every field checked, and (verify) every audio file's sha256 and format."""
    info = _info(folder)
    manifest = folder / MANIFEST
    if not manifest.is_file():
        raise PromptSetError(f"{manifest}: not found (a prompt set needs {INFO} and {MANIFEST})")
    prompts: list[Prompt] = []
    seen: dict[str, int] = {}
    for n, record in iter_jsonl(manifest):
        where = f"{manifest}:{n}"
        prompt = parse_prompt(record, where)
        if prompt.id in seen:
            raise PromptSetError(f"{where}: id {prompt.id!r} is already on line {seen[prompt.id]}")
        seen[prompt.id] = n
        _audio(folder, prompt.audio, prompt.sha256, where, verify)
        prompts.append(prompt)
    if not prompts:
        raise PromptSetError(f"{manifest}: no prompts")
    for p in prompts:
        if p.source is not None and p.source not in seen:
            raise PromptSetError(f"{manifest}: prompt {p.id!r}: source {p.source!r} is not a prompt of this set")
    return PromptSet(info, folder, tuple(prompts), file_sha256(manifest))


def write_prompt_set(folder: Path, info: PromptSetInfo, prompts: list[Prompt]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / INFO).write_text(json.dumps(asdict(info), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    with (folder / MANIFEST).open("w", encoding="utf-8") as f:
        for p in prompts:
            record = {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(p).items() if v not in (None, ())}
            f.write(json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n")
