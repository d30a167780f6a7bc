"""The stored form of a conversation: one row per conversation and one per turn, failures included.

Every stored field of a conversation is declared here once; both stores build their tables from
these dataclasses (as from Observation). voxwatch.conversations.records builds them from a held
conversation and reads them back into its score; this module stays light (the stores import it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Sequence

from voxwatch.foundation.scenario import DIMENSIONS
from voxwatch.metrics import METHOD_VERSION

DEFAULT_PERSONA = "default"  # the scenario's own caller voice, no noise (CONVERSATIONS.md "Personas")


@dataclass(slots=True)
class ConversationRow:
    """One conversation: what was run (model, scenario name, version and pin, persona, how many
    turns), where and when, how it went (status and reason, failed turns, rotations and
    reconnections with their reasons as JSON lists), the backend's end state, and the evidence."""

    conversation_id: str
    run_id: str
    model_id: str
    scenario: str  # the scenario's name
    scenario_version: int
    scenario_pin: str  # sha256 of its scenario.json (names the audio too)
    region: str
    started_at: float  # unix seconds (UTC)
    finished_at: float
    status: str  # "ok": every turn ran; "ended": ended early (reason)
    reason: str
    turns: int  # the turns held (the scenario's, or the first N of a trial)
    failed_turns: int
    whole: bool  # every turn of the scenario was held (a trial's end state is not checked)
    rotations: int
    reconnections: int
    rotation_reasons: str  # JSON list
    reconnection_reasons: str  # JSON list
    end_state_ok: bool | None = None  # None: not checked (a trial, or the conversation never ran)
    end_state_reason: str = ""
    recording: str | None = None  # the two-channel call recording, relative to [run] recordings_dir
    persona: str = DEFAULT_PERSONA
    method_version: str = METHOD_VERSION
    emulator: bool = False
    judge: str | None = None  # JSON: the judge's model, prompt sha256, temperature and seed; None: no judge


@dataclass(slots=True)
class TurnRow:
    """One turn of a conversation: its status, the calls made (name, arguments, output, what each
    counted as) and the calls due (their fates), both transcripts, the timing measured from the
    recording, each in-scope dimension's verdict (a column per dimension, null when out of scope or
    undecided; `verdicts` holds each one's reason and rule as JSON), the reply's speech quality."""

    conversation_id: str
    turn_index: int
    turn_id: str
    status: str
    reason: str
    calls: str  # JSON list of {call_id, name, arguments, output, counted_as}
    expected: str  # JSON list of the fates of the calls due: {name, due, status, made_on, reason}
    verdicts: str  # JSON {dimension: {passed, reason, rule}} over the in-scope dimensions
    model_transcript: str = ""
    caller_transcript: str | None = None
    v2v_ms: float | None = None
    gap_s: float | None = None
    interrupted: bool | None = None
    no_response: bool | None = None
    long_silence: bool | None = None
    turn_taking_failed: bool = False
    tool_use_correct: bool | None = None
    instruction_following: bool | None = None
    kb_grounding: bool | None = None
    state_tracking: bool | None = None
    ambiguity_handling: bool | None = None
    turn_taking: bool | None = None
    barge_in_stop_ms: float | None = None  # the caller barged in: its first word to the agent's own stop
    barge_in_answered: bool | None = None  # ... and whether the agent then answered the turn
    pause_ms: float | None = None  # the caller paused mid-turn this long
    premature_response: bool | None = None  # ... and whether the agent started speaking inside the pause
    quality_mos: float | None = None  # the reply's speech quality (DNSMOS P.835 OVRL); None: not scored
    quality_instrument: str | None = None  # the instrument that scored it (set when it was asked to)
    instrument_error: str | None = None  # why the instrument gave no score (never a provider failure)
    clock_uncertainty_ms: float | None = None  # the clock witness of its V2V; over the bound its clocks are null
    barge_in_stop_heard_ms: float | None = None  # the barge-in stop as heard: to the end of the agent's talk on the recording
    transcript_instrument: str | None = None  # the STT that transcribed the reply into model_transcript (None: its own)
    transcript_errors: int | None = None  # that transcription's word errors against the scripted reply ...
    transcript_ref_words: int | None = None  # ... and the scripted reply's words (None: not measurable)
    # the turn's anchors on the call recording, seconds from its start (METHOD "Conversations"): where
    # the caller's words began and ended and the agent's first audible onset after them; None: not measured
    caller_speech_start_s: float | None = None
    caller_speech_end_s: float | None = None
    model_onset_s: float | None = None


