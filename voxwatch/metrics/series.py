"""Every series statistic, defined once (METHOD "Aggregates"): what each leaderboard number is.

A series is one (board, model, dataset, region, method version, protocol, instrument). Its rows
are attempts; each has a status, the utterance it measured (its clip) and the tick it belongs to
(its run). The leaderboard, the Postgres aggregates, SQLite reads, the web pages, the API, the
CLI and the alert summaries all call `series_rows`; the Grafana SQL is tested against it.

Floors: a statistic is n/a (None) below its floor. Means, max and standard deviation need
MIN_N values, and so does p50; a tail percentile q also needs at least TAIL_N values beyond it
(p95: 100, p99: 500), since a p95 of 20 values is their largest but one. Rates need MIN_ATTEMPTS
attempts; pooled WER needs MIN_N scored clips, the entity error rate MIN_N scored clips with tags,
answer accuracy MIN_N replies scored for an answer, the share of clips that stalled MIN_N clips
measured for stalls (their stall totals' percentiles have each percentile's floor), the hallucination
figures MIN_N clips without speech (or empty prompts) scored.
Intervals (95 %) respect how the rows were drawn:
they cluster by utterance and tick (voxwatch/metrics/clustered.py), never treating rows as independent,
and need rows from MIN_CLUSTERS ticks and utterances.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Hashable, Sequence

import numpy as np

from voxwatch.foundation.series_key import SeriesKey
from voxwatch.metrics import support
from voxwatch.metrics.deadline_wer import DEADLINES_MS, errors_field, wer_field
from voxwatch.metrics.clustered import (Design, count_rate_interval, design, proportion_interval, quantile_interval,
                                         rate_interval, ratio_variance, t_interval)
from voxwatch.metrics.specs import for_protocol

WINDOWS = {"24h": 86400, "7d": 7 * 86400, "30d": 30 * 86400}
"""The rolling windows every series is summarized over (30 d is the headline)."""
MIN_N = 5
"""Fewest values for any statistic of a metric (mean, max, std) and for pooled WER (scored clips)."""
TAIL_N = 5
"""A tail percentile q (above the median) needs n * (1 - q/100) >= TAIL_N values beyond it."""
MIN_ATTEMPTS = 5
"""Fewest attempts for a rate."""
MIN_CLUSTERS = 2
"""Fewest utterances and fewest ticks for any interval: one tick cannot show how ticks vary (nor one
utterance how utterances do), so a series measured at one tick has statistics but no intervals."""

FAILURE_STATUSES = frozenset({"error", "auth_error", "rate_limited", "server_error", "malformed", "disconnected",
                              "timeout", "inaudible"})
RATES: dict[str, frozenset[str]] = {
    "error_rate": FAILURE_STATUSES - {"timeout", "inaudible"},
    "timeout_rate": frozenset({"timeout"}),
    "inaudible_rate": frozenset({"inaudible"}),
}
"""Each rate and the statuses it counts, over attempts. The three are disjoint and together count
every failure: error rate (the provider refused, failed or broke its protocol), timeout rate (no
final or no reply in time) and inaudible rate (a reply with no audible onset)."""
NOT_AN_ATTEMPT = frozenset({"excluded"})
"""A row the harness could not measure at all (no harness for the protocol): not an attempt."""
SUCCEEDED = frozenset({"ok"})
"""Availability counts these over attempts: the attempts in none of RATES (a success rate)."""


def percentile_floor(q: float) -> int:
    """The fewest values at which percentile q is shown: MIN_N up to the median (the middle of 5
    values is a median), and for a tail percentile enough values to put TAIL_N beyond it."""
    if q <= 50:
        return MIN_N
    return max(MIN_N, math.ceil(TAIL_N / (1 - q / 100) - 1e-9)) if q < 100 else MIN_N


@dataclass(frozen=True)
class MetricRow:
    """One metric of one series over one window: the metric's statistics, then the series' own
    figures (attempts, rates, WER), repeated on each of its metric rows."""
    board: str
    model_id: str
    dataset: str
    region: str
    method_version: str
    metric: str
    n: int
    mean: float | None
    p50: float | None
    p95: float | None
    p99: float | None
    max: float | None
    std: float | None
    attempts: int
    error_rate: float | None
    timeout_rate: float | None
    pooled_wer: float | None
    wer_words: int
    p50_ci: tuple[float, float] | None = None
    p95_ci: tuple[float, float] | None = None
    wer_ci: tuple[float, float] | None = None
    note: str | None = None
    instrument: str | None = None  # TTS: the STT that scored intelligibility (never pooled across)
    protocol: str = ""
    inaudible_rate: float | None = None
    wer_clips: int = 0
    clip_wer_p50: float | None = None
    clip_wer_p95: float | None = None
    clip_wer_max: float | None = None
    utterances: int = 0
    ticks: int = 0
    mean_ci: tuple[float, float] | None = None
    error_rate_ci: tuple[float, float] | None = None
    timeout_rate_ci: tuple[float, float] | None = None
    entity_error_rate: float | None = None
    entities: int = 0  # tagged entities in the clips the entity error rate pools
    entity_error_rate_ci: tuple[float, float] | None = None
    quality_mos: float | None = None  # TTS and S2S: the mean speech quality of the ok rows scored (METHOD "Speech quality")
    quality_clips: int = 0
    quality_mos_ci: tuple[float, float] | None = None
    answer_accuracy: float | None = None  # S2S: the share of scored ok replies that said the answer (METHOD "Answer accuracy")
    answer_clips: int = 0  # the ok replies scored for an answer
    answer_accuracy_ci: tuple[float, float] | None = None
    stall_share: float | None = None  # TTS: the share of ok clips that stalled at least once (METHOD "TTS: playback stalls")
    stall_clips: int = 0  # the ok clips measured for stalls
    stall_share_ci: tuple[float, float] | None = None
    stall_ms_p50: float | None = None  # TTS: the percentiles of each ok clip's stall total (ms)
    stall_ms_p95: float | None = None
    # STT streams: pooled WER of the transcript as it stood D ms after the end of speech (METHOD "WER at the
    # deadline"), over the ok rows scored at the deadlines (deadline_clips), with pooled WER's interval
    wer_at_0ms: float | None = None
    wer_at_250ms: float | None = None
    wer_at_500ms: float | None = None
    wer_at_1000ms: float | None = None
    wer_at_0ms_ci: tuple[float, float] | None = None
    wer_at_250ms_ci: tuple[float, float] | None = None
    wer_at_500ms_ci: tuple[float, float] | None = None
    wer_at_1000ms_ci: tuple[float, float] | None = None
    deadline_clips: int = 0
    # streaming STT, models with end-of-turn events (METHOD "STT end of turn"; metrics.end_of_turn): None when not scored
    eot_clips: int = 0  # the ok rows scored for end of turn (0: the model emits no end-of-turn events)
    eot_p50: float | None = None
    eot_p95: float | None = None
    eot_p50_ci: tuple[float, float] | None = None
    eot_p95_ci: tuple[float, float] | None = None
    eot_false_cutoffs: int = 0  # end-of-turn events inside the speech, over the scored rows
    eot_false_cutoff_share: float | None = None
    eot_false_cutoff_share_ci: tuple[float, float] | None = None
    # hallucination on non-speech (METHOD "Hallucination on non-speech"): STT, the share of the scored ok clips
    # without speech with any invented word; TTS, the share of the scored ok empty prompts with audible audio
    hallucination_rate: float | None = None
    hallucination_clips: int = 0  # the ok clips without speech (or empty prompts) scored
    hallucination_rate_ci: tuple[float, float] | None = None
    invented_words: int = 0  # STT: the invented words over the scored clips
    invented_words_per_min: float | None = None  # STT: invented words per minute of the scored clips, pooled
    invented_words_per_min_ci: tuple[float, float] | None = None
    invented_audio_ms: float | None = None  # TTS: the mean audible ms sent per scored empty prompt


def flat(row: MetricRow) -> dict:
    """One column per value: each interval becomes <name>_low and <name>_high (CSV, the Postgres aggregates)."""
    out = {}
    for f in fields(row):
        value = getattr(row, f.name)
        if f.name.endswith("_ci"):
            out[f"{f.name}_low"], out[f"{f.name}_high"] = value if value else (None, None)
        else:
            out[f.name] = value
    return out


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float | None
    p50: float | None
    p95: float | None
    p99: float | None
    max: float | None
    std: float | None


def present(values: Sequence[float | None]) -> np.ndarray:
    """The values that are there (None, a metric a row lacks, left out), as float64."""
    v = np.asarray(values, dtype=np.float64)  # None becomes NaN, in C
    return v[~np.isnan(v)]


def percentile(values: np.ndarray, q: float) -> float | None:
    """Linear interpolation, as Postgres percentile_cont; None below the percentile's floor."""
    return float(np.percentile(values, q, method="linear")) if values.size >= percentile_floor(q) else None


