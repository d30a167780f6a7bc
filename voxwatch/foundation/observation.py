"""The observation row: one per (run, model, dataset, clip, attempt), failures included.

Every stored field is declared here once; the stores build their tables from this dataclass, and
`voxwatch export` writes exactly these fields.
"""

from __future__ import annotations

import math
from dataclasses import MISSING, dataclass, fields
from typing import Any

from voxwatch.foundation.text import safe_text

STATUSES = ("ok", "error", "auth_error", "rate_limited", "server_error", "malformed", "disconnected", "timeout",
            "inaudible", "excluded")
FAILED = frozenset(STATUSES) - {"ok", "excluded"}  # each counted in one rate: metrics.series.RATES


@dataclass(slots=True)
class Observation:
    # identity (the idempotency key is run_id, model_id, dataset, clip_id, attempt)
    run_id: str
    model_id: str
    dataset: str
    clip_id: str
    attempt: int
    # what was measured, where and when
    board: str
    vendor: str
    protocol: str
    region: str
    started_at: float  # unix seconds (UTC) at the start of the attempt
    status: str
    reason: str | None = None
    retry_after_s: float | None = None  # rate_limited: how long the server asked us to wait
    condition: str | None = None
    family: str | None = None
    utterance_id: str | None = None
    voice: str | None = None
    language: str | None = None  # the dataset's language (BCP 47)
    speaker: str | None = None  # the clip's speaker (Clip.voice), per-clip metadata boards filter on
    accent: str | None = None  # the clip's speaker's accent (Clip.accent)
    dataset_manifest_sha256: str | None = None
    seed: int | None = None
    emulator: bool = False
    # clocks (ms unless named otherwise); None when not measured or not applicable
    connect_ms: float | None = None
    ttfs_ms: float | None = None
    ttfs_peer_ms: float | None = None  # TTFS on the peers' end-of-speech anchor (METHOD "The peers' anchor")
    first_partial_ms: float | None = None
    first_partial_from_t0_ms: float | None = None
    # the STT's own end of turn (METHOD "STT end of turn"; streaming models whose protocol has one, else None):
    # its first end-of-turn event after the end of speech's write (ms), and its end-of-turn events inside the speech
    eot_ms: float | None = None
    eot_false_cutoffs: int | None = None
    latency_ms: float | None = None
    rtf: float | None = None
    ttfa_ms: float | None = None
    ttfb_ms: float | None = None
    leading_silence_ms: float | None = None
    synthesis_ms: float | None = None
    v2v_ms: float | None = None
    audio_duration_s: float | None = None
    pacing_error_ms: float | None = None
    # TTS playback stalls (METHOD "TTS: playback stalls"): the waits of at least 1 ms for late audio after
    # the audible onset under TTFA's playout model, and their total (ms); None when not measured
    stall_count: int | None = None
    stall_ms: float | None = None
    # TTS fed streamed text (METHOD "TTS: streamed text and cancel"; the streamed-text dataset's rows only):
    # TTFA from the first and from the last text piece's write (ms), and the cancel latency once audible:
    # cancel_ms from the cancel's write to the last audio after it, or to the vendor's acknowledgement when
    # no audio followed (cancel_end "audio" / "ack"; "none": neither came, cancel_ms null)
    ttfa_first_text_ms: float | None = None
    ttfa_last_text_ms: float | None = None
    cancel_ms: float | None = None
    cancel_end: str | None = None
    # the clock witness (METHOD "Clock witness"): the longest time the worker could not observe around the
    # stamps the row's latencies read (ms; None: not watched), and which clock took its arrival stamps
    # ("kernel": the socket's receive time; "user": the worker's read)
    clock_uncertainty_ms: float | None = None
    arrival_stamp: str | None = None
    http_version: str | None = None
    connection_reused: bool | None = None
    # WER parts (per clip); pooled WER is sum(S + D + I) / sum(ref_words)
    reference: str | None = None
    hypothesis: str | None = None
    substitutions: int | None = None
    deletions: int | None = None
    insertions: int | None = None
    ref_words: int | None = None
    # WER at the agent's deadline (METHOD "WER at the deadline"): S + D + I of the streaming transcript as it
    # stood 0 / 250 / 500 / 1000 ms after the end of speech, against the same reference (ref_words); None when
    # not measured (batch STT, TTS, S2S, a failed row)
    errors_at_0ms: int | None = None
    errors_at_250ms: int | None = None
    errors_at_500ms: int | None = None
    errors_at_1000ms: int | None = None
    # entity accuracy (per clip, METHOD "Entity accuracy"): the clip's tagged entities and those missed;
    # None when the clip has no tags or was not scored
    entities_total: int | None = None
    entities_missed: int | None = None
    instrument_id: str | None = None
    instrument_error: str | None = None
    # speech quality (METHOD "Speech quality"): the synthesized audio's (TTS) or the reply's (S2S)
    # DNSMOS P.835 OVRL, and the instrument that scored it (model and weights' digest); None when not scored
    quality_mos: float | None = None
    quality_instrument: str | None = None
    # answer accuracy (METHOD "Answer accuracy (S2S single turn)"): whether the instrument's transcript of an
    # S2S reply (hypothesis; instrument_id) says the spoken question's answer; None when not scored (no
    # answers for the clip, a failed row, or instrument_error says why)
    answer_correct: bool | None = None
    # hallucination on non-speech (METHOD "Hallucination on non-speech"): on an STT clip without speech, the
    # words its transcript (hypothesis) holds after the WER normalizer, over the clip's seconds heard
    # (audio_duration_s); on a TTS empty prompt, the ms of audible audio sent (0: none, or a clean refusal).
    # None on every other row, and on a failed one
    invented_words: int | None = None
    invented_audio_ms: float | None = None
    # versions
    method_version: str = ""
    runner_version: str = ""
    normalizer: str | None = None
    normalizer_version: str | None = None
    vad: str | None = None
    vad_version: str | None = None
    vad_params: str | None = None  # JSON
    onset_version: str | None = None