ANCHORS = ("caller_speech_start_s", "caller_speech_end_s", "model_onset_s")
"""A turn's anchors on the call recording (seconds from its start), where its clocks were read."""
LATER_FIELDS = ("barge_in_stop_ms", "barge_in_answered", "pause_ms", "premature_response", "quality_mos",
                "quality_instrument", "instrument_error", "clock_uncertainty_ms", "barge_in_stop_heard_ms",
                "transcript_instrument", "transcript_errors", "transcript_ref_words", *ANCHORS)
"""Turn fields added after records were first spooled and exported (caller behaviours, method 11;
speech quality, method 12; the clock witness, method 14; barge-in stop as heard, the transcribed
reply and the recording's anchors, method 16)."""

CONVERSATION_FIELDS = tuple(f.name for f in fields(ConversationRow))
TURN_FIELDS = tuple(f.name for f in fields(TurnRow))
CONVERSATION_KEY = ("conversation_id",)
TURN_KEY = ("conversation_id", "turn_index")
assert set(DIMENSIONS) <= set(TURN_FIELDS), "a dimension without its column"
BOOLS = {f.name for cls in (ConversationRow, TurnRow) for f in fields(cls) if str(f.type).startswith("bool")}
"""Boolean columns (SQLite keeps them as integers: read back through `booleans`)."""


def booleans(names: Sequence[str], values: Sequence[Any]) -> dict[str, Any]:
    """A stored row as a dict, its boolean columns as bool (None kept)."""
    return {n: (bool(v) if n in BOOLS and v is not None else v) for n, v in zip(names, values)}


CONVERSATION_RECORD = "conversation"  # a spool or export line's kind for a conversation with its turns
_TYPES = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,)}


def conversation_record(row: ConversationRow, turns: Sequence[TurnRow]) -> dict[str, Any]:
    """A conversation with its turns as one JSON object (a spool line: voxwatch.store.spool)."""
    return {"record": CONVERSATION_RECORD, "conversation": asdict(row), "turns": [asdict(t) for t in turns]}


def _checked(cls: type, record: Any, where: str) -> Any:
    """An instance of a row dataclass from a JSON object, every field present and of its type (but
    for LATER_FIELDS: a record written before they existed has them null)."""
    if not isinstance(record, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(record).__name__}")
    names = [f.name for f in fields(cls)]
    record = {**{n: None for n in LATER_FIELDS if n in names}, **record}
    unknown, missing = sorted(set(record) - set(names)), [n for n in names if n not in record]
    if unknown or missing:
        raise ValueError(f"{where}: " + "; ".join(([f"unknown field(s) {', '.join(map(repr, unknown))}"] if unknown else [])
                                                  + ([f"missing field(s) {', '.join(missing)}"] if missing else [])))
    for f in fields(cls):
        base, _, optional = str(f.type).partition(" | ")
        value = record[f.name]
        ok = (value is None and optional == "None") or (
            isinstance(value, _TYPES[base]) and (base == "bool" or not isinstance(value, bool)))
        if not ok:
            raise ValueError(f"{where}.{f.name}: expected {f.type}, got {type(value).__name__}")
    return cls(**record)


def conversation_of_record(record: dict[str, Any]) -> tuple[ConversationRow, list[TurnRow]]:
    """The rows of a `conversation_record`, each field's type checked; ValueError names the first bad one."""
    if record.get("record") != CONVERSATION_RECORD or set(record) != {"record", "conversation", "turns"}:
        raise ValueError(f"expected {{'record': {CONVERSATION_RECORD!r}, 'conversation': ..., 'turns': [...]}}")
    row = _checked(ConversationRow, record["conversation"], "conversation")
    if not isinstance(record["turns"], list):
        raise ValueError("turns: expected a list")
    turns = [_checked(TurnRow, t, f"turns[{i}]") for i, t in enumerate(record["turns"])]
    if any(t.conversation_id != row.conversation_id for t in turns):
        raise ValueError("turns: a turn of another conversation")
    return row, turns