def summarize(values: Sequence[float | None]) -> Summary:
    v = present(values)
    if v.size < MIN_N:
        return Summary(int(v.size), None, None, None, None, None, None)
    return Summary(int(v.size), float(v.mean()), percentile(v, 50), percentile(v, 95), percentile(v, 99),
                   float(v.max()), float(v.std(ddof=1)))


def rate(hits: int, attempts: int) -> float | None:
    """A rate over attempts; None below MIN_ATTEMPTS."""
    return hits / attempts if attempts >= MIN_ATTEMPTS else None


def availability(statuses: Sequence[str]) -> float | None:
    """The share of attempts that succeeded (SUCCEEDED over attempts: 1 minus the three RATES);
    None below MIN_ATTEMPTS attempts. What the dashboards plot per provider and compare per region."""
    attempted = [s for s in statuses if s not in NOT_AN_ATTEMPT]
    return rate(sum(s in SUCCEEDED for s in attempted), len(attempted))


def failure_rate(row: MetricRow) -> float | None:
    """The share of a series' attempts that failed in any way: its three disjoint failure rates (RATES)
    together, 1 minus availability; None below MIN_ATTEMPTS. What a fitted table's 'failed' shows."""
    rates = (row.error_rate, row.timeout_rate, row.inaudible_rate)
    return None if row.error_rate is None else sum(x for x in rates if x is not None)


