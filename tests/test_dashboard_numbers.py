"""Every number a dashboard panel shows equals the Python definition (voxwatch/metrics/series.py) on the same rows.

The store is seeded (tests/support/dashboard_seed.py: a fixed RNG, every status, WER parts, hours past the
p95's floor and hours under every floor), each panel's SQL runs as Grafana would run it (macros
expanded, variables resolved), and each value is compared, to floating tolerance, with what
metrics.series computes from the seeded rows: `series_rows` (through leaderboard.build, the code
the leaderboard and the Postgres aggregates run) per time bucket or over the time range or window,
and `pooled_wer` / `summarize` for the paired WER delta. An n/a is compared too: NULL (or no point
in a time series) exactly where Python gives None. The panels are enumerated from the JSON files,
so a panel without a check here fails the test.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
import psycopg
import pytest

from voxwatch.boards import leaderboard
from voxwatch.store.comparisons import compute
from voxwatch.grafana import panel_interval, panel_units
from voxwatch.conversations.records import score_of
from voxwatch.store.conversation_rows import ConversationRow
from voxwatch.metrics import conversation_aggregate as conv
from voxwatch.foundation.scenario import DIMENSIONS
from voxwatch.metrics.conversation import ConversationScore
from voxwatch.metrics.deadline_wer import DEADLINES_MS, wer_field
from voxwatch.metrics.series import WINDOWS, MetricRow, availability, pooled_wer, summarize
from voxwatch.metrics.hour_of_day import HourCell, by_hour
from voxwatch.metrics.specs import METRICS, for_protocol
from voxwatch.store.series_data import group, series_key
from voxwatch.foundation.observation import Observation
from voxwatch.grafana.panel_sql import panels
from voxwatch.providers.registry import Registry
from voxwatch.store.connection import connect

from support.dashboard_seed import (CLEAN, DAY, EMULATED_ONLY, HOUR, NOW, RANGE, SEEDED_ALERTS, SEEDED_CONVERSATIONS,  # noqa: F401
                            seeded)
from support.grafana_panels import FILES, load, query, range_of, run_panel, variables_of
from support.grafana_query import expand

Series = tuple[str, str, str, str]  # model, dataset, region, method version: how the panels group


@dataclass
class Tally:
    """How many numbers a check compared, and how many of them were n/a on both sides."""
    numbers: int = 0
    na: int = 0

    def same(self, got, expected: float | None, where) -> None:
        if expected is None:
            assert got is None, f"{where}: Python gives n/a, the panel {got!r}"
            self.na += 1
        else:
            assert got is not None and float(got) == pytest.approx(expected, rel=1e-9, abs=1e-12), \
                f"{where}: panel {got!r}, Python {expected!r}"
            self.numbers += 1

    def points(self, got: list[dict], expected: dict[tuple, float | None]) -> None:
        """A time series: a point for each non-None expectation, none where Python gives None."""
        shown = {(r["time"], r["metric"]): r["value"] for r in got}
        assert set(shown) == {k for k, v in expected.items() if v is not None}, set(shown) ^ set(expected)
        for key, value in expected.items():
            self.same(shown.get(key), value, key)


Check = Callable[[psycopg.Connection, list[Observation], Tally], None]
CHECKS: dict[tuple[str, str], tuple[Check, bool]] = {}


def check(uid: str, title: str, na: bool) -> Callable[[Check], Check]:
    """Register the check of one panel; na: the seed puts some of its numbers under a floor."""
    def register(fn: Check) -> Check:
        CHECKS[(uid, title)] = (fn, na)
        return fn
    return register


# ---------------------------------------------------------------- the Python side

def _in_range(rows: list[Observation], since: float = RANGE.start.timestamp()) -> list[Observation]:
    return [r for r in rows if not r.emulator and since <= r.started_at <= RANGE.end.timestamp()]


def _statistics(rows: Iterable[Observation], board: str | None = None) -> dict[Series, dict[str, MetricRow]]:
    """metrics.series' rows of each series (registry exclusions applied), by series and metric."""
    out: dict[Series, dict[str, MetricRow]] = defaultdict(dict)
    for m in leaderboard.build(rows, Registry.default()):
        if board is None or m.board == board:
            out[(m.model_id, m.dataset, m.region, m.method_version)][m.metric] = m
    return out


def _per_bucket(rows: list[Observation], board: str | None = None) -> dict[tuple[float, Series], dict[str, MetricRow]]:
    """Per bucket of `$__interval` as a panel on observations gets it: raised to its min interval."""
    step = range_of({"interval": panel_interval.min_interval()}).interval_ms / 1000
    assert step > RANGE.interval_ms / 1000, "the seeded range should show the min interval at work"
    buckets: dict[float, list[Observation]] = defaultdict(list)
    for r in rows:
        buckets[float(np.floor(r.started_at / step) * step)].append(r)
    return {(t, s): m for t, members in buckets.items() for s, m in _statistics(members, board).items()}


def _label(s: Series) -> str:
    return f"{s[0]} {s[1]} {s[2]} method {s[3]}"


def _any(metrics: dict[str, MetricRow]) -> MetricRow:
    """A series' own figures (attempts, rates, WER) repeat on each of its metric rows."""
    return next(iter(metrics.values()))


# ---------------------------------------------------------------- provider detail

