"""How a fetched set's transcripts name its utterances: one reader per layout, and the subset rule.

A layout says which fetched files hold transcripts (`is_transcript`) and turns their text into
utterances (`utterances`), each naming its audio by its path among the fetched files: an archive
member's path, or a plain file's name.

- librispeech: `<dir>/<speaker>-<chapter>.trans.txt` lines "ID TEXT"; the audio is `<dir>/ID.flac`.
  Params: root (a folder prefix to read under, e.g. "LibriSpeech/test-clean/").
- tsv (FLEURS): a tab-separated file without a header. Params: transcripts (the file's name),
  audio_dir (the folder holding the audio), file_column, text_column, speaker_column (0-based);
  an utterance's id is its audio file's stem, and a file named twice is read once.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from voxwatch.datasets.download import FetchError


@dataclass(frozen=True)
class Utterance:
    id: str
    text: str
    audio: str
    speaker: str | None = None


def is_transcript(layout: str, params: dict[str, Any], path: str) -> bool:
    if layout == "librispeech":
        return path.startswith(params.get("root", "")) and path.endswith(".trans.txt")
    return path == params["transcripts"]


def utterances(layout: str, params: dict[str, Any], texts: dict[str, str]) -> list[Utterance]:
    """Every utterance the transcripts name, sorted by id."""
    found = _librispeech(texts) if layout == "librispeech" else _tsv(params, texts)
    if not found:
        raise FetchError(f"no utterances found in the fetched transcripts ({layout} layout: "
                         f"{', '.join(sorted(texts)) or 'no transcript file among the fetched files'})")
    return sorted(found, key=lambda u: u.id)


def _librispeech(texts: dict[str, str]) -> list[Utterance]:
    found = []
    for path, text in texts.items():
        folder = str(PurePosixPath(path).parent)
        for line in text.splitlines():
            if line.strip():
                uid, _, words = line.strip().partition(" ")
                found.append(Utterance(uid, words.strip(), f"{folder}/{uid}.flac", uid.split("-")[0]))
    return found


def _tsv(params: dict[str, Any], texts: dict[str, str]) -> list[Utterance]:
    file_col, text_col = int(params.get("file_column", 1)), int(params.get("text_column", 2))
    speaker_col = params.get("speaker_column")
    folder = params.get("audio_dir", "").strip("/")
    found: dict[str, Utterance] = {}
    for row in csv.reader(io.StringIO(texts.get(params["transcripts"], "")), delimiter="\t", quoting=csv.QUOTE_NONE):
        if len(row) <= max(file_col, text_col):
            continue
        name = row[file_col]
        uid = PurePosixPath(name).stem
        speaker = row[int(speaker_col)] if speaker_col is not None and len(row) > int(speaker_col) else None
        found.setdefault(uid, Utterance(uid, row[text_col].strip(), f"{folder}/{name}" if folder else name, speaker))
    return list(found.values())


def choose(found: list[Utterance], subset: dict[str, Any]) -> list[Utterance]:
    """The subset rule: the first N by sorted id, the first N of each speaker (by sorted id), or
    the ids listed (each must exist)."""
    if "first" in subset:
        return found[: subset["first"]]
    if "per_speaker" in subset:
        taken: dict[str | None, int] = {}
        chosen = []
        for u in found:
            if taken.get(u.speaker, 0) < subset["per_speaker"]:
                taken[u.speaker] = taken.get(u.speaker, 0) + 1
                chosen.append(u)
        return chosen
    by_id = {u.id: u for u in found}
    missing = [i for i in subset["ids"] if i not in by_id]
    if missing:
        raise FetchError(f"subset: id(s) not in the fetched transcripts: {', '.join(missing[:5])}")
    return [by_id[i] for i in subset["ids"]]
