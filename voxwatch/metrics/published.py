"""The precision voxwatch publishes its numbers at in JSON (the API, the CLI's --format json), and its
times: defined here once, documented in docs/WEB.md (API) and docs/COMMANDS.md.

Latencies to 0.1 ms, real-time factors to 0.001 x, fractions (rates, WER, their intervals) to 4
places (0.01 percentage point), p-values to 3 significant digits (a tiny one stays non-zero); times
as ISO 8601 UTC strings to the millisecond. The measurement's own precision is finer than any of
these, and stays in the CSV downloads and `voxwatch export`.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Mapping

PLACES = {"ms": 1, "x": 3, "fraction": 4}
"""Decimal places by unit (also the text tables' for ms and x)."""
P_DIGITS = 3
"""Significant digits of a p-value."""

IN_UNIT = ("mean", "p50", "p95", "p99", "max", "std", "p50_ci", "p95_ci", "mean_ci")
"""A leaderboard row's statistics in its metric's unit; its other floats are fractions (but IN_MS's)."""
IN_MS = ("stall_ms_p50", "stall_ms_p95", "eot_p50", "eot_p95", "eot_p50_ci", "eot_p95_ci")
"""A leaderboard row's series figures in ms whatever its metric: a TTS series' stall totals, an STT series'
end-of-turn latencies (METHOD "STT end of turn")."""


def signed(v: float, places: int) -> str:
    """A difference as text at `places` decimals, with its sign, but none where it rounds to 0 (never
    '-0.00' or '+0'): what every reader prints a difference as."""
    text = f"{v:+.{places}f}"
    return text[1:] if float(text) == 0 else text


def rounded(value, unit: str):
    """A number (or an interval's pair) at its unit's published precision; None stays None."""
    if value is None:
        return None
    if isinstance(value, (tuple, list)):
        return [rounded(v, unit) for v in value]
    return round(value, PLACES.get(unit, PLACES["fraction"]))


def p_value(p: float | None) -> float | None:
    return None if p is None else float(f"{p:.{P_DIGITS}g}")


def metric_record(record: Mapping, unit: str) -> dict:
    """A leaderboard row's record (asdict of a MetricRow and more) with every float published:
    its statistics in `unit`, its rates and WER figures as fractions."""
    out = dict(record)
    for name, value in record.items():
        if isinstance(value, float) or (isinstance(value, (tuple, list)) and value
                                        and all(isinstance(v, float) for v in value)):
            out[name] = rounded(value, "ms" if name in IN_MS else unit if name in IN_UNIT else "fraction")
    return out


def comparison_record(record: Mapping) -> dict:
    """A paired comparison's record (boards.comparisons.records) with its figures in its unit and its
    p-values to P_DIGITS significant digits."""
    unit = record["unit"]
    return {**record, **{k: rounded(record[k], unit) for k in ("a", "b", "estimate", "ci_low", "ci_high")},
            **{k: p_value(record[k]) for k in ("p_value", "p_holm")}}


POINTS_PLACES = 2
"""A difference of two fractions in percentage points, to 0.01 point (a fraction's 4 places)."""
SECONDS_PLACES = 4
"""A duration in seconds (a conversation's silence gap), to 0.1 ms as a latency in ms is."""
_DEGRADATION_UNITS = {"clean_wer": "fraction", "degraded_wer": "fraction", "wer_diff_points": "points",
                      "wer_diff_ci": "points", "clean_latency_p50": "ms", "degraded_latency_p50": "ms",
                      "latency_diff_ms": "ms"}


def _at(value, places: int):
    if value is None:
        return None
    if isinstance(value, (tuple, list)):
        return [_at(v, places) for v in value]
    return round(value, places)


def degradation_record(record: Mapping) -> dict:
    """A clean-against-degraded line (metrics.degradation's fields and more): WERs as fractions,
    their difference and its interval in points, latencies in ms."""
    return {**record, **{k: _at(record[k], POINTS_PLACES) if unit == "points" else rounded(record[k], unit)
                         for k, unit in _DEGRADATION_UNITS.items() if k in record}}


def rate_record(record: Mapping) -> dict:
    """A conversation rate ({rate, passed, n, interval}) with its share and interval as fractions."""
    return {**record, "rate": rounded(record["rate"], "fraction"), "interval": rounded(record["interval"], "fraction")}


def scorecard_record(record: Mapping) -> dict:
    """A conversation block's statistics (metrics.conversation_aggregate.Scorecard as a dict): its
    rates as fractions, pass^k as fractions, V2V in ms, the silence gap in seconds to 0.1 ms, speech
    quality (MOS) to 4 places as a series' is."""
    rates = ("adherence", "end_state", "interruption", "no_response")
    quality = record["speech_quality"]
    return {**record, **{k: rate_record(record[k]) for k in rates},
            "speech_quality": {**quality, "mos": rounded(quality["mos"], "fraction"),
                               "interval": rounded(quality["interval"], "fraction")},
            **({"transcription": {**record["transcription"], "wer": rounded(record["transcription"]["wer"], "fraction")}}
               if "transcription" in record else {}),
            "dimensions": {d: rate_record(r) for d, r in record["dimensions"].items()},
            "pass_hat_k": {k: rounded(v, "fraction") for k, v in record["pass_hat_k"].items()},
            "v2v": metric_record(record["v2v"], "ms"),
            "silence_gap_s": rounded_seconds(record["silence_gap_s"])}


def rounded_seconds(value: float | None) -> float | None:
    """A duration in seconds at SECONDS_PLACES."""
    return _at(value, SECONDS_PLACES)


def when(t: float | None, timespec: str = "milliseconds") -> str | None:
    """Unix seconds as an ISO 8601 UTC time, to the millisecond ('2026-12-05T06:00:00.000Z') or as
    `timespec` says ('seconds': a listing's column)."""
    if t is None:
        return None
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec=timespec).replace("+00:00", "Z")