def pooled_wer(errors: Sequence[int], words: Sequence[int]) -> float | None:
    """sum(S + D + I) / sum(N) over the scored clips (METHOD "WER"); None below MIN_N clips or no words."""
    total = int(np.sum(words)) if len(words) else 0
    return int(np.sum(errors)) / total if len(errors) >= MIN_N and total > 0 else None


def entity_error_rate(missed: Sequence[int], total: Sequence[int]) -> float | None:
    """sum(missed) / sum(tagged) entities over the scored clips with tags (METHOD "Entity accuracy"),
    pooled like WER; None below MIN_N such clips or no entities."""
    entities = int(np.sum(total)) if len(total) else 0
    return int(np.sum(missed)) / entities if len(total) >= MIN_N and entities > 0 else None


def clip_wers(errors: Sequence[int], words: Sequence[int]) -> np.ndarray:
    """Each scored clip's own WER (clips with no reference words have none): for distributions only."""
    e, w = np.asarray(errors, dtype=np.float64), np.asarray(words, dtype=np.float64)
    keep = w > 0
    return e[keep] / w[keep]


@dataclass(frozen=True)
class SeriesData:
    """One series' rows as columns: what every store hands to `series_rows`.

    statuses, utterances and ticks have one entry per row (every attempt). values[metric] has one
    entry per row too (None where the row has no value: not `ok`, or not measured); errors and
    words likewise (None where the row was not scored)."""
    statuses: Sequence[str]
    utterances: Sequence[Hashable]
    ticks: Sequence[Hashable]
    values: dict[str, Sequence[float | None]]
    errors: Sequence[int | None]
    words: Sequence[int | None]
    entities_missed: Sequence[int | None] = ()
    entities_total: Sequence[int | None] = ()  # both empty, or one entry per row (None: untagged or not scored)
    quality: Sequence[float | None] = ()  # empty, or one entry per row (None: not scored)
    answers: Sequence[bool | None] = ()  # empty, or one entry per row: answer_correct (None: not scored)
    stalls: Sequence[float | None] = ()  # empty, or one entry per row: stall_ms (None: not measured)
    errors_at_0ms: Sequence[int | None] = ()  # each empty, or one entry per row: S + D + I at the deadline
    errors_at_250ms: Sequence[int | None] = ()  # (None: not measured)
    errors_at_500ms: Sequence[int | None] = ()
    errors_at_1000ms: Sequence[int | None] = ()
    eot: Sequence[float | None] = ()  # empty, or one entry per row: eot_ms (None: none, or not scored)
    cutoffs: Sequence[int | None] = ()  # empty, or one entry per row: eot_false_cutoffs (None: not scored)
    # empty, or one entry per row (None: not scored): invented_words, invented_audio_ms, and the seconds of a
    # clip without speech the invented words were heard over (audio_duration_s where invented_words is set)
    invented_words: Sequence[int | None] = ()
    invented_audio_ms: Sequence[float | None] = ()
    heard_s: Sequence[float | None] = ()