@check("voxwatch-provider", "${metric}: p50 and p95", na=True)
def _percentiles(conn, rows, tally):
    dashboard = load("provider-detail.json")
    variables = variables_of(conn, dashboard)
    buckets = _per_bucket(_in_range(rows))
    for metric in variables.values["metric"]:
        scoped = variables.scoped("metric", metric)
        for ref, q in (("A", "p50"), ("B", "p95")):
            expected = {(t, f"{_label(s)} {metric} {q}"): getattr(m[metric], q) for (t, s), m in buckets.items() if metric in m}
            tally.points(run_panel(conn, dashboard, "${metric}: p50 and p95", scoped, ref), expected)


@check("voxwatch-provider", "Error rate", na=True)
def _error_rate(conn, rows, tally):
    dashboard = load("provider-detail.json")
    got = run_panel(conn, dashboard, "Error rate", variables_of(conn, dashboard))
    buckets = _per_bucket(_in_range(rows))
    tally.points(got, {(t, f"{_label(s)} errors"): _any(m).error_rate for (t, s), m in buckets.items()})


@check("voxwatch-provider", "Timeout and inaudible rates", na=True)
def _timeout_and_inaudible(conn, rows, tally):
    dashboard = load("provider-detail.json")
    got = run_panel(conn, dashboard, "Timeout and inaudible rates", variables_of(conn, dashboard))
    expected = {}
    for (t, s), m in _per_bucket(_in_range(rows)).items():
        expected[(t, f"{_label(s)} timeouts")] = _any(m).timeout_rate
        expected[(t, f"{_label(s)} inaudible")] = _any(m).inaudible_rate
    tally.points(got, expected)


def _provider_table(conn, title: str, *key: str) -> dict[tuple, dict]:
    """A provider-detail table's rows by the columns of `key`."""
    dashboard = load("provider-detail.json")
    return {tuple(r[c] for c in key): r for r in run_panel(conn, dashboard, title, variables_of(conn, dashboard))}


@check("voxwatch-provider", "Attempts per dataset and region", na=False)
def _attempts(conn, rows, tally):
    got = _provider_table(conn, "Attempts per dataset and region", "model", "dataset", "region", "method")
    shown = _in_range(rows)
    expected = _statistics(shown)
    assert set(got) == set(expected)
    for s, metrics in expected.items():
        row, m = got[s], _any(metrics)
        for column in ("attempts", "error_rate", "timeout_rate", "inaudible_rate"):
            tally.same(row[column], getattr(m, column), (s, column))
        members = [r for r in shown if (r.model_id, r.dataset, r.region, r.method_version) == s]
        assert row["failure_kinds"] == (", ".join(sorted({r.status for r in members} - {"ok"})) or None)
        tally.same(row["newest_row"].timestamp(), max(r.started_at for r in members), (s, "newest_row"))


def _groups(rows: list[Observation], key: Callable[[Observation], tuple]) -> dict[tuple, list[str]]:
    out: dict[tuple, list[str]] = defaultdict(list)
    for r in rows:
        out[key(r)].append(r.status)
    return out


@check("voxwatch-provider", "Availability per provider", na=True)
def _availability(conn, rows, tally):
    dashboard = load("provider-detail.json")
    got = run_panel(conn, dashboard, "Availability per provider", variables_of(conn, dashboard))
    step = range_of(next(p for p in panels(dashboard) if p["title"] == "Availability per provider")).interval_ms / 1000
    buckets = _groups(_in_range(rows), lambda r: (float(np.floor(r.started_at / step) * step),
                                                  f"{r.model_id} method {r.method_version}"))
    tally.points(got, {k: availability(statuses) for k, statuses in buckets.items()})
    for (t, s), m in _per_bucket(_in_range(rows)).items():  # 1 minus the three rates, where they are shown
        if _any(m).error_rate is not None:
            members = [r.status for r in _in_range(rows) if (r.model_id, r.dataset, r.region, r.method_version) == s
                       and np.floor(r.started_at / step) * step == t]
            rates = _any(m).error_rate + _any(m).timeout_rate + _any(m).inaudible_rate
            assert availability(members) == pytest.approx(1 - rates), (t, s)


@check("voxwatch-provider", "Regions compared", na=False)
def _regions(conn, rows, tally):
    got = _provider_table(conn, "Regions compared", "model", "dataset", "method", "region")
    shown = _in_range(rows)
    groups = _groups(shown, lambda r: (r.model_id, r.dataset, r.method_version, r.region))
    assert set(got) == set(groups) and len({k[3] for k in groups}) > 1
    statistics = _statistics(shown)
    best: dict[tuple, float] = {}
    for (model, dataset, method, region), statuses in groups.items():
        a = availability(statuses)
        if a is not None:
            best[(model, dataset, method)] = max(best.get((model, dataset, method), a), a)
    for key, statuses in groups.items():
        row, m = got[key], _any(statistics[(key[0], key[1], key[3], key[2])])
        a = availability(statuses)
        tally.same(row["attempts"], m.attempts, (key, "attempts"))
        tally.same(row["availability"], a, (key, "availability"))
        tally.same(row["error_rate"], m.error_rate, (key, "error_rate"))
        tally.same(row["timeout_rate"], m.timeout_rate, (key, "timeout_rate"))
        tally.same(row["vs_best_region"], None if a is None else a - best[key[:3]], (key, "vs_best_region"))
    assert any(r["vs_best_region"] and r["vs_best_region"] < 0 for r in got.values()), "no region compared below another"


