"""One table of metric specs: what each stored number is, its unit, and which protocols have it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricSpec:
    name: str  # the observation column
    unit: str
    protocols: tuple[str, ...]
    lower_is_better: bool
    description: str
    headline: bool = False  # shown on the printed leaderboard
    signed: bool = False  # can be negative (a final before the end of speech); else an interval stops at 0
    alerted: bool = True  # watched by the alerts (not a restatement of another metric: one regression, one alert)
    label: str = ""  # what a reader calls it (a column head, a chart's axis); the column name where empty

    @property
    def title(self) -> str:
        return self.label or self.name


METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("ttfs_ms", "ms", ("stt-stream",), True, "final transcript after the end of speech (shared VAD)", True,
               signed=True, label="TTFS"),
    MetricSpec("first_partial_ms", "ms", ("stt-stream",), True, "first transcript-bearing message after speech start", True,
               signed=True, label="first partial"),
    MetricSpec("ttfs_peer_ms", "ms", ("stt-stream",), True,
               "final transcript after the end of speech by the peers' anchor (Silero VAD, 100 ms pad)", True, signed=True,
               alerted=False, label="TTFS, peers' anchor"),
    MetricSpec("first_partial_from_t0_ms", "ms", ("stt-stream",), True, "first transcript-bearing message after the first chunk", label="first partial from start"),
    MetricSpec("latency_ms", "ms", ("stt-batch",), True, "batch request to response", True, label="latency"),
    MetricSpec("rtf", "x", ("stt-batch",), True, "batch latency over audio duration", True, label="real-time factor"),
    MetricSpec("ttfa_ms", "ms", ("tts-stream",), True, "first audible sample heard, with the playout model", True, label="TTFA"),
    MetricSpec("ttfb_ms", "ms", ("tts-stream",), True, "first non-empty audio chunk", True, label="TTFB"),
    MetricSpec("leading_silence_ms", "ms", ("tts-stream",), True, "audio before the audible onset", True, label="leading silence"),
    MetricSpec("synthesis_ms", "ms", ("tts-stream",), True, "request to last audio chunk", label="synthesis"),
    MetricSpec("v2v_ms", "ms", ("s2s",), True, "model's first audible onset after the caller's last word", True, label="V2V"),
    MetricSpec("connect_ms", "ms", ("stt-stream", "stt-batch", "tts-stream", "s2s"), True, "connection and session set-up, outside every other clock", True, label="connect"),
)


def for_protocol(protocol: str, headline_only: bool = False) -> list[MetricSpec]:
    return [m for m in METRICS if protocol in m.protocols and (m.headline or not headline_only)]