def rate_hits(statuses: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Which rows are attempts, and for each rate (RATES) which of the attempts it counts."""
    attempted = ~np.isin(statuses, list(NOT_AN_ATTEMPT))
    return attempted, {name: np.isin(statuses[attempted], list(members)) for name, members in RATES.items()}


def scored_clips(statuses: np.ndarray, errors: Sequence[int | None],
                 words: Sequence[int | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which rows count towards pooled WER (ok and scored), and their S + D + I and N."""
    words_or_nan = np.asarray(words, dtype=np.float64)  # None becomes NaN: not scored
    errors_or_nan = np.asarray(errors, dtype=np.float64)
    scored = (statuses == "ok") & ~np.isnan(words_or_nan) & ~np.isnan(errors_or_nan)
    return scored, errors_or_nan[scored].astype(np.int64), words_or_nan[scored].astype(np.int64)


def entity_clips(statuses: np.ndarray, missed: Sequence[int | None],
                 total: Sequence[int | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which rows count towards the entity error rate (ok, scored, at least one tagged entity), and
    their missed and tagged entities."""
    if not len(total):
        none = np.zeros(statuses.size, dtype=bool)
        return none, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    total_or_nan, missed_or_nan = np.asarray(total, dtype=np.float64), np.asarray(missed, dtype=np.float64)
    tagged = (statuses == "ok") & (np.nan_to_num(total_or_nan) > 0) & ~np.isnan(missed_or_nan)
    return tagged, missed_or_nan[tagged].astype(np.int64), total_or_nan[tagged].astype(np.int64)


@dataclass(frozen=True)
class AttemptFigures:
    """A set of rows' own figures, without intervals (a day of a series on a model's history)."""
    attempts: int
    error_rate: float | None
    timeout_rate: float | None
    inaudible_rate: float | None
    pooled_wer: float | None
    wer_clips: int


def attempt_figures(statuses: Sequence[str], errors: Sequence[int | None],
                    words: Sequence[int | None]) -> AttemptFigures:
    """Attempts, the rates and pooled WER of some rows, as series_rows computes them for a window."""
    status = np.asarray(statuses, dtype=object)
    attempted, hits = rate_hits(status)
    _, e, w = scored_clips(status, errors, words)
    return AttemptFigures(attempts=int(attempted.sum()), pooled_wer=pooled_wer(e, w), wer_clips=int(w.size),
                          **{name: rate(int(h.sum()), h.size) for name, h in hits.items()})


def series_rows(key: SeriesKey, data: SeriesData) -> list[MetricRow]:
    """One series' rows, one per summarized metric of its protocol, with every statistic and interval."""
    board, model_id, dataset, region, method, protocol, instrument = key
    statuses = np.asarray(data.statuses, dtype=object)
    ok = statuses == "ok"
    everything = design(utterance=data.utterances, tick=data.ticks)  # labels: a store's ids, or its refs
    attempted, hits = rate_hits(statuses)
    attempts = everything.subset(attempted)
    rates = {name: rate(int(h.sum()), h.size) for name, h in hits.items()}
    scored, errors, words = scored_clips(statuses, data.errors, data.words)
    wer = pooled_wer(errors, words)
    per_clip = clip_wers(errors, words)
    tagged, missed, entities = entity_clips(statuses, data.entities_missed, data.entities_total)
    eer = entity_error_rate(missed, entities)
    series = dict(
        entity_error_rate=eer, entities=int(entities.sum()),
        entity_error_rate_ci=_share_ci(eer, missed, entities, everything.subset(tagged)),
        attempts=int(attempted.sum()), error_rate=rates["error_rate"], timeout_rate=rates["timeout_rate"],
        inaudible_rate=rates["inaudible_rate"], error_rate_ci=rate_ci(hits["error_rate"], attempts),
        timeout_rate_ci=rate_ci(hits["timeout_rate"], attempts),
        pooled_wer=wer, wer_words=int(words.sum()), wer_clips=int(words.size),
        wer_ci=_wer_ci(wer, errors, words, everything.subset(scored)),
        clip_wer_p50=percentile(per_clip, 50), clip_wer_p95=percentile(per_clip, 95),
        clip_wer_max=float(per_clip.max()) if per_clip.size >= MIN_N else None,
        **speech_quality(statuses, data.quality, everything), **answer_accuracy(statuses, data.answers, everything),
        **playback_stalls(statuses, data.stalls, everything), **wer_at_deadlines(statuses, data, everything),
        **eot_figures(statuses, data, everything), **hallucination(statuses, data, everything))

    out = []
    heard_nothing = everything.subset(hallucination_scored(statuses, data)[0])
    for spec in for_protocol(protocol, headline_only=True):
        column = np.asarray(data.values[spec.name], dtype=np.float64)
        has = ok & ~np.isnan(column)
        x, on = column[has], everything.subset(has)
        clusters = on if on.rows or not heard_nothing.rows else heard_nothing  # no clock on non-speech: its clips
        out.append(MetricRow(
            board=board, model_id=model_id, dataset=dataset, region=region, method_version=method, metric=spec.name,
            **asdict(summarize(x)), **series, instrument=instrument or None, protocol=protocol,
            utterances=clusters.sizes[0] if clusters.rows else 0, ticks=clusters.sizes[1] if clusters.rows else 0,
            mean_ci=mean_ci(x, on, support.of_metric(spec.name)),
            p50_ci=quantile_ci(x, 50, on), p95_ci=quantile_ci(x, 95, on)))
    return out


def speech_quality(statuses: np.ndarray, quality: Sequence[float | None], d: Design) -> dict:
    """A series' speech quality (METHOD "Speech quality"): the mean score of its ok rows that have one,
    n/a below MIN_N, with the clustered interval of any mean (1 is the scale's floor)."""
    if not len(quality):
        return {}
    column = np.asarray(quality, dtype=np.float64)  # None becomes NaN: not scored
    scored = (statuses == "ok") & ~np.isnan(column)
    x = column[scored]
    return dict(quality_mos=float(x.mean()) if x.size >= MIN_N else None, quality_clips=int(x.size),
                quality_mos_ci=mean_ci(x, d.subset(scored), support.MOS))


def answer_accuracy(statuses: np.ndarray, answers: Sequence[bool | None], d: Design) -> dict:
    """A series' answer accuracy (METHOD "Answer accuracy (S2S single turn)"): the share of its ok rows
    scored for an answer whose reply said it, n/a below MIN_N scored rows, with a share's interval
    (Clopper-Pearson at the clustered effective size, as a rate's: rate_ci)."""
    if not len(answers):
        return {}
    column = np.asarray(answers, dtype=np.float64)  # None becomes NaN: not scored
    scored = (statuses == "ok") & ~np.isnan(column)
    hits = column[scored]
    share = float(hits.mean()) if hits.size >= MIN_N else None
    return dict(answer_accuracy=share, answer_clips=int(hits.size),
                answer_accuracy_ci=rate_ci(hits, d.subset(scored)) if share is not None else None)


def playback_stalls(statuses: np.ndarray, stalls: Sequence[float | None], d: Design) -> dict:
    """A series' playback stalls (METHOD "TTS: playback stalls"), over its ok rows measured for them: the
    share of clips that stalled at least once (a stall total above 0), n/a below MIN_N clips, with a
    share's interval (rate_ci, as answer accuracy's); and the p50 and p95 of the clips' stall totals
    (ms, zeros included), each under its percentile's floor n/a."""
    if not len(stalls):
        return {}
    column = np.asarray(stalls, dtype=np.float64)  # None becomes NaN: not measured
    measured = (statuses == "ok") & ~np.isnan(column)
    totals = column[measured]
    stalled = (totals > 0).astype(np.float64)
    share = float(stalled.mean()) if totals.size >= MIN_N else None
    return dict(stall_share=share, stall_clips=int(totals.size),
                stall_share_ci=rate_ci(stalled, d.subset(measured)) if share is not None else None,
                stall_ms_p50=percentile(totals, 50), stall_ms_p95=percentile(totals, 95))


def wer_at_deadlines(statuses: np.ndarray, data: SeriesData, d: Design) -> dict:
    """A series' pooled WER at each deadline after the end of speech (METHOD "WER at the deadline"):
    sum(S + D + I at D) / sum(N) over its ok rows scored at the deadlines, n/a below MIN_N such rows,
    with pooled WER's interval (_wer_ci: clusters resampled, never rows)."""
    out: dict = {}
    for deadline in DEADLINES_MS:
        column = getattr(data, errors_field(deadline))
        if not len(column):
            continue
        scored, errors, words = scored_clips(statuses, column, data.words)
        wer = pooled_wer(errors, words)
        name = wer_field(deadline)
        out[name], out[f"{name}_ci"] = wer, _wer_ci(wer, errors, words, d.subset(scored))
        out["deadline_clips"] = max(out.get("deadline_clips", 0), int(words.size))
    return out


def eot_figures(statuses: np.ndarray, data: SeriesData, d: Design) -> dict:
    """A series' end-of-turn figures (METHOD "STT end of turn"): eot latency p50 / p95 over the ok rows
    scored for end of turn that have one, and the share of those rows with a false cut-off, each with
    its clustered interval (the floors and intervals of every percentile and rate here)."""
    if not len(data.cutoffs):
        return {}
    counted = np.asarray(data.cutoffs, dtype=np.float64)  # None becomes NaN: not scored
    scored = (statuses == "ok") & ~np.isnan(counted)
    latency = np.asarray(data.eot if len(data.eot) else [None] * statuses.size, dtype=np.float64)
    timed = scored & ~np.isnan(latency)
    x, on = latency[timed], d.subset(timed)
    hits = (counted[scored] > 0).astype(np.float64)
    share = float(hits.mean()) if hits.size >= MIN_ATTEMPTS else None
    return dict(eot_clips=int(scored.sum()), eot_p50=percentile(x, 50), eot_p95=percentile(x, 95),
                eot_p50_ci=quantile_ci(x, 50, on), eot_p95_ci=quantile_ci(x, 95, on),
                eot_false_cutoffs=int(counted[scored].sum()), eot_false_cutoff_share=share,
                eot_false_cutoff_share_ci=rate_ci(hits, d.subset(scored)) if share is not None else None)


def hallucination(statuses: np.ndarray, data: SeriesData, d: Design) -> dict:
    """A series' hallucination figures (METHOD "Hallucination on non-speech"), over its ok rows scored
    (hallucination_scored): the share with any invented word (STT) or any audible audio (TTS), a share's
    interval as a rate's (rate_ci); STT's invented words per minute of the clips heard, pooled (sum of
    words over sum of minutes), with a count rate's interval as pooled WER's (the words over the
    minutes); TTS's mean audible ms per empty prompt. n/a below MIN_N scored rows."""
    scored, ms = hallucination_scored(statuses, data)
    if not scored.any():
        return {}
    on = d.subset(scored)
    x = (ms if ms is not None else np.asarray(data.invented_words, dtype=np.float64))[scored]
    share = float((x > 0).mean()) if x.size >= MIN_N else None
    figures = dict(hallucination_rate=share, hallucination_clips=int(x.size),
                   hallucination_rate_ci=rate_ci(x > 0, on) if share is not None else None)
    if ms is not None:
        return dict(figures, invented_audio_ms=float(x.mean()) if share is not None else None)
    minutes = np.asarray(data.heard_s, dtype=np.float64)[scored] / 60
    per_min = float(x.sum() / minutes.sum()) if share is not None else None
    return dict(figures, invented_words=int(x.sum()), invented_words_per_min=per_min,
                invented_words_per_min_ci=_count_ci(per_min, x, minutes, on))


def hallucination_scored(statuses: np.ndarray, data: SeriesData) -> tuple[np.ndarray, np.ndarray | None]:
    """Which rows count towards the hallucination figures: the ok rows with invented words and the
    seconds heard (STT), else the ok rows with audible ms (TTS), and the audible ms column (None for STT)."""
    ok = statuses == "ok"
    if len(data.invented_words) and len(data.heard_s):
        words = np.asarray(data.invented_words, dtype=np.float64)  # None becomes NaN: not scored
        seconds = np.asarray(data.heard_s, dtype=np.float64)
        scored = ok & ~np.isnan(words) & (np.nan_to_num(seconds) > 0)
        if scored.any():
            return scored, None
    if len(data.invented_audio_ms):
        ms = np.asarray(data.invented_audio_ms, dtype=np.float64)
        return ok & ~np.isnan(ms), ms
    return np.zeros(statuses.size, dtype=bool), None


def _clustered_enough(d: Design) -> bool:
    return d.rows > 0 and min(d.sizes) >= MIN_CLUSTERS


def _wer_ci(wer: float | None, errors: np.ndarray, words: np.ndarray, d: Design) -> tuple[float, float] | None:
    """Pooled WER's interval: errors per reference word as a count's rate (clustered.count_rate_interval),
    so it never crosses 0, has no upper limit (insertions can take WER past 1), and 0 errors get the
    exact upper bound of none in the words."""
    return _count_ci(wer, errors, words, d)


def _count_ci(rate: float | None, counts: np.ndarray, units: np.ndarray, d: Design) -> tuple[float, float] | None:
    """A pooled count rate's interval (counts per unit: errors per reference word, invented words per
    minute): clustered.count_rate_interval over the units, None without the rate or enough clusters."""
    if rate is None or not _clustered_enough(d):
        return None
    v = ratio_variance(d, counts, units)
    return count_rate_interval(rate, v, float(np.sum(units))) if v is not None else None


def _share_ci(share: float | None, hits: np.ndarray, counted: np.ndarray, d: Design) -> tuple[float, float] | None:
    """A pooled share's interval (the entity error rate: missed over tagged entities): Clopper-Pearson's
    interval at the clustered effective size, so it stays within [0, 1]."""
    if share is None or not _clustered_enough(d):
        return None
    v = ratio_variance(d, hits, counted)
    return proportion_interval(share, v, float(np.sum(counted))) if v is not None else None


def mean_ci(x: np.ndarray, d: Design, within: support.Support) -> tuple[float, float] | None:
    """The mean's interval, truncated at the support of its values (support.of_values: 0 for a clock
    that cannot be negative, a signed clock's smallest value where it measured one below 0)."""
    if x.size < MIN_N or not _clustered_enough(d):
        return None
    v = ratio_variance(d, x, np.ones(x.size))
    return support.clip(t_interval(float(x.mean()), v), support.of_values(within, x)) if v is not None else None


def quantile_ci(x: np.ndarray, q: float, d: Design) -> tuple[float, float] | None:
    """A percentile's interval as a series shows it: None under the percentile's floor or with too few clusters."""
    return quantile_interval(x, q, d) if x.size >= percentile_floor(q) and _clustered_enough(d) else None


def rate_ci(hits: np.ndarray, d: Design) -> tuple[float, float] | None:
    """A rate's interval as a series shows it: None under MIN_ATTEMPTS or with too few clusters."""
    return rate_interval(hits, d) if hits.size >= MIN_ATTEMPTS and _clustered_enough(d) else None