@check("voxwatch-provider", "Hour of day (UTC): ${metric} p50 and p95", na=True)
def _hours(conn, rows, tally):
    dashboard = load("provider-detail.json")
    variables = variables_of(conn, dashboard)
    registry = Registry.default()
    got = {(r["model"], r["dataset"], r["method"], r["region"], r["metric"], r["hour"]): r
           for r in run_panel(conn, dashboard, "Hour of day (UTC): ${metric} p50 and p95", variables)}
    shown = [r for r in _in_range(rows) if r.board in variables.values["board"]]
    expected: dict[tuple, HourCell] = {}
    for key, data in group(shown).items():
        started = [r.started_at for r in shown if series_key(r) == key]
        info = registry.models.get(key.model_id)  # a model the registry does not know has no exclusion
        for spec in for_protocol(key.protocol, headline_only=True):
            if spec.unit != "ms" or spec.name not in variables.values["metric"] or (info and info.excluded(spec.name)):
                continue
            for c in by_hour(key, data, started, spec.name):
                at = (key.model_id, key.dataset, key.method_version, key.region, spec.name, c.hour)
                assert at not in expected, f"{at}: two series (instruments) in one row of the panel"
                if c.n:
                    expected[at] = c
    assert set(got) == set(expected), set(got) ^ set(expected)
    for at, c in expected.items():
        assert got[at]["n"] == c.n, at
        tally.same(got[at]["p50"], c.p50, (at, "p50"))
        tally.same(got[at]["p95"], c.p95, (at, "p95"))
    assert any(c.p95 is not None for c in expected.values()), "the seed should put some hour past the p95's floor"


# ---------------------------------------------------------------- TTFA components

@check("voxwatch-ttfa", "TTFB vs leading silence (p50)", na=True)
def _ttfa_buckets(conn, rows, tally):
    dashboard = load("ttfa-components.json")
    got = run_panel(conn, dashboard, "TTFB vs leading silence (p50)", variables_of(conn, dashboard))
    expected = {}
    for (t, s), m in _per_bucket(_in_range(rows), "tts").items():
        expected[(t, f"{_label(s)} TTFB p50")] = m["ttfb_ms"].p50
        expected[(t, f"{_label(s)} leading silence p50")] = m["leading_silence_ms"].p50
    tally.points(got, expected)


@check("voxwatch-ttfa", "Mean TTFA by component", na=True)
def _ttfa_bars(conn, rows, tally):
    dashboard = load("ttfa-components.json")
    got = {r["series"]: r for r in run_panel(conn, dashboard, "Mean TTFA by component", variables_of(conn, dashboard))}
    expected = {_label(s): m for s, m in _statistics(_in_range(rows), "tts").items()}
    assert set(got) == {name for name, m in expected.items() if m["ttfa_ms"].mean is not None}  # no bar: n/a
    for name, m in expected.items():
        ttfa, ttfb, silence = m["ttfa_ms"].mean, m["ttfb_ms"].mean, m["leading_silence_ms"].mean
        bar = got.get(name, {})
        tally.same(bar.get("TTFB"), ttfb, (name, "TTFB"))
        tally.same(bar.get("leading silence"), silence, (name, "leading silence"))
        tally.same(bar.get("late audio"), None if ttfa is None else ttfa - ttfb - silence, (name, "late audio"))


@check("voxwatch-ttfa", "TTFA components per series", na=True)
def _ttfa_table(conn, rows, tally):
    dashboard = load("ttfa-components.json")
    got = {(r["model"], r["dataset"], r["region"], r["method"]): r
           for r in run_panel(conn, dashboard, "TTFA components per series", variables_of(conn, dashboard))}
    expected = _statistics(_in_range(rows), "tts")
    assert set(got) == set(expected)
    for s, m in expected.items():
        row = got[s]
        tally.same(row["n"], m["ttfa_ms"].n, (s, "n"))
        for prefix, metric in (("ttfa", "ttfa_ms"), ("ttfb", "ttfb_ms"), ("silence", "leading_silence_ms")):
            for q in ("p50", "p95"):
                tally.same(row[f"{prefix}_{q}"], getattr(m[metric], q), (s, prefix, q))
        share = (m["leading_silence_ms"].mean / m["ttfa_ms"].mean) if m["ttfa_ms"].mean else None
        tally.same(row["silence_share"], share, (s, "silence_share"))


@check("voxwatch-ttfa", "Playback stalls per series", na=True)
def _stalls_table(conn, rows, tally):
    dashboard = load("ttfa-components.json")
    got = {(r["model"], r["dataset"], r["region"], r["method"]): r
           for r in run_panel(conn, dashboard, "Playback stalls per series", variables_of(conn, dashboard))}
    expected = {s: _any(m) for s, m in _statistics(_in_range(rows), "tts").items() if _any(m).stall_clips}
    assert set(got) == set(expected) and any(m.stall_share for m in expected.values())
    for s, m in expected.items():
        row = got[s]
        tally.same(row["clips"], m.stall_clips, (s, "clips"))
        tally.same(row["stalled_share"], m.stall_share, (s, "stalled_share"))
        tally.same(row["stall_total_p50"], m.stall_ms_p50, (s, "stall_total_p50"))
        tally.same(row["stall_total_p95"], m.stall_ms_p95, (s, "stall_total_p95"))


