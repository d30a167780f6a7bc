"""Which WildASR rows make Coval's sets, and the ids Coval gives them: the selection rule, on rows.

Coval's board (coval-ai/benchmarks, runner/src/coval_bench/datasets/scripts/wildasr.py and
framework.py, Apache-2.0; its manifests README) builds its WildASR sets from bosonai/WildASR; these
are its rules, restated so that voxwatch's clips are Coval's clips, id for id:

The environment family (clean and five degradations of the same FLEURS recordings):
- a split's rows are grouped by transcript (stripped), in shard order; within a transcript, rows
  with an `audio_hash_id` already seen are dropped (the source repeats rows), so a transcript's
  rows are its distinct audios, its *conditions*, in order of first appearance;
- the utterances are the clean split's transcripts; each has an ordinal, its position among
  them before anything is dropped;
- dropped: a transcript under 3 words (or empty); one the clean split holds more than one
  distinct recording of (ambiguous); one some split lacks; one for which some split has no
  condition of 2-15 s;
- each split contributes one condition per utterance: the first in the 2-15 s band from the
  ordinal mod the utterance's condition count onwards (rotating the conditions evenly);
- the clips are numbered in the sorted order of their transcripts, from 0001, four digits: the
  same number is the same utterance in every set of the family.

The accent set (demographic_shift__en__demographic_accent_en, unpaired): every distinct row
(grouped and deduplicated as above), kept when its transcript has 3 words or more and it lasts
2-15 s, once per audio_hash_id (a row without one is its own), numbered in the sorted order of
the audio_hash_id.
"""

from __future__ import annotations

from dataclasses import dataclass

from voxwatch.datasets.download import FetchError
from voxwatch.datasets.hf_parquet import Row

MIN_S, MAX_S = 2.0, 15.0
MIN_WORDS = 3
CLEAN = "clean"


@dataclass(frozen=True)
class Chosen:
    """One clip of a set: Coval's id, the row it is made of, and which of its utterance's conditions it is."""

    id: str
    row: Row
    condition_idx: int = 0
    condition_count: int = 1


def distinct(rows: list[Row]) -> dict[str, list[Row]]:
    """A split's rows by transcript, in order, each transcript's duplicates (same audio_hash_id) dropped."""
    grouped: dict[str, list[Row]] = {}
    seen: dict[str, set[str]] = {}
    for r in rows:
        if r.audio_hash_id:
            if r.audio_hash_id in seen.setdefault(r.transcript, set()):
                continue
            seen[r.transcript].add(r.audio_hash_id)
        grouped.setdefault(r.transcript, []).append(r)
    return grouped


def _in_band(r: Row) -> bool:
    return MIN_S <= r.duration <= MAX_S


def _number(n: int) -> str:
    return f"{n:04d}"


def family(splits: dict[str, list[Row]]) -> dict[str, list[Chosen]]:
    """Each condition's clips (condition -> clips in id order); `splits` holds every condition's rows, clean among them."""
    grouped = {condition: distinct(rows) for condition, rows in splits.items()}
    pool: list[tuple[str, dict[str, Chosen]]] = []
    for ordinal, (transcript, clean_rows) in enumerate(grouped[CLEAN].items()):
        if len(transcript.split()) < MIN_WORDS or len(clean_rows) != 1:
            continue
        picked: dict[str, Chosen] = {}
        for condition, by_text in grouped.items():
            options = by_text.get(transcript, [])
            idx = next((i for i in ((ordinal + k) % len(options) for k in range(len(options))) if _in_band(options[i])),
                       None)
            if idx is None:
                break
            picked[condition] = Chosen("", options[idx], idx, len(options))
        else:
            pool.append((transcript, picked))
    if not pool:
        raise FetchError("the WildASR family selection left no utterance (every one dropped by Coval's rule)")
    pool.sort(key=lambda p: p[0])
    return {condition: [Chosen(_number(n), picked[condition].row, picked[condition].condition_idx,
                               picked[condition].condition_count) for n, (_t, picked) in enumerate(pool, 1)]
            for condition in splits}


def accent(rows: list[Row]) -> list[Chosen]:
    """The accent set's clips in id order."""
    kept = [r for group in distinct(rows).values() for r in group
            if len(r.transcript.split()) >= MIN_WORDS and _in_band(r)]
    seen: set[str] = set()
    out: list[Row] = []
    for r in sorted(kept, key=_accent_key):
        if _accent_key(r) not in seen:
            seen.add(_accent_key(r))
            out.append(r)
    if not out:
        raise FetchError("the WildASR accent selection left no clip (every row dropped by Coval's rule)")
    return [Chosen(_number(n), r) for n, r in enumerate(out, 1)]


def _accent_key(r: Row) -> str:
    return r.audio_hash_id or f"{r.source_name}"
