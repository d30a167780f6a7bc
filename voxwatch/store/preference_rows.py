"""The stored form of the preference board's data: one dataclass per table, every column once.

Both stores build their tables from these (voxwatch/store/preference.py), as from Observation.
Ids named `*_id: int` are the store's own (assigned on insert; None before). Times are unix
seconds (UTC). JSON columns hold text. A CMOS is always in the pair's A/B terms (rubrics.py).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

SIDES = ("a", "b")
GOLD_IDENTICAL, GOLD_BROKEN = "identical", "broken"
MAX_ID = 2**63 - 1
"""The largest id either store's integer key holds (SQLite's INTEGER, Postgres's BIGINT): a larger one
names no row, and SQLite cannot even be asked about it."""


@dataclass(slots=True)
class PromptRow:
    """A prompt as the board knows it (written by `preference generate`): what the rating pages and
    the gates read without the prompt set on disk."""

    prompt_set: str
    prompt_id: str
    set_pin: str  # sha256 of the set's prompts.jsonl
    audio_sha256: str
    text: str
    category: str
    difficulty: str
    condition: str
    tags: str  # JSON list
    synthesized: bool


@dataclass(slots=True)
class OutputRow:
    """One configuration's reply to one prompt: its final audio (a WAV under [preference]
    outputs_dir, `audio_path` relative to it) and side streams, or a failure with its reason."""

    output_id: int | None
    prompt_set: str
    prompt_id: str
    config_id: str  # model|thinking|voice (voxwatch/providers/preference_configs.py)
    model_id: str
    thinking: str
    voice: str
    status: str  # "ok", or a failure status (timeout, error, ...)
    reason: str
    created_at: float
    audio_path: str | None = None
    audio_sha256: str | None = None
    duration_s: float | None = None
    transcript: str = ""  # the model's words for its reply (its own transcript)
    caller_transcript: str | None = None  # what the API heard the prompt say, where it reports it
    side: str = "{}"  # JSON: text and tool events and the timings (ms from the prompt's last chunk)
    emulator: bool = False
    attempts: int = 1


@dataclass(slots=True)
class PairRow:
    """Two outputs of one prompt to compare, and which was shown first. A gold pair checks the
    rater: `identical` puts one output on both sides (expected 0); `broken` replaces one side's
    audio with `broken_audio_path` (expected: the other side much better)."""

    pair_id: int | None
    design: str  # the assignment that made it (seed, per prompt, gold share)
    prompt_set: str
    prompt_id: str
    output_a: int
    output_b: int
    config_a: str
    config_b: str
    shown_first: str  # "a" or "b"
    created_at: float
    gold: str = ""  # "", GOLD_IDENTICAL or GOLD_BROKEN
    expected_cmos: int | None = None  # a gold pair's right answer, in A/B terms
    broken_side: str | None = None
    broken_audio_path: str | None = None  # relative to outputs_dir
    broken_audio_sha256: str | None = None


@dataclass(slots=True)
class RaterRow:
    """A rater: the sha256 of their link's token (the token itself is shown once, never stored)."""

    rater_id: int | None
    token_sha256: str
    created_at: float
    label: str = ""


@dataclass(slots=True)
class RatingRow:
    """One answer: a rater's CMOS on one rubric of one pair, when, and which side they heard first."""

    rating_id: int | None
    rater_id: int
    pair_id: int
    rubric: str
    cmos: int  # -3 .. +3, positive: A better
    answered_at: float
    shown_first: str  # "a" or "b", as shown to this rater


def names(cls) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))