# ---------------------------------------------------------------- WER per dataset

@check("voxwatch-wer", "Pooled WER over time", na=True)
def _wer_buckets(conn, rows, tally):
    dashboard = load("wer-per-dataset.json")
    got = run_panel(conn, dashboard, "Pooled WER over time", variables_of(conn, dashboard))
    tally.points(got, {(t, _label(s)): _any(m).pooled_wer for (t, s), m in _per_bucket(_in_range(rows), "stt").items()})


@check("voxwatch-wer", "Pooled WER per dataset", na=True)
def _wer_table(conn, rows, tally):
    dashboard = load("wer-per-dataset.json")
    got = {(r["model"], r["dataset"], r["region"], r["method"]): r
           for r in run_panel(conn, dashboard, "Pooled WER per dataset", variables_of(conn, dashboard))}
    expected = {s: _any(m) for s, m in _statistics(_in_range(rows), "stt").items()
                if _any(m).wer_clips}  # a series with no scored clip (the clips without speech) has no row
    assert set(got) == set(expected) and any(s[1] == "stt-nonspeech" for s in _statistics(_in_range(rows), "stt"))
    for s, m in expected.items():
        for column, value in (("clips", m.wer_clips), ("words", m.wer_words), ("pooled_wer", m.pooled_wer),
                              ("clip_wer_p50", m.clip_wer_p50), ("clip_wer_p95", m.clip_wer_p95),
                              ("clip_wer_max", m.clip_wer_max)):
            tally.same(got[s][column], value, (s, column))


@check("voxwatch-wer", "Pooled WER at the deadline", na=True)
def _wer_at_deadline(conn, rows, tally):
    dashboard = load("wer-per-dataset.json")
    got = {(r["model"], r["dataset"], r["region"], r["method"]): r
           for r in run_panel(conn, dashboard, "Pooled WER at the deadline", variables_of(conn, dashboard))}
    expected = {s: _any(m) for s, m in _statistics(_in_range(rows), "stt").items()
                if _any(m).protocol == "stt-stream" and _any(m).deadline_clips > 0}
    assert set(got) == set(expected) and expected
    for s, m in expected.items():
        for column, value in (("clips", m.deadline_clips), ("final_wer", m.pooled_wer),
                              *((wer_field(d), getattr(m, wer_field(d))) for d in DEADLINES_MS)):
            tally.same(got[s][column], value, (s, column))


@check("voxwatch-wer", "Clean vs degraded: paired WER delta", na=True)
def _paired_delta(conn, rows, tally):
    dashboard = load("wer-per-dataset.json")
    got = {(r["model"], r["region"], r["method"], r["degraded_dataset"]): r
           for r in run_panel(conn, dashboard, "Clean vs degraded: paired WER delta", variables_of(conn, dashboard))}
    clips: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])  # an utterance pooled within its dataset first
    condition = {}
    for r in _in_range(rows):
        if r.board == "stt" and r.status == "ok" and r.ref_words is not None:
            c = clips[(r.model_id, r.region, r.method_version, r.utterance_id, r.dataset)]
            c[0] += r.substitutions + r.deletions + r.insertions
            c[1] += r.ref_words
            condition[r.dataset] = r.condition
    pairs: dict[tuple, list[tuple]] = defaultdict(list)
    for (model, region, method, utt, dataset), (e, w) in clips.items():
        clean = clips.get((model, region, method, utt, CLEAN))
        if condition[dataset] != "clean" and clean and clean[1] and w:
            pairs[(model, region, method, dataset)].append((*clean, e, w, e / w - clean[0] / clean[1]))
    assert set(got) == set(pairs)
    for key, members in pairs.items():
        p, row = np.array(members, dtype=float), got[key]
        assert row["pairs"] == len(p) and row["clean_dataset"] == CLEAN
        deltas = summarize(p[:, 4])
        for column, value in (("clean_wer", pooled_wer(p[:, 0], p[:, 1])),
                              ("degraded_wer", pooled_wer(p[:, 2], p[:, 3])),
                              ("mean_delta", deltas.mean), ("median_delta", deltas.p50),
                              ("share_worse", summarize(p[:, 4] > 0).mean),
                              ("share_better", summarize(p[:, 4] < 0).mean)):
            tally.same(row[column], value, (key, column))


# ---------------------------------------------------------------- overview (the aggregates table)

_OVERVIEW = ("n", "mean", "mean_ci", "p50", "p50_ci", "p95", "p95_ci", "p99", "max", "std", "attempts", "utterances",
             "ticks", "error_rate", "error_rate_ci", "timeout_rate", "timeout_rate_ci", "inaudible_rate", "pooled_wer",
             "wer_ci", "wer_words", "wer_clips", "clip_wer_p50", "clip_wer_p95", "clip_wer_max")


