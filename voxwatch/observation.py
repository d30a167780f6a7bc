"""The observation row: one per (run, model, dataset, clip, attempt), failures included.

Every stored field is declared here once; the stores build their tables from this dataclass, and
`voxwatch export` writes exactly these fields.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

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
    dataset_manifest_sha256: str | None = None
    seed: int | None = None
    emulator: bool = False
    # clocks (ms unless named otherwise); None when not measured or not applicable
    connect_ms: float | None = None
    ttfs_ms: float | None = None
    first_partial_ms: float | None = None
    first_partial_from_t0_ms: float | None = None
    latency_ms: float | None = None
    rtf: float | None = None
    ttfa_ms: float | None = None
    ttfb_ms: float | None = None
    leading_silence_ms: float | None = None
    synthesis_ms: float | None = None
    v2v_ms: float | None = None
    audio_duration_s: float | None = None
    pacing_error_ms: float | None = None
    http_version: str | None = None
    connection_reused: bool | None = None
    # WER parts (per clip); pooled WER is sum(S + D + I) / sum(ref_words)
    reference: str | None = None
    hypothesis: str | None = None
    substitutions: int | None = None
    deletions: int | None = None
    insertions: int | None = None
    ref_words: int | None = None
    instrument_id: str | None = None
    instrument_error: str | None = None
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


RUN_FIELDS = tuple(f.name for f in fields(RunRecord))
