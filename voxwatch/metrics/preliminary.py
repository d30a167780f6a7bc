"""When a series or a conversation block is preliminary, and why, in plain words (METHOD "Preliminary").

Its statistics are published from MIN_N values and its intervals from MIN_CLUSTERS ticks and
utterances (voxwatch/metrics/series.py), but an interval over so few clusters rests on one to four
degrees of freedom: Student's t is 12.7 at one, 2.8 at four, and a 0 % error rate over two ticks
reads [0 %, 94 %]. Such figures are real but early, and a reader who is not told so reads them as
a bug. A series is preliminary under SETTLED_CLUSTERS ticks or utterances (or under MIN_N values);
a conversation block under SETTLED_CLUSTERS conversations (its intervals cluster by conversation).
Every reader (pages, API, CLI) shows these reasons as they are made here.
"""

from __future__ import annotations

from voxwatch.metrics.series import MIN_N, MetricRow

SETTLED_CLUSTERS = 5
"""Fewest ticks and utterances (conversations, on the conversation board) for figures that are not
preliminary: with 5 clusters an interval has 4 degrees of freedom (t 2.8), not 1 (t 12.7)."""


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def series_reason(n: int, utterances: int, ticks: int) -> str | None:
    """Why a series' figures are preliminary; None when they are not."""
    if n < MIN_N:
        return f"only {_count(n, 'value', 'values')} so far (figures need {MIN_N})"
    if ticks < SETTLED_CLUSTERS:
        return (f"measured at only {_count(ticks, 'tick', 'ticks')} so far: its intervals stay wide "
                f"until {SETTLED_CLUSTERS} ticks")
    if utterances < SETTLED_CLUSTERS:
        return (f"only {_count(utterances, 'utterance', 'utterances')} measured so far: its intervals stay "
                f"wide until {SETTLED_CLUSTERS}")
    return None


def row_reason(row: MetricRow) -> str | None:
    """A leaderboard row's preliminary reason (None for a metric the registry excludes: it has none to show)."""
    if row.note:
        return None
    if row.hallucination_clips and not row.n:  # a series heard on non-speech alone: its figures are its clips'
        return series_reason(row.hallucination_clips, row.utterances, row.ticks)
    return series_reason(row.n, row.utterances, row.ticks)


def scorecard_reason(conversations: int) -> str | None:
    """Why a conversation block's figures are preliminary; None when they are not."""
    if conversations < SETTLED_CLUSTERS:
        return (f"only {_count(conversations, 'conversation', 'conversations')} so far: its intervals stay wide "
                f"until {SETTLED_CLUSTERS}")
    return None


def fields(reason: str | None) -> dict:
    """The API's two fields for a reason: `preliminary` (a boolean) and `preliminary_reason`."""
    return {"preliminary": reason is not None, "preliminary_reason": reason}
