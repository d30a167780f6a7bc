"""`voxwatch datasets import-text FILE --name NAME`: your own prompts for the TTS board.

FILE is a .txt (one prompt a non-blank line; its id is made from its text, so a prompt keeps its
id when lines are added, removed or reordered) or a .jsonl of {"id", "text", "category"?,
"entities"?} lines. A prompt without entity tags gets the tagger's (datasets.entity_tags).
It becomes a dataset of kind "text" (Prompt records, as the bundled tts-prompts), written to a
temporary folder and moved into place only when every line passed its checks: UTF-8, no control
characters, no empty text, at most MAX_PROMPT_CHARS characters (what every TTS vendor takes in one
request), no two prompts with one id.
"""

from __future__ import annotations

import codecs
import hashlib
import re
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from voxwatch.foundation.text import control_chars

from voxwatch.datasets.import_manifest import MAX_ID_CHARS, DatasetImportError
from voxwatch.datasets.importer import move_into_place, refuse_taken, staged
from voxwatch.datasets.entity_tags import TagCount, filled
from voxwatch.datasets.manifest import (DatasetInfo, ManifestError, Prompt, checked_entities, iter_jsonl, write_info,
                                        write_records)

RECIPE = "voxwatch datasets import-text"
CONDITION = "text"
DEFAULT_CATEGORY = "prompt"
MAX_PROMPT_CHARS = 2000
MAX_FILE_BYTES = 16 << 20
_CATEGORY = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


@dataclass(frozen=True)
class ImportedText:
    folder: Path
    prompts: list[Prompt]


def import_text(source: Path, name: str, dest_root: Path, existing: list[str]) -> ImportedText:
    refuse_taken([name], dest_root, existing)
    tags = TagCount()
    prompts = [replace(p, entities=filled(p.entities, p.text, "en", tags)) for p in read_prompts(source)]
    with staged(dest_root, name, "datasets", DatasetImportError) as work:
        folder = work / name
        write_records(folder / "manifest.jsonl", prompts)
        write_info(folder, DatasetInfo(
            name=name, kind="text", family=name, condition=CONDITION, recipe=RECIPE,
            description=f"{len(prompts)} prompts imported from {source.resolve()}", extra=tags.note()))
        move_into_place([folder], dest_root, DatasetImportError)
        shutil.rmtree(work, ignore_errors=True)
    return ImportedText(dest_root / name, prompts)


def read_prompts(source: Path) -> list[Prompt]:
    """The file's prompts, every line checked; a bad one is named with its file and line."""
    if source.suffix not in (".txt", ".jsonl"):
        raise DatasetImportError(f"{source}: expected a .txt (one prompt a line) or a .jsonl of "
                                 "{\"id\", \"text\", \"category\"} lines")
    if not source.is_file():
        raise DatasetImportError(f"{source}: no such file")
    size = source.stat().st_size
    if size > MAX_FILE_BYTES:
        raise DatasetImportError(f"{source}: {size} bytes; a prompt file is at most {MAX_FILE_BYTES} bytes")
    lines = _txt_lines(source) if source.suffix == ".txt" else _jsonl_lines(source)
    prompts: list[Prompt] = []
    seen: dict[str, int] = {}
    for n, p in lines:
        where = f"{source}:{n}"
        for key in ("id", "text", "category"):
            bad = control_chars(getattr(p, key))
            if bad:
                raise ManifestError(f"{where}: {key} holds control characters ({', '.join(bad)}); "
                                    "a store refuses NUL and no text should carry the others")
        if len(p.text) > MAX_PROMPT_CHARS:
            raise ManifestError(f"{where}: text is {len(p.text)} characters long; at most {MAX_PROMPT_CHARS} "
                                "(split it into several prompts)")
        if p.id in seen:
            what = "the same text as" if source.suffix == ".txt" else "the same id as"
            raise ManifestError(f"{where}: {what} line {seen[p.id]} (id {p.id!r}); give each prompt its own")
        seen[p.id] = n
        prompts.append(p)
    if not prompts:
        raise ManifestError(f"{source}: no prompts")
    return prompts


def text_id(text: str) -> str:
    """A .txt prompt's id: from its text alone, so it is the same in every import of the line."""
    return "t-" + hashlib.sha256(text.encode()).hexdigest()[:12]


def _txt_lines(source: Path) -> list[tuple[int, Prompt]]:
    out = []
    for n, raw in enumerate(source.read_bytes().removeprefix(codecs.BOM_UTF8).split(b"\n"), 1):
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            raise ManifestError(f"{source}:{n}: not UTF-8 (byte {exc.start + 1} of the line)") from None
        if line:
            out.append((n, Prompt(id=text_id(line), text=line, category=DEFAULT_CATEGORY)))
    return out


def _jsonl_lines(source: Path) -> list[tuple[int, Prompt]]:
    out = []
    for n, record in iter_jsonl(source):
        where = f"{source}:{n}"
        unknown = set(record) - {"id", "text", "category", "entities"}
        if unknown:
            raise ManifestError(f"{where}: unknown field(s) {sorted(unknown)}; a line is id, text, category "
                                "and entities")
        missing = [k for k in ("id", "text") if not isinstance(record.get(k), str) or not record[k].strip()]
        if missing:
            raise ManifestError(f"{where}: missing or empty {', '.join(missing)} (each must be a non-empty string)")
        if len(record["id"]) > MAX_ID_CHARS:
            raise ManifestError(f"{where}: id is {len(record['id'])} characters long; at most {MAX_ID_CHARS}")
        category = record.get("category", DEFAULT_CATEGORY)
        if not isinstance(category, str) or not _CATEGORY.match(category):
            raise ManifestError(f"{where}: category {category!r}: use 1-64 lower-case letters, digits, '-' or '_'")
        try:
            entities = None if record.get("entities") is None else checked_entities(record["entities"],
                                                                                      record["text"].strip())
        except ValueError as exc:
            raise ManifestError(f"{where}: {exc}") from None
        out.append((n, Prompt(id=record["id"], text=record["text"].strip(), category=category, entities=entities)))
    return out