def _leaderboard(conn, rows, tally, title: str, unit: str):
    """One leaderboard table: the metrics of one unit (voxwatch/metrics/specs.py), whose statistics it formats so."""
    dashboard = load("overview.json")
    variables = variables_of(conn, dashboard)
    panel = next(p for p in panels(dashboard) if p["title"] == title)
    units = {o["matcher"]["options"]: o["properties"][0]["value"] for o in panel["fieldConfig"]["overrides"]}
    assert all(units[c] == panel_units.GRAFANA_UNITS[unit] for c in panel_units.STATISTICS)
    for window, span in WINDOWS.items():
        members = _in_range(rows, NOW - span)
        methods = defaultdict(set)
        for r in members:
            methods[(r.model_id, r.dataset, r.region)].add(r.method_version)
        expected = leaderboard.build(members, Registry.default())
        for boards in [[b] for b in variables.values["board"]] if panel.get("repeat") else [variables.values["board"]]:
            scoped = variables.scoped("window", window)
            scoped = scoped.scoped("board", boards[0]) if len(boards) == 1 else scoped
            got = run_panel(conn, dashboard, title, scoped)
            mine = [m for m in expected if m.board in boards and UNIT_OF[m.metric] == unit]
            assert [(r["model"], r["dataset"], r["region"], r["method"], r["instrument"], r["metric"]) for r in got] \
                == [(m.model_id, m.dataset, m.region, m.method_version, m.instrument, m.metric) for m in mine]
            for row, m in zip(got, mine):
                for name in _OVERVIEW:
                    value = getattr(m, name)
                    if name.endswith("_ci"):
                        for i, end in enumerate(("low", "high")):
                            tally.same(row[f"{name}_{end}"], value and value[i], (window, m.model_id, m.metric, name))
                    else:
                        tally.same(row[name], value, (window, m.model_id, m.dataset, m.metric, name))
                note = row["note"] or ""
                assert (m.note or "") in note and ("n/a" in note) == (m.note is None and m.p99 is None), (m, note)
                assert ("series changed method" in note) == (len(methods[(m.model_id, m.dataset, m.region)]) > 1)


UNIT_OF = {m.name: m.unit for m in METRICS}


@check("voxwatch-overview", "Leaderboard: ${board} latencies (rolling ${window})", na=True)
def _latencies(conn, rows, tally):
    _leaderboard(conn, rows, tally, "Leaderboard: ${board} latencies (rolling ${window})", "ms")


@check("voxwatch-overview", "Real-time factor (rolling ${window})", na=True)
def _real_time_factor(conn, rows, tally):
    _leaderboard(conn, rows, tally, "Real-time factor (rolling ${window})", "x")
    assert "rtf" in UNIT_OF and UNIT_OF["rtf"] == "x"


@check("voxwatch-overview", "Hallucination on non-speech (rolling ${window})", na=True)
def _hallucination(conn, rows, tally):
    """Each series heard on clips without speech, its hallucination figures metrics.series' (one row a series)."""
    dashboard = load("overview.json")
    variables = variables_of(conn, dashboard)
    title = "Hallucination on non-speech (rolling ${window})"
    for window, span in WINDOWS.items():
        expected = [m for m in leaderboard.build(_in_range(rows, NOW - span), Registry.default())
                    if m.hallucination_clips and m.metric == METRICS_ORDER[m.protocol]]
        got = run_panel(conn, dashboard, title, variables.scoped("window", window))
        assert [(r["board"], r["model"], r["dataset"], r["region"], r["method"]) for r in got] == \
            [(m.board, m.model_id, m.dataset, m.region, m.method_version) for m in expected] and expected, window
        for row, m in zip(got, expected):
            for name in ("hallucination_rate", "hallucination_clips", "invented_words", "invented_words_per_min",
                         "invented_audio_ms"):
                tally.same(row[name], getattr(m, name), (window, m.model_id, name))
            for name in ("hallucination_rate_ci", "invented_words_per_min_ci"):
                for i, end in enumerate(("low", "high")):
                    tally.same(row[f"{name}_{end}"], getattr(m, name) and getattr(m, name)[i], (window, m.model_id, name))


METRICS_ORDER = {p: for_protocol(p, headline_only=True)[0].name for p in ("stt-stream", "stt-batch", "tts-stream")}
"""The first metric of each protocol: the row a series' own figures are read from."""


@check("voxwatch-overview", "Freshness", na=False)
def _freshness(conn, rows, tally):
    dashboard = load("overview.json")
    got = {(r["board"], r["region"], r["method"]): r for r in run_panel(conn, dashboard, "Freshness",
                                                                         variables_of(conn, dashboard))}
    groups: dict[tuple, list[Observation]] = defaultdict(list)
    for r in _in_range(rows, NOW - WINDOWS["30d"]):
        groups[(r.board, r.region, r.method_version)].append(r)
    assert set(got) == set(groups)
    for key, members in groups.items():
        tally.same(got[key]["models"], len({r.model_id for r in members}), (key, "models"))
        tally.same(got[key]["datasets"], len({r.dataset for r in members}), (key, "datasets"))
        tally.same(got[key]["newest_row"].timestamp(), max(r.started_at for r in members), (key, "newest_row"))
        assert got[key]["refreshed"] >= got[key]["newest_row"]


