"""Stored rows grouped into leaderboard series, as the columns metrics.series and metrics.paired read.

One grouping for every path that computes from whole observations (the SQLite board, a span of
the user's, the comparisons of either store), so they all cut the same series from the same rows.
Rows measured against an emulator are never in a series.
"""

from __future__ import annotations

from typing import Iterable

from voxwatch.foundation.observation import Observation
from voxwatch.foundation.series_key import SeriesKey
from voxwatch.metrics.series import SeriesData
from voxwatch.metrics.specs import for_protocol


def series_key(r: Observation) -> SeriesKey:
    """The series a stored row counts in (only a TTS row's instrument splits its series)."""
    instrument = r.instrument_id if r.board == "tts" else None
    return SeriesKey(r.board, r.model_id, r.dataset, r.region, r.method_version, r.protocol, instrument or "")


def group(rows: Iterable[Observation]) -> dict[SeriesKey, SeriesData]:
    """Each series' rows as columns, in key order (rows keep the order they came in)."""
    groups: dict[SeriesKey, list[Observation]] = {}
    for r in rows:
        if not r.emulator:
            groups.setdefault(series_key(r), []).append(r)
    return {key: _columns(key, members) for key, members in sorted(groups.items())}


def _columns(key: SeriesKey, members: list[Observation]) -> SeriesData:
    ok = [r.status == "ok" for r in members]
    values = {spec.name: [getattr(r, spec.name) if good else None for r, good in zip(members, ok)]
              for spec in for_protocol(key.protocol, headline_only=True)}
    scored = [good and r.ref_words is not None for r, good in zip(members, ok)]
    return SeriesData(
        statuses=[r.status for r in members], utterances=[r.clip_id for r in members],
        ticks=[r.run_id for r in members], values=values,
        errors=[r.substitutions + r.deletions + r.insertions if s else None for r, s in zip(members, scored)],
        words=[r.ref_words if s else None for r, s in zip(members, scored)],
        entities_missed=[r.entities_missed if good else None for r, good in zip(members, ok)],
        entities_total=[r.entities_total if good else None for r, good in zip(members, ok)],
        quality=[r.quality_mos if good else None for r, good in zip(members, ok)],
        answers=[r.answer_correct if good else None for r, good in zip(members, ok)])
