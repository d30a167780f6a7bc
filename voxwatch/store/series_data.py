"""Stored rows grouped into leaderboard series, as the columns metrics.series and metrics.paired read.

One grouping for every path that computes from whole observations (the SQLite board, a span of
the user's, the comparisons of either store), so they all cut the same series from the same rows.
Rows measured against an emulator are never in a series.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Iterable, Mapping

from voxwatch.foundation.observation import Observation
from voxwatch.foundation.series_key import SeriesKey
from voxwatch.metrics.deadline_wer import ERRORS_FIELDS
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


def group_windows(rows: Iterable[Observation], since: Mapping[str, float]) -> dict[str, dict[SeriesKey, SeriesData]]:
    """What `group` makes of the rows started at or after since[window], for each window, from one pass
    over rows in time order (started_at ascending) that keeps each row's cells rather than the row: a
    stored row is ~4 KB as an Observation and ~0.3 KB as its cells, and a ranking's 30 days at 40 models
    are 576,000 rows. Each window's rows of a series are then the newest of its 30 days'."""
    cells: dict[SeriesKey, tuple[list[float], list[tuple]]] = {}
    names: dict[str, list[str]] = {}
    same: dict[str, str] = {}  # one str per distinct clip or run id, however many rows repeat it
    last = float("-inf")
    for r in rows:
        if r.started_at < last:
            raise ValueError("group_windows needs the rows in time order (started_at ascending)")
        last = r.started_at
        if r.emulator:
            continue
        key = series_key(r)
        metrics = names.get(key.protocol)
        if metrics is None:
            metrics = names[key.protocol] = [spec.name for spec in for_protocol(key.protocol, headline_only=True)]
        times, kept = cells.setdefault(key, ([], []))
        times.append(r.started_at)
        kept.append(_cells(r, metrics, same.setdefault(r.clip_id, r.clip_id), same.setdefault(r.run_id, r.run_id)))
    return {window: {key: _series(names[key.protocol], kept[bisect_left(times, start):])
                     for key, (times, kept) in sorted(cells.items()) if times[-1] >= start}
            for window, start in since.items()}


def _cells(r: Observation, metrics: list[str], utterance: str, tick: str) -> tuple:
    """One row as its series' columns read it (SeriesData's fields, in order; values in `metrics` order)."""
    ok = r.status == "ok"
    scored = ok and r.ref_words is not None
    return (r.status, utterance, tick, tuple(getattr(r, m) if ok else None for m in metrics),
            r.substitutions + r.deletions + r.insertions if scored else None, r.ref_words if scored else None,
            r.entities_missed if ok else None, r.entities_total if ok else None, r.quality_mos if ok else None,
            r.answer_correct if ok else None, r.stall_ms if ok else None,
            tuple(getattr(r, name) if scored else None for name in ERRORS_FIELDS),
            r.eot_ms if ok else None, r.eot_false_cutoffs if ok else None,
            r.invented_words if ok else None, r.invented_audio_ms if ok else None,
            r.audio_duration_s if ok and r.invented_words is not None else None)


def _series(metrics: list[str], rows: list[tuple]) -> SeriesData:
    """Rows' cells (`_cells`) as a series' columns."""
    (statuses, utterances, ticks, values, errors, words, missed, total, quality, answers, stalls, at_deadlines, eot,
     cutoffs, invented, invented_ms, heard) = (list(c) for c in zip(*rows))
    return SeriesData(statuses=statuses, utterances=utterances, ticks=ticks,
                      values={m: [v[i] for v in values] for i, m in enumerate(metrics)}, errors=errors, words=words,
                      entities_missed=missed, entities_total=total, quality=quality, answers=answers,
                      stalls=stalls, **{name: [e[i] for e in at_deadlines] for i, name in enumerate(ERRORS_FIELDS)},
                      eot=eot, cutoffs=cutoffs, invented_words=invented, invented_audio_ms=invented_ms, heard_s=heard)


def _columns(key: SeriesKey, members: list[Observation]) -> SeriesData:
    metrics = [spec.name for spec in for_protocol(key.protocol, headline_only=True)]
    return _series(metrics, [_cells(r, metrics, r.clip_id, r.run_id) for r in members])