@check("voxwatch-overview", "Paired comparisons (rolling ${window})", na=False)
def _comparisons(conn, rows, tally):
    """The panel's comparisons are metrics.paired's over each window's rows, pair for pair."""
    dashboard = load("overview.json")
    variables = variables_of(conn, dashboard)
    for window, span in WINDOWS.items():
        expected = compute(_in_range(rows, NOW - span))
        got = run_panel(conn, dashboard, "Paired comparisons (rolling ${window})", variables.scoped("window", window))
        key = [(c.a.dataset, c.a.protocol, c.a.region, c.a.method_version, c.statistic, c.a.model_id, c.b.model_id)
               for c in expected if c.a.board in variables.values["board"]]
        assert [(r["dataset"], r["protocol"], r["region"], r["method"], r["statistic"], r["model_a"], r["model_b"])
                for r in got] == key and key, window
        assert any(r["shown"] for r in got) and not all(r["shown"] for r in got)  # the seed has both kinds
        for row, c in zip(got, [c for c in expected if c.a.board in variables.values["board"]]):
            d = c.difference
            for name, value in (("a", d.a), ("b", d.b), ("estimate", d.estimate), ("p_value", d.p_value),
                                ("p_holm", c.p_holm), ("cells", d.cells), ("ticks", d.ticks),
                                ("ci_low", d.ci and d.ci[0]), ("ci_high", d.ci and d.ci[1])):
                tally.same(row[name], value, (window, c.a.model_id, c.b.model_id, c.statistic, name))
            assert row["shown"] == c.shown


_EOT = ("eot_clips", "eot_false_cutoffs", "eot_false_cutoff_share", "eot_false_cutoff_share_ci", "eot_p50", "eot_p50_ci",
        "eot_p95")


@check("voxwatch-overview", "STT end of turn: false cut-offs against latency (rolling ${window})", na=True)
def _end_of_turn(conn, rows, tally):
    """Each streaming STT series' end-of-turn figures are metrics.series.eot_figures' over the window's rows."""
    title = "STT end of turn: false cut-offs against latency (rolling ${window})"
    dashboard = load("overview.json")
    variables = variables_of(conn, dashboard)
    for window, span in WINDOWS.items():
        expected = {}
        for m in leaderboard.build(_in_range(rows, NOW - span), Registry.default()):
            if m.board == "stt" and m.protocol == "stt-stream":
                expected.setdefault((m.model_id, m.dataset, m.region, m.method_version), m)
        got = run_panel(conn, dashboard, title, variables.scoped("window", window))
        assert [(r["model"], r["dataset"], r["region"], r["method"]) for r in got] == sorted(expected), window
        assert any(r["eot_clips"] for r in got) and any(not r["eot_clips"] for r in got)  # the seed has both kinds
        for row in got:
            m = expected[(row["model"], row["dataset"], row["region"], row["method"])]
            for name in _EOT:
                value = getattr(m, name)
                if name.endswith("_ci"):
                    for i, end in enumerate(("low", "high")):
                        tally.same(row[f"{name}_{end}"], value and value[i], (window, m.model_id, name))
                else:
                    tally.same(row[name], value, (window, m.model_id, m.dataset, name))
            assert (row["note"] == "no end-of-turn events") == (m.eot_clips == 0)


# ---------------------------------------------------------------- alert history (the alerts table)

def _alerts_shown() -> list[tuple]:
    start = RANGE.start.timestamp()
    return [a for a in SEEDED_ALERTS if a[3] != EMULATED_ONLY and (a[8] != "resolved" or a[11] >= start)]


def _alert_panel(conn, title: str) -> list[dict]:
    dashboard = load("alert-history.json")
    return run_panel(conn, dashboard, title, variables_of(conn, dashboard))


@check("voxwatch-alerts", "Open now", na=False)
def _open_now(conn, rows, tally):
    (got,) = _alert_panel(conn, "Open now")
    live = [a for a in SEEDED_ALERTS if a[3] != EMULATED_ONLY]
    for state in ("firing", "pending"):
        tally.same(got[state], sum(a[8] == state for a in live), state)


@check("voxwatch-alerts", "Alerts fired", na=False)
def _alerts_fired(conn, rows, tally):
    step = RANGE.interval_ms / 1000
    expected: dict[tuple, float] = defaultdict(float)
    for a in _alerts_shown():
        if a[10] is not None and a[10] >= RANGE.start.timestamp():
            expected[(float(np.floor(a[10] / step) * step), a[1])] += 1
    tally.points(_alert_panel(conn, "Alerts fired"), expected)


@check("voxwatch-alerts", "Alerts in the time range", na=False)
def _alert_table(conn, rows, tally):
    got = _alert_panel(conn, "Alerts in the time range")
    shown = sorted(_alerts_shown(), key=lambda a: a[9], reverse=True)
    assert [(r["kind"], r["model"], r["metric"], r["state"]) for r in got] == [(a[1], a[3], a[4], a[8]) for a in shown]
    for row, a in zip(got, shown):
        for column, value in (("recent_value", a[13]), ("baseline_value", a[14]), ("p_value", a[15]),
                              ("n_recent", a[16]), ("n_baseline", a[17])):
            tally.same(row[column], value, (a[0], column))
        tally.same(row["opened"].timestamp(), a[9], (a[0], "opened"))