FIELDS = tuple(f.name for f in fields(Observation))
KEY = ("run_id", "model_id", "dataset", "clip_id", "attempt")
BOARDS = ("stt", "tts", "s2s", "")  # "": a failure row for a model this worker could not resolve
_TYPES = {f.name: str(f.type).split("|")[0].strip() for f in fields(Observation)}
_OPTIONAL = {f.name for f in fields(Observation) if "None" in str(f.type)}
_REQUIRED = {f.name for f in fields(Observation) if f.default is MISSING}
_TEXT = tuple(name for name, kind in _TYPES.items() if kind == "str")
_INT64 = 2 ** 63
_AT_LEAST = {"attempt": 1, "clock_uncertainty_ms": 0, "substitutions": 0, "deletions": 0, "insertions": 0, "ref_words": 0, "entities_total": 0,
             "entities_missed": 0, "errors_at_0ms": 0, "errors_at_250ms": 0, "errors_at_500ms": 0, "errors_at_1000ms": 0, "retry_after_s": 0, "stall_count": 0, "stall_ms": 0, "ttfa_first_text_ms": 0, "cancel_ms": 0,
             "eot_false_cutoffs": 0, "invented_words": 0, "invented_audio_ms": 0,
             "started_at": 0}
_VOCABULARY = {"status": STATUSES, "board": BOARDS, "arrival_stamp": ("kernel", "user"),
               "cancel_end": ("audio", "ack", "none")}


def made_safe(row: Observation) -> Observation:
    """The row with every text field through text.safe_text (a provider's transcript or error message
    may hold a NUL, which Postgres refuses, or a lone surrogate, which no store can encode)."""
    for name in _TEXT:
        value = getattr(row, name)
        if value:
            setattr(row, name, safe_text(value))
    return row


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number(kind: str, value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind == "int" and not isinstance(value, int)):
        raise ValueError(f"expected {'an integer' if kind == 'int' else 'a number'}, got {_shown(value)}")
    if kind == "int":
        if not -_INT64 <= value < _INT64:
            raise ValueError(f"expected a 64-bit integer, got {_shown(value)}")
        return value
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ValueError(f"expected a finite number, got {_shown(value)}")
    return number


def _checked(name: str, value: Any) -> Any:
    """One field's value, or ValueError saying what was expected."""
    if value is None:
        if name in _OPTIONAL:
            return None
        raise ValueError("is required")
    kind = _TYPES[name]
    if kind == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"expected true or false, got {_shown(value)}")
    elif kind == "str":
        if not isinstance(value, str):
            raise ValueError(f"expected a string, got {_shown(value)}")
        if name in KEY and not value.strip():
            raise ValueError("expected a non-empty string")
    else:
        value = _number(kind, value)
    if name in _AT_LEAST and value < _AT_LEAST[name]:
        raise ValueError(f"expected at least {_AT_LEAST[name]}, got {_shown(value)}")
    if name in _VOCABULARY and value not in _VOCABULARY[name]:
        raise ValueError(f"expected one of {', '.join(repr(v) for v in _VOCABULARY[name])}, got {_shown(value)}")
    return value


def from_record(record: Any) -> Observation:
    """An exported or spooled row (a JSON object) as an Observation, every field's type and vocabulary
    checked; ValueError names the first bad field. Text is made safe as when the row was measured."""
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object, got {type(record).__name__}")
    unknown = sorted(set(record) - set(FIELDS))
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(map(repr, unknown))}")
    missing = [name for name in FIELDS if name in _REQUIRED and name not in record]
    if missing:
        raise ValueError(f"missing field(s) {', '.join(missing)}")
    values = {}
    for name in FIELDS:
        if name in record:
            try:
                values[name] = _checked(name, record[name])
            except ValueError as exc:
                raise ValueError(f"{name}: {exc}") from None
    return made_safe(Observation(**values))


@dataclass
class RunRecord:
    run_id: str
    started_at: float
    region: str
    seed: int
    status: str = "running"  # running | succeeded | partial | failed
    finished_at: float | None = None
    rows: int = 0
    failed_rows: int = 0
    note: str | None = None
    planned: int | None = None  # rows the plan asked for, so the store alone knows when the run is complete


RUN_FIELDS = tuple(f.name for f in fields(RunRecord))


def run_status(rows: int, failed_rows: int, complete: bool = True) -> str:
    """How a run ends, by its rows (the one rule every finisher applies): `succeeded` when every
    planned row is there and ok, `failed` when not one row is ok, `partial` otherwise (a failure,
    or rows that never came: an interrupted tick, a run finished at its deadline)."""
    if rows - failed_rows <= 0:
        return "failed"
    return "succeeded" if complete and failed_rows == 0 else "partial"