@check("voxwatch-alerts", "Webhook deliveries", na=False)
def _deliveries(conn, rows, tally):
    got = _alert_panel(conn, "Webhook deliveries")
    expected = [("ops-slack", 2, True, 200, NOW - 4 * HOUR + 30), ("ops-slack", 1, False, 500, NOW - 4 * HOUR),
                ("pager-json", 1, True, 204, NOW - DAY)]  # the seeded deliveries of shown alerts, newest first
    assert [(r["target"], r["ok"]) for r in got] == [(e[0], e[2]) for e in expected]
    for r, (target, attempt, _, status_code, at) in zip(got, expected):
        tally.same(r["attempt"], attempt, (target, "attempt"))
        tally.same(r["status_code"], status_code, (target, "status_code"))
        tally.same(r["at"].timestamp(), at, (target, "at"))


# ---------------------------------------------------------------- conversations (voxwatch/metrics/conversation_aggregate.py)

Block = tuple  # voxwatch/conversations/scorecards.py ScorecardKey: one board block, never pooled


def _block(c: ConversationRow) -> Block:
    return (c.model_id, c.scenario, c.scenario_version, c.scenario_pin, c.persona, c.turns, c.whole, c.region,
            c.method_version)


def _block_label(c: ConversationRow) -> str:
    trial = None if c.whole else f"first {c.turns} turns"
    parts = (c.model_id, f"{c.scenario}@v{c.scenario_version}", "#" + c.scenario_pin[:12], trial,
             f"persona {c.persona}", c.region, f"method {c.method_version}")
    return " ".join(p for p in parts if p)


def _conversations_shown() -> list[tuple[ConversationRow, ConversationScore]]:
    """The seeded conversations a panel may show (no emulated one, in the time range), as their scores."""
    return [(c, score_of(c, turns)) for c, turns in SEEDED_CONVERSATIONS
            if not c.emulator and RANGE.start.timestamp() <= c.started_at <= RANGE.end.timestamp()]


def _conversation_buckets() -> dict[tuple[float, str], list[ConversationScore]]:
    """The scores of each (time bucket of the conversations' start, block label)."""
    step = RANGE.interval_ms / 1000
    out: dict[tuple[float, str], list[ConversationScore]] = defaultdict(list)
    for c, score in _conversations_shown():
        out[(float(np.floor(c.started_at / step) * step), _block_label(c))].append(score)
    return out


def _conversation_panel(conn, title: str, ref: str = "A", **scoped: str) -> list[dict]:
    dashboard = load("conversations.json")
    variables = variables_of(conn, dashboard)
    for name, value in scoped.items():
        variables = variables.scoped(name, value)
    return run_panel(conn, dashboard, title, variables, ref)


def _bucket_points(conn, tally: Tally, title: str, statistic: Callable[[list[ConversationScore]], float | None],
                   suffix: str = "", ref: str = "A", **scoped: str) -> None:
    """A conversation time series against `statistic` of each (bucket, block)'s conversations."""
    expected = {(t, label + suffix): statistic(s) for (t, label), s in _conversation_buckets().items()}
    tally.points(_conversation_panel(conn, title, ref, **scoped), expected)


@check("voxwatch-conversations", "Instruction adherence", na=True)
def _adherence(conn, rows, tally):
    _bucket_points(conn, tally, "Instruction adherence", lambda s: conv.instruction_adherence(s).rate)


@check("voxwatch-conversations", "Pass rate: ${dimension}", na=True)
def _dimension_rates(conn, rows, tally):
    variables = variables_of(conn, load("conversations.json"))
    assert variables.values["dimension"] == list(DIMENSIONS)
    for dim in DIMENSIONS:
        _bucket_points(conn, tally, "Pass rate: ${dimension}", lambda s: conv.dimension_rates(s)[dim].rate,
                       f" {dim}", dimension=dim)


@check("voxwatch-conversations", "End-state success", na=True)
def _end_state(conn, rows, tally):
    _bucket_points(conn, tally, "End-state success", lambda s: conv.end_state_rate(s).rate)


@check("voxwatch-conversations", "V2V per turn: p50 and p95", na=True)
def _v2v(conn, rows, tally):
    for ref, q in (("A", "p50"), ("B", "p95")):
        _bucket_points(conn, tally, "V2V per turn: p50 and p95", lambda s: getattr(conv.v2v_per_turn(s), q),
                       f" {q}", ref)
    assert any(conv.v2v_per_turn(s).p95 is not None for s in _conversation_buckets().values()), "no p95 compared"


@check("voxwatch-conversations", "Silence-gap latency", na=False)
def _silence_gap(conn, rows, tally):
    _bucket_points(conn, tally, "Silence-gap latency", conv.silence_gap)


@check("voxwatch-conversations", "Interruption and no-response rates", na=True)
def _interruptions(conn, rows, tally):
    expected = {}
    for (t, label), s in _conversation_buckets().items():
        expected[(t, f"{label} interruptions")] = conv.interruption_rate(s).rate
        expected[(t, f"{label} no response")] = conv.no_response_rate(s).rate
    tally.points(_conversation_panel(conn, "Interruption and no-response rates"), expected)


@check("voxwatch-conversations", "Board per block", na=True)
def _board(conn, rows, tally):
    blocks: dict[Block, list[ConversationScore]] = defaultdict(list)
    for c, score in _conversations_shown():
        blocks[_block(c)].append(score)
    got = {(r["model"], r["scenario"], r["version"], r["pin"], r["persona"], r["turns_held"], r["whole"], r["region"],
            r["method"]): r for r in _conversation_panel(conn, "Board per block")}
    assert set(got) == {(*k[:3], k[3][:12], *k[4:]) for k in blocks}
    for k, scores in blocks.items():
        row, s = got[(*k[:3], k[3][:12], *k[4:])], conv.scorecard(scores)
        tally.same(row["conversations"], s.conversations, (k, "conversations"))
        tally.same(row["adherence"], s.adherence.rate, (k, "adherence"))
        for dim, rate in s.dimensions.items():
            tally.same(row[dim], rate.rate, (k, dim))
        for column, value in (("end_state", s.end_state.rate), ("v2v_p50", s.v2v.p50), ("v2v_p95", s.v2v.p95),
                              ("silence_gap_s", s.silence_gap_s), ("interruption_rate", s.interruption.rate),
                              ("no_response_rate", s.no_response.rate)):
            tally.same(row[column], value, (k, column))


@check("voxwatch-conversations", "Recent conversations", na=True)
def _recent_conversations(conn, rows, tally):
    got = _conversation_panel(conn, "Recent conversations")
    shown = sorted(_conversations_shown(), key=lambda p: (-p[0].started_at, p[0].conversation_id))
    assert [r["conversation_id"] for r in got] == [c.conversation_id for c, _ in shown]
    for row, (c, score) in zip(got, shown):
        assert (row["model"], row["persona"], row["whole"], row["end_state"]) == \
            (c.model_id, c.persona, c.whole, c.end_state_ok)
        tally.same(row["started"].timestamp(), c.started_at, (c.conversation_id, "started"))
        tally.same(row["adherence"], conv.instruction_adherence([score]).rate, (c.conversation_id, "adherence"))
        tally.same(row["v2v_p50"], conv.v2v_per_turn([score]).p50, (c.conversation_id, "v2v_p50"))
        tally.same(row["silence_gap_s"], conv.conversation_silence_gap(score), (c.conversation_id, "silence_gap_s"))


# ---------------------------------------------------------------- the tests

def test_every_panel_with_a_query_has_a_check_of_its_numbers():
    panels_with_sql = {(load(p.name)["uid"], panel["title"]) for p in FILES for panel in panels(load(p.name))
                       if panel.get("targets")}
    assert panels_with_sql == set(CHECKS), \
        f"unchecked: {panels_with_sql - set(CHECKS)}; stale: {set(CHECKS) - panels_with_sql}"


@pytest.mark.parametrize("key", sorted(CHECKS), ids=[f"{u}:{t}" for u, t in sorted(CHECKS)])
def test_panel_numbers_equal_the_python_definitions_on_the_seeded_rows(key, seeded):
    url, rows = seeded
    fn, has_na = CHECKS[key]
    tally = Tally()
    with connect(url) as conn:
        fn(conn, rows, tally)
    assert tally.numbers > 0, f"{key}: no number compared"
    if has_na:
        assert tally.na > 0, f"{key}: the seed puts none of its numbers under a floor"
    print(f"{key}: {tally.numbers} numbers equal, {tally.na} n/a on both sides")


ANNOTATED = {"provider-detail.json": None, "ttfa-components.json": "tts", "wer-per-dataset.json": "stt",
             "alert-history.json": None}
"""The dashboards with alert and method-change annotations, and the one board a dashboard is about."""


def test_annotations_mark_each_fired_alert_and_each_method_versions_first_row(seeded):
    url, rows = seeded
    start, end = RANGE.from_unix(), RANGE.to_unix()
    drawn = 0
    with connect(url) as conn:
        for name, board in ANNOTATED.items():
            dashboard = load(name)
            variables = variables_of(conn, dashboard)
            got = {}
            for annotation in dashboard["annotations"]["list"]:
                assert annotation["datasource"]["uid"] == "${datasource}" and annotation["enable"]
                names, _, result = query(conn, expand(annotation["target"]["rawSql"], variables, RANGE))
                assert names[:2] == ["time", "timeend"] or names[:1] == ["time"], (name, names)
                got[annotation["name"]] = [dict(zip(names, r)) for r in result]
            fired = [a for a in SEEDED_ALERTS if a[3] != EMULATED_ONLY and a[10] is not None and a[10] <= end
                     and (a[11] or end) >= start and (board is None or a[2] == board)]
            drawn += len(fired)
            assert [(r["time"].timestamp(), r["timeend"] and r["timeend"].timestamp(), r["text"])
                              for r in got["Alerts"]] == [(pytest.approx(a[10]), a[11] and pytest.approx(a[11]), a[18])
                                                          for a in sorted(fired, key=lambda a: a[10])]
            assert all(r["tags"].startswith("alert,") for r in got["Alerts"])
            first: dict[str, float] = {}
            for r in rows:
                if not r.emulator and start - WINDOWS["30d"] <= r.started_at <= end and board in (None, r.board):
                    first[r.method_version] = min(first.get(r.method_version, r.started_at), r.started_at)
            expected = sorted((t, f"method {m} first measured") for m, t in first.items() if t >= start)
            assert len(expected) >= 1 and [(r["time"].timestamp(), r["text"]) for r in got["Method changes"]] == \
                [(pytest.approx(t), text) for t, text in expected], name
            if board is None:
                assert {text for _, text in expected} >= {"method 2 first measured", "method 3 first measured"}
    assert drawn >= 3, "the seed should have fired alerts, open and resolved, on the dashboards"
