"""The Grafana dashboards without a Grafana.

Every panel's SQL (and every template variable's query) is expanded as Grafana expands it
(tests/grafana_query.py) and run against a real Postgres store seeded through the store's own
write path (observations of several boards, models, datasets incl. a clean and a degraded one
sharing utterance ids, two regions, two method versions, failures, emulator rows) plus alert
rows; each result must have the columns and types its panel reads, no emulator row may show, and
the numbers of the leaderboard, TTFA, WER-delta, time series and alert panels must equal numbers
computed here from the seeded rows. `voxwatch dashboards push` runs as a user runs it against a
stand-in of the Grafana API it calls (tests/grafana_api.py).
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import numpy as np
import psycopg
import pytest
import yaml

from voxwatch import dashboards, leaderboard
from voxwatch.metrics.specs import METRICS
from voxwatch.observation import FAILED, Observation
from voxwatch.providers.registry import Registry
from voxwatch.store import open_store

from conftest import REPO, run_cli
from grafana_api import GrafanaAPI
from grafana_query import ExpansionError, TimeRange, Variables, expand, go_float, resolve

DASHBOARDS = REPO / "dashboards"
FILES = sorted(DASHBOARDS.glob("*.json"))
STABLE_UIDS = {"voxwatch-overview", "voxwatch-provider", "voxwatch-ttfa", "voxwatch-wer", "voxwatch-alerts"}
"""Links and pushes address dashboards by uid: renaming one would orphan bookmarks and duplicate it on push."""

NOW = time.time()
HOUR, DAY = 3600.0, 86400.0
RANGE = TimeRange(datetime.fromtimestamp(NOW - 3 * DAY, timezone.utc), datetime.fromtimestamp(NOW + 60, timezone.utc),
                  interval_ms=3_600_000)
POCKET, GPT_STT = "pocketsphinx/en-us@5.1.1", "openai/gpt-4o-transcribe:realtime"
ESPEAK, GPT_S2S = "espeak-ng/en-us@1.52.0", "openai/gpt-realtime-2025-08-28"
EMULATED_ONLY = "deepgram/nova-3"  # measured here only against an emulator: must never show
EMULATOR_LATENCY = 99_999.0  # what the emulator rows of a real model report: would show if they were pooled in
REGIONS = ("eu-west", "us-east")
CLEAN, NOISY = "stt-starter-clean", "stt-starter-noise"
UTTERANCES = [f"u{i:02d}" for i in range(12)]

NUMERIC = {20, 21, 23, 700, 701, 1700}  # Postgres type OIDs: int8, int2, int4, float4, float8, numeric
TEXT = {25, 1043, 19}  # text, varchar, name
TIMESTAMP = {1114, 1184}
TIME_UNITS = {"dateTimeAsIso", "dateTimeFromNow", "dateTimeAsSystem"}


# ---------------------------------------------------------------- seeded store

def _stt_rows(rng: np.random.Generator) -> list[Observation]:
    rows = []
    for model in (POCKET, GPT_STT):
        for region in REGIONS:
            for dataset, condition, worst in ((CLEAN, "clean", 2), (NOISY, "noise", 5)):
                runs = [("r-new", 1 * HOUR, "3"), ("r-old", 30 * HOUR, "3")]
                if model == POCKET and region == "eu-west" and dataset == CLEAN:
                    runs.append(("r-v2", 2 * DAY, "2"))  # the same series measured under the previous method
                for run, age, method in runs:
                    for i, utt in enumerate(UTTERANCES):
                        status = {0: "timeout", 1: "error"}.get(i, "ok") if run == "r-new" else "ok"
                        ok = status == "ok"
                        errs = rng.integers(0, worst + 1, size=3) if ok else [None] * 3
                        rows.append(Observation(
                            run_id=f"{run}-{region}", model_id=model, dataset=dataset, clip_id=f"{dataset}/{utt}",
                            attempt=1, board="stt", vendor=model.split("/")[0], protocol="stt-stream", region=region,
                            started_at=NOW - age + 60 * i, status=status, reason=None if ok else f"{status} here",
                            condition=condition, family="stt-starter", utterance_id=utt,
                            ttfs_ms=float(rng.uniform(200, 600)) if ok else None,
                            first_partial_ms=float(rng.uniform(80, 300)) if ok else None,
                            substitutions=int(errs[0]) if ok else None, deletions=int(errs[1]) if ok else None,
                            insertions=int(errs[2]) if ok else None,
                            ref_words=int(rng.integers(8, 14)) if ok else None,
                            method_version=method))
    return rows


def _tts_and_s2s_rows(rng: np.random.Generator) -> list[Observation]:
    rows = []
    for region in REGIONS:
        for run, age in (("r-new", 1 * HOUR), ("r-old", 30 * HOUR)):
            for i in range(12):
                ttfb, silence, late = rng.uniform(40, 160), rng.uniform(10, 90), rng.choice([0.0, 0.0, 25.0])
                status = "inaudible" if (i == 0 and run == "r-new") else "ok"
                ok = status == "ok"
                rows.append(Observation(
                    run_id=f"{run}-{region}", model_id=ESPEAK, dataset="tts-prompts", clip_id=f"p{i:02d}",
                    attempt=1, board="tts", vendor="espeak-ng", protocol="tts-stream", region=region,
                    started_at=NOW - age + 60 * i, status=status, condition="text", family="tts-prompts",
                    utterance_id=f"p{i:02d}",
                    ttfb_ms=float(ttfb) if ok else None, leading_silence_ms=float(silence) if ok else None,
                    ttfa_ms=float(ttfb + silence + late) if ok else None, substitutions=1 if ok else None,
                    deletions=0 if ok else None, insertions=0 if ok else None, ref_words=9 if ok else None,
                    instrument_id="faster-whisper/tiny.en@1.2.1", method_version="3"))
        for i, utt in enumerate(UTTERANCES):
            rows.append(Observation(
                run_id=f"r-new-{region}", model_id=GPT_S2S, dataset=CLEAN, clip_id=f"{CLEAN}/{utt}", attempt=1,
                board="s2s", vendor="openai", protocol="s2s", region=region, started_at=NOW - 2 * HOUR + 60 * i,
                status="ok", condition="clean", family="stt-starter", utterance_id=utt,
                v2v_ms=float(rng.uniform(500, 900)), method_version="3"))
    return rows


def _emulator_rows() -> list[Observation]:
    rows = []
    for model in (EMULATED_ONLY, POCKET):
        for dataset, condition in ((CLEAN, "clean"), (NOISY, "noise")):
            for i, utt in enumerate(UTTERANCES):
                rows.append(Observation(
                    run_id="r-emulated", model_id=model, dataset=dataset, clip_id=f"{dataset}/{utt}", attempt=1,
                    board="stt", vendor=model.split("/")[0], protocol="stt-stream", region="eu-west",
                    started_at=NOW - 1 * HOUR + 60 * i, status="ok" if i else "error", condition=condition,
                    family="stt-starter", utterance_id=utt, emulator=True, ttfs_ms=EMULATOR_LATENCY,
                    first_partial_ms=EMULATOR_LATENCY, substitutions=40, deletions=0, insertions=0, ref_words=10,
                    method_version="3"))
    return rows


ALERT_COLUMNS = ("key", "kind", "board", "model_id", "metric", "dataset", "region", "method_version", "state",
                 "opened_at", "fired_at", "resolved_at", "last_evaluated_at", "recent_value", "baseline_value",
                 "p_value", "n_recent", "n_baseline", "summary")


def _alert(kind: str, board: str, model: str, metric: str, dataset: str, region: str, state: str, opened: float,
           fired: float | None, resolved: float | None) -> tuple:
    key = "|".join((kind, model, metric, dataset, region))
    return (key, kind, board, model, metric, dataset, region, "3", state, opened, fired, resolved,
            resolved or NOW - 60, 480.0, 300.0, 1e-4, 24, 900, f"{model} {metric} on {dataset} ({region}): {state}")


SEEDED_ALERTS = [
    _alert("latency", "stt", POCKET, "ttfs_ms", CLEAN, "eu-west", "firing", NOW - 5 * HOUR, NOW - 4 * HOUR, None),
    _alert("wer", "stt", GPT_STT, "pooled_wer", NOISY, "us-east", "resolved", NOW - 2 * DAY, NOW - 2 * DAY + HOUR,
           NOW - DAY),
    _alert("error_rate", "tts", ESPEAK, "error_rate", "tts-prompts", "eu-west", "pending", NOW - HOUR, None, None),
    _alert("latency", "stt", POCKET, "first_partial_ms", NOISY, "us-east", "resolved", NOW - 20 * DAY,
           NOW - 20 * DAY + HOUR, NOW - 19 * DAY),  # before the time range
    _alert("latency", "stt", EMULATED_ONLY, "ttfs_ms", CLEAN, "eu-west", "firing", NOW - 3 * HOUR, NOW - 2 * HOUR,
           None),  # an alert on emulator rows (a test that opted in): never on a dashboard
]


def _seed_alerts(conn: psycopg.Connection) -> dict[str, int]:
    ids = {}
    for row in SEEDED_ALERTS:
        (ids[row[0]],) = conn.execute(
            f"INSERT INTO alerts ({', '.join(ALERT_COLUMNS)}) VALUES ({', '.join(['%s'] * len(row))}) RETURNING id",
            row).fetchone()
    deliveries = [(SEEDED_ALERTS[0][0], "firing", "ops-slack", 1, NOW - 4 * HOUR, False, 500, "server error"),
                  (SEEDED_ALERTS[0][0], "firing", "ops-slack", 2, NOW - 4 * HOUR + 30, True, 200, None),
                  (SEEDED_ALERTS[1][0], "resolved", "pager-json", 1, NOW - DAY, True, 204, None),
                  (SEEDED_ALERTS[4][0], "firing", "ops-slack", 1, NOW - 2 * HOUR, True, 200, None)]
    for key, *rest in deliveries:
        conn.execute("INSERT INTO alert_deliveries (alert_id, event, target, attempt, at, ok, status_code, error) "
                     "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", (ids[key], *rest))
    return ids


@pytest.fixture(scope="module")
def seeded(postgres_store_url: str) -> Iterator[tuple[str, list[Observation]]]:
    """The store, migrated by `voxwatch db upgrade` and filled through PostgresStore.add, and its rows."""
    rng = np.random.default_rng(20261129)
    rows = _stt_rows(rng) + _tts_and_s2s_rows(rng) + _emulator_rows()
    store = open_store(postgres_store_url)
    try:
        assert store.add(rows) == len(rows)
    finally:
        store.close()
    with psycopg.connect(postgres_store_url, autocommit=True) as conn:
        _seed_alerts(conn)
    yield postgres_store_url, rows


# ---------------------------------------------------------------- running panels as Grafana would

def _load(name: str) -> dict:
    return json.loads((DASHBOARDS / name).read_text())


def _query(conn: psycopg.Connection, sql: str) -> tuple[list[str], list[int], list[tuple]]:
    try:
        cur = conn.execute(sql)
    except psycopg.Error as exc:
        raise AssertionError(f"the panel SQL failed: {exc}\n{sql}") from None
    return [d.name for d in cur.description], [d.type_code for d in cur.description], cur.fetchall()


def _panels(dashboard: dict) -> Iterator[dict]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])  # a collapsed row keeps its panels inside


def _targets(dashboard: dict, variables: Variables) -> Iterator[tuple[dict, dict, Variables]]:
    """(panel, target, variables as that panel instance sees them): a repeated panel once per value."""
    for panel in _panels(dashboard):
        instances = ([variables.scoped(panel["repeat"], v) for v in variables.values[panel["repeat"]]]
                     if panel.get("repeat") else [variables])
        for scoped in instances:
            for target in panel.get("targets", []):
                yield panel, target, scoped


def _run_panel(conn: psycopg.Connection, dashboard: dict, title: str, variables: Variables,
               ref: str = "A") -> list[dict]:
    panel = next(p for p in _panels(dashboard) if p["title"] == title)
    target = next(t for t in panel["targets"] if t["refId"] == ref)
    names, _, rows = _query(conn, expand(target["rawSql"], variables, RANGE))
    return [dict(zip(names, r)) for r in rows]


def _variables(conn: psycopg.Connection, dashboard: dict, **pinned: list[str]) -> Variables:
    return resolve(dashboard, lambda sql: _query(conn, sql)[2], RANGE, pinned)


def _referenced_columns(panel: dict) -> dict[str, str | None]:
    """Each column the panel's field config names, with the unit it gives it (None: no unit)."""
    out: dict[str, str | None] = {}
    for t in panel.get("transformations", []):
        if t["id"] == "organize":
            for key in ("indexByName", "renameByName", "excludeByName"):
                out.update({name: None for name in t["options"].get(key, {})})
    for o in panel.get("fieldConfig", {}).get("overrides", []):
        if o["matcher"]["id"] == "byName":
            unit = next((p["value"] for p in o["properties"] if p["id"] == "unit"), None)
            out[o["matcher"]["options"]] = unit
    return out


def _check_shape(panel: dict, target: dict, names: list[str], types: list[int], rows: list[tuple]) -> None:
    where = f"{panel['title']!r} {target['refId']}"
    assert rows, f"{where}: no rows from the seeded store"
    col_type = dict(zip(names, types))
    if target["format"] == "time_series":
        assert names[0] == "time" and types[0] in NUMERIC | TIMESTAMP, f"{where}: the first column must be time"
        values = [n for n, t in zip(names, types) if t in NUMERIC and n != "time"]
        labels = [n for n, t in zip(names, types) if t in TEXT]
        assert values and set(labels) <= {"metric"} and len(values) + len(labels) == len(names) - 1, (where, names)
        times = [r[0] for r in rows]
        assert times == sorted(times), f"{where}: Grafana needs a long series in time order"
        assert all(RANGE.from_unix() - RANGE.interval_ms / 1000 <= t <= RANGE.to_unix() for t in times), where
        return
    assert target["format"] == "table", where
    for name, unit in _referenced_columns(panel).items():
        assert name in col_type, f"{where}: the panel names column {name!r}, the query returns {names}"
        if unit in TIME_UNITS:
            assert col_type[name] in TIMESTAMP, f"{where}: {name} is shown as a time"
        elif unit is not None:
            assert col_type[name] in NUMERIC, f"{where}: {name} has unit {unit} but type {col_type[name]}"
    if panel["type"] == "stat":
        assert set(types) <= NUMERIC, where
    if panel["type"] == "barchart":
        x = panel["options"]["xField"]
        assert col_type[x] in TEXT and all(t in NUMERIC for n, t in col_type.items() if n != x), where


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_panel_query_returns_rows_of_the_columns_and_types_its_panel_reads(path: Path, seeded):
    url, _ = seeded
    dashboard = json.loads(path.read_text())
    with psycopg.connect(url, autocommit=True) as conn:
        variables = _variables(conn, dashboard)
        for v in dashboard["templating"]["list"]:
            if v["type"] == "query":
                assert variables.options[v["name"]], f"variable {v['name']} offered nothing"
        ran = 0
        for panel, target, scoped in _targets(dashboard, variables):
            names, types, rows = _query(conn, expand(target["rawSql"], scoped, RANGE))
            _check_shape(panel, target, names, types, rows)
            ran += 1
    assert ran >= len(dashboard["panels"])


def test_no_panel_or_variable_shows_emulator_rows_even_when_asked_for_them(seeded):
    """Variables pinned (as a URL can) to every value in the store, emulator-only ones included."""
    url, rows = seeded
    everything = {"board": sorted({r.board for r in rows}), "model": sorted({r.model_id for r in rows}),
                  "dataset": sorted({r.dataset for r in rows}), "region": sorted({r.region for r in rows})}
    with psycopg.connect(url, autocommit=True) as conn:
        for path in FILES:
            dashboard = json.loads(path.read_text())
            variables = _variables(conn, dashboard, **everything)
            assert all(EMULATED_ONLY not in options for options in variables.options.values()), path.name
            for panel, target, scoped in _targets(dashboard, variables):
                names, types, result = _query(conn, expand(target["rawSql"], scoped, RANGE))
                for row in result:
                    for name, type_code, value in zip(names, types, row):
                        assert not (isinstance(value, str) and EMULATED_ONLY in value), (path.name, panel["title"])
                        if type_code in NUMERIC and name != "time" and value is not None:
                            assert float(value) < EMULATOR_LATENCY, (path.name, panel["title"], name, value)


# ---------------------------------------------------------------- the numbers, computed independently

def _real(rows: list[Observation]) -> list[Observation]:
    return [r for r in rows if not r.emulator]


def test_overview_leaderboard_equals_the_statistics_of_the_seeded_rows(seeded):
    url, rows = seeded
    dashboard = _load("overview.json")
    title = dashboard["panels"][0]["title"]
    reason = Registry.default().resolve(GPT_STT).excluded("first_partial_ms").reason
    with psycopg.connect(url, autocommit=True) as conn:
        variables = _variables(conn, dashboard)
        for window, span in (("30d", 30 * DAY), ("24h", DAY)):
            scoped = variables.scoped("board", "stt").scoped("window", window)
            table = {(r["model"], r["dataset"], r["region"], r["method"], r["metric"]): r
                     for r in _run_panel(conn, dashboard, title, scoped)}
            members = defaultdict(list)
            for r in _real(rows):
                if r.board == "stt" and r.started_at >= NOW - span:
                    members[(r.model_id, r.dataset, r.region, r.method_version)].append(r)
            assert {k[:4] for k in table} == set(members)
            for key, series in members.items():
                ok = [r for r in series if r.status == "ok"]
                words = sum(r.ref_words for r in ok)
                errors = sum(r.substitutions + r.deletions + r.insertions for r in ok)
                for metric in ("ttfs_ms", "first_partial_ms"):
                    row = table[(*key, metric)]
                    assert row["attempts"] == len(series)
                    assert row["error_rate"] == pytest.approx(
                        sum(r.status in FAILED and r.status != "timeout" for r in series) / len(series))
                    timeouts = sum(r.status == "timeout" for r in series)
                    assert row["timeout_rate"] == pytest.approx(timeouts / len(series))
                    assert row["pooled_wer"] == pytest.approx(errors / words) and row["wer_words"] == words
                    if key[0] == GPT_STT and metric == "first_partial_ms":
                        assert row["n"] == 0 and row["p50"] is None and row["mean"] is None and reason in row["note"]
                        continue
                    values = np.array([getattr(r, metric) for r in ok])
                    assert row["n"] == len(values)
                    assert row["mean"] == pytest.approx(values.mean())
                    assert row["p50"] == pytest.approx(np.percentile(values, 50))
                    assert row["p95"] == pytest.approx(np.percentile(values, 95))
                    assert row["max"] == pytest.approx(values.max())
                    assert row["p50_ci_low"] <= row["p50"] <= row["p50_ci_high"]
            changed = (POCKET, CLEAN, "eu-west")
            for key, row in table.items():
                shows_change = "series changed method" in (row["note"] or "")
                assert shows_change == (window == "30d" and key[:3] == changed), (window, key, row["note"])
        assert {r["board"] for r in _run_panel(conn, dashboard, "Freshness", variables)} == {"stt", "tts", "s2s"}
        every_board = [row for board in variables.values["board"]
                       for row in _run_panel(conn, dashboard, title, variables.scoped("board", board))]
    store = open_store(url)
    try:  # what `voxwatch leaderboard` prints from the same store, exclusions applied
        printed = leaderboard.from_store(store, "30d", Registry.default())
    finally:
        store.close()
    assert len(every_board) == len(printed)
    for shown, row in zip(every_board, printed):
        assert (shown["model"], shown["dataset"], shown["region"], shown["method"], shown["instrument"],
                shown["metric"], shown["n"]) == (row.model_id, row.dataset, row.region, row.method_version,
                                                 row.instrument, row.metric, row.n)
        for column, value in (("p50", row.p50), ("p95", row.p95), ("mean", row.mean), ("max", row.max),
                              ("p95_ci_high", row.p95_ci and row.p95_ci[1]), ("pooled_wer", row.pooled_wer),
                              ("wer_ci_low", row.wer_ci and row.wer_ci[0]), ("error_rate", row.error_rate)):
            assert shown[column] == (None if value is None else pytest.approx(value)), (row, column)
        assert (row.note or "") in (shown["note"] or "")


def test_paired_wer_delta_equals_the_per_utterance_deltas_of_the_seeded_rows(seeded):
    url, rows = seeded
    dashboard = _load("wer-per-dataset.json")
    # (model, region, method version, dataset, utterance) -> [errors, words], pooled over repeated measurements
    clips: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for r in _real(rows):
        if r.board == "stt" and r.status == "ok" and r.started_at >= NOW - 3 * DAY:
            c = clips[(r.model_id, r.region, r.method_version, r.dataset, r.utterance_id)]
            c[0] += r.substitutions + r.deletions + r.insertions
            c[1] += r.ref_words
    expected = {}
    for (model, region, method, dataset, utt), (e, w) in clips.items():
        if dataset == NOISY and (model, region, method, CLEAN, utt) in clips:
            ce, cw = clips[(model, region, method, CLEAN, utt)]
            expected.setdefault((model, region, method), []).append((ce, cw, e, w, e / w - ce / cw))
    with psycopg.connect(url, autocommit=True) as conn:
        result = _run_panel(conn, dashboard, "Clean vs degraded: paired WER delta", _variables(conn, dashboard))
    got = {(r["model"], r["region"], r["method"]): r for r in result}
    assert set(got) == set(expected) and all(r["clean_dataset"] == CLEAN and r["degraded_dataset"] == NOISY
                                             for r in result)
    for key, pairs in expected.items():
        p = np.array(pairs)
        row = got[key]
        assert row["pairs"] == len(p)
        assert row["mean_delta"] == pytest.approx(p[:, 4].mean())
        assert row["median_delta"] == pytest.approx(np.median(p[:, 4]))
        assert row["clean_wer"] == pytest.approx(p[:, 0].sum() / p[:, 1].sum())
        assert row["degraded_wer"] == pytest.approx(p[:, 2].sum() / p[:, 3].sum())
        assert row["share_worse"] == pytest.approx((p[:, 4] > 0).mean())


def test_ttfa_components_equal_the_seeded_rows(seeded):
    url, rows = seeded
    dashboard = _load("ttfa-components.json")
    series = defaultdict(list)
    for r in _real(rows):
        if r.board == "tts" and r.status == "ok":
            series[f"{r.model_id} {r.dataset} {r.region} method {r.method_version}"].append(r)
    with psycopg.connect(url, autocommit=True) as conn:
        variables = _variables(conn, dashboard)
        bars = {r["series"]: r for r in _run_panel(conn, dashboard, "Mean TTFA by component", variables)}
        table = {f"{r['model']} {r['dataset']} {r['region']} method {r['method']}": r
                 for r in _run_panel(conn, dashboard, "TTFA components per series", variables)}
    assert set(bars) == set(table) == set(series)
    for name, members in series.items():
        ttfa, ttfb, silence = (np.array([getattr(r, c) for r in members]) for c in ("ttfa_ms", "ttfb_ms",
                                                                                      "leading_silence_ms"))
        parts = bars[name]["TTFB"] + bars[name]["leading silence"] + bars[name]["late audio"]
        assert parts == pytest.approx(ttfa.mean())
        assert bars[name]["leading silence"] == pytest.approx(silence.mean())
        row = table[name]
        assert row["n"] == len(members)
        assert row["ttfa_p95"] == pytest.approx(np.percentile(ttfa, 95))
        assert row["ttfb_p50"] == pytest.approx(np.percentile(ttfb, 50))
        assert row["silence_p50"] == pytest.approx(np.percentile(silence, 50))
        assert row["silence_share"] == pytest.approx(silence.mean() / ttfa.mean())


def test_percentile_time_series_buckets_equal_the_seeded_rows(seeded):
    """$__unixEpochGroupAlias buckets by $__interval; a bucket with fewer than 5 values has no point."""
    url, rows = seeded
    dashboard = _load("provider-detail.json")
    expected: dict[tuple[float, str], list[float]] = defaultdict(list)
    for r in _real(rows):
        if r.board == "stt" and r.status == "ok" and r.ttfs_ms is not None:
            bucket = np.floor(r.started_at / HOUR) * HOUR
            expected[(bucket, f"{r.model_id} {r.dataset} {r.region} method {r.method_version} p95")].append(r.ttfs_ms)
    expected_p95 = {k: np.percentile(v, 95) for k, v in expected.items() if len(v) >= 5}
    with psycopg.connect(url, autocommit=True) as conn:
        variables = _variables(conn, dashboard, board=["stt"]).scoped("metric", "ttfs_ms")
        result = _run_panel(conn, dashboard, "${metric}: p50 and p95", variables, ref="B")
        errors = _run_panel(conn, dashboard, "Error rate", variables)
    got = {(r["time"], r["metric"]): r["value"] for r in result}
    assert got.keys() == expected_p95.keys() and len(got) > 4
    assert all(got[k] == pytest.approx(v) for k, v in expected_p95.items())
    attempts = defaultdict(lambda: [0, 0])
    for r in _real(rows):
        if r.board == "stt":
            a = attempts[(np.floor(r.started_at / HOUR) * HOUR, f"{r.model_id} {r.dataset} {r.region} "
                                                                 f"method {r.method_version} errors")]
            a[0] += r.status in FAILED and r.status != "timeout"
            a[1] += 1
    assert {(r["time"], r["metric"]): pytest.approx(r["value"]) for r in errors} == \
        {k: e / n for k, (e, n) in attempts.items()}


def test_alert_history_shows_the_alerts_and_deliveries_of_the_time_range(seeded):
    url, _ = seeded
    dashboard = _load("alert-history.json")
    with psycopg.connect(url, autocommit=True) as conn:
        variables = _variables(conn, dashboard)
        history = _run_panel(conn, dashboard, "Alerts in the time range", variables)
        (open_now,) = _run_panel(conn, dashboard, "Open now", variables)
        deliveries = _run_panel(conn, dashboard, "Webhook deliveries", variables)
        fired = _run_panel(conn, dashboard, "Alerts fired", variables)
    start = RANGE.start.timestamp()
    overlapping = [a for a in SEEDED_ALERTS
                   if a[3] != EMULATED_ONLY and (a[8] != "resolved" or a[11] >= start)]
    assert sorted((r["kind"], r["model"], r["metric"], r["state"]) for r in history) == \
        sorted((a[1], a[3], a[4], a[8]) for a in overlapping)
    assert [r["opened"].timestamp() for r in history] == pytest.approx(sorted((a[9] for a in overlapping),
                                                                             reverse=True), abs=1e-5)
    live = [a for a in SEEDED_ALERTS if a[3] != EMULATED_ONLY]
    assert open_now == {"firing": sum(a[8] == "firing" for a in live), "pending": sum(a[8] == "pending" for a in live)}
    assert [(r["target"], r["attempt"], r["ok"], r["status_code"]) for r in deliveries] == [
        ("ops-slack", 2, True, 200), ("ops-slack", 1, False, 500), ("pager-json", 1, True, 204)]
    assert sum(r["value"] for r in fired) == sum(1 for a in overlapping if a[10] and a[10] >= start)


def test_the_expansion_is_the_one_grafanas_own_tests_expect():
    """The helper against Grafana's tests (postgres macros_test.go, the template format registry)."""
    tr = TimeRange(datetime(2018, 4, 12, 18, 0, tzinfo=timezone.utc), datetime(2018, 4, 12, 18, 5, tzinfo=timezone.utc),
                   interval_ms=600_000)
    none = Variables()
    start = int(tr.start.timestamp())
    assert expand("select $__unixEpochFilter(time)", none, tr) == f"select time >= {start} AND time <= {start + 300}"
    assert expand("SELECT $__unixEpochGroupAlias(time_column+time_adjustment,'5m')", none, tr) == \
        'SELECT floor((time_column+time_adjustment)/300)*300 AS "time"'
    assert expand("select $__timeFrom(), $__interval", none, tr) == "select '2018-04-12T18:00:00Z', 10m"
    assert expand("WHERE $__timeFilter(time_column)", none, tr) == \
        "WHERE time_column BETWEEN '2018-04-12T18:00:00Z' AND '2018-04-12T18:05:00Z'"
    assert expand("x IN (${m:sqlstring})", Variables({"m": ["test", "test'value2", 'test"value3']}), tr) == \
        "x IN ('test','test''value2','test\\\"value3')"
    assert go_float(2_592_000.0) == "2.592e+06" and go_float(3600.0) == "3600"  # Go's %v of 30 days and of 1 h
    for unsupported in ("x = $m", "x = ${m}", "$__timeGroup(t, 5m)"):
        with pytest.raises(ExpansionError):
            expand(unsupported, Variables({"m": ["a"]}), tr)


# ---------------------------------------------------------------- files and provisioning

def test_dashboard_files_are_valid_with_unique_stable_uids():
    loaded = dashboards.load(DASHBOARDS)  # what push checks before sending anything
    assert {d["uid"] for d in loaded} == STABLE_UIDS and len(loaded) == len(FILES)
    for d in loaded:
        panels = list(_panels(d))
        assert len({p["id"] for p in panels}) == len(panels) and len({p["title"] for p in panels}) == len(panels)
        for p in panels:
            for t in p.get("targets", []):
                assert t["datasource"] == {"type": "grafana-postgresql-datasource", "uid": "${datasource}"}
                assert t["format"] in ("table", "time_series") and t["rawQuery"] and t["editorMode"] == "code"
        names = [v["name"] for v in d["templating"]["list"]]
        assert {"datasource", "model", "dataset", "region"} <= set(names), d["uid"]


def test_exclusions_and_metric_columns_in_the_sql_follow_the_registry_and_the_metric_specs():
    registry = {(m.id, e.metric) for m in Registry.default().models.values() for e in m.exclusions}
    metric_names = {m.name for m in METRICS}
    headline = {m.name for m in METRICS if m.headline}
    for name in ("overview.json", "provider-detail.json"):
        for panel in _panels(_load(name)):
            for t in panel.get("targets", []):
                pairs = {(a, b) for a, b in re.findall(r"\('([^']+)', '([^']+)'", t["rawSql"]) if b in metric_names}
                if pairs:
                    assert pairs == registry, (name, panel["title"])
    for t in next(p for p in _panels(_load("provider-detail.json")) if p.get("repeat") == "metric")["targets"]:
        columns = re.findall(r"\('(\w+)', o\.(\w+)\)", t["rawSql"])
        assert all(a == b for a, b in columns) and {a for a, _ in columns} == headline


def test_provisioning_reads_the_connection_from_the_environment_and_finds_the_dashboards():
    text = (DASHBOARDS / "provisioning/datasources/voxwatch.yaml").read_text()
    (ds,) = yaml.safe_load(text)["datasources"]
    connection = [ds["url"], ds["user"], ds["secureJsonData"]["password"], ds["jsonData"]["database"],
                  ds["jsonData"]["sslmode"]]
    assert all(re.fullmatch(r"(\$\{\w+\}|:)+", value) for value in connection), connection
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]["grafana"]
    assert set(re.findall(r"\$\{(\w+)\}", text)) <= set(compose["environment"])
    (provider,) = yaml.safe_load((DASHBOARDS / "provisioning/dashboards/voxwatch.yaml").read_text())["providers"]
    mounts = dict(v.split(":")[:2] for v in compose["volumes"])
    assert mounts["./dashboards"] == provider["options"]["path"] and provider["type"] == "file"
    for path in FILES:
        (source,) = [v for v in json.loads(path.read_text())["templating"]["list"] if v["type"] == "datasource"]
        assert source["query"] == ds["type"] and source["current"]["value"] == ds["uid"]


# ---------------------------------------------------------------- push

def test_push_creates_then_updates_each_dashboard_by_uid_and_refuses_a_bad_token():
    token = "glsa_" + secrets.token_hex(16)
    files = {d["uid"]: d for d in dashboards.load(DASHBOARDS)}
    with GrafanaAPI(token) as grafana:
        env = {"VOXWATCH_GRAFANA_TOKEN": token}
        first = run_cli("dashboards", "push", "--url", grafana.url, env=env)
        stored = grafana.state.dashboards
        assert set(stored) == set(files) and list(grafana.state.folders) == [dashboards.FOLDER_UID]
        for uid, d in files.items():
            assert stored[uid]["dashboard"]["version"] == 1 and stored[uid]["meta"]["folderUid"] == "voxwatch"
            assert stored[uid]["dashboard"]["panels"] == d["panels"]
            assert f"created {uid} " in first.stdout and f"{grafana.url}/d/{uid}/" in first.stdout
        ids = {uid: s["dashboard"]["id"] for uid, s in stored.items()}

        second = run_cli("dashboards", "push", "--url", grafana.url, env=env)
        assert set(stored) == set(files) and len(grafana.state.folders) == 1
        assert {uid: s["dashboard"]["id"] for uid, s in stored.items()} == ids
        assert all(s["dashboard"]["version"] == 2 for s in stored.values())
        assert all(f"updated (was version 1) {uid} " in second.stdout for uid in files)
        assert token not in first.stdout + first.stderr + second.stdout + second.stderr

        wrong = "glsa_" + secrets.token_hex(16)
        before = len(grafana.state.requests)
        bad = run_cli("dashboards", "push", "--url", grafana.url, env={"VOXWATCH_GRAFANA_TOKEN": wrong}, check=False)
        assert bad.returncode == 2 and "401" in bad.stderr and "VOXWATCH_GRAFANA_TOKEN" in bad.stderr
        assert wrong not in bad.stdout + bad.stderr and "Traceback" not in bad.stderr
        assert len(grafana.state.requests) == before and all(s["dashboard"]["version"] == 2 for s in stored.values())

        missing = run_cli("dashboards", "push", "--url", grafana.url, check=False)
        assert missing.returncode == 2 and "set VOXWATCH_GRAFANA_TOKEN" in missing.stderr
        url = grafana.url
    gone = run_cli("dashboards", "push", "--url", url, env=env, check=False)
    assert gone.returncode == 2 and f"cannot reach Grafana at {url}" in gone.stderr
    assert token not in gone.stdout + gone.stderr and "Traceback" not in gone.stderr


def test_bad_dashboard_files_are_refused_before_anything_is_sent(tmp_path: Path):
    good = _load("overview.json")
    (tmp_path / "a.json").write_text(json.dumps(good))
    (tmp_path / "b.json").write_text(json.dumps({**good, "title": "copy"}))
    with pytest.raises(dashboards.DashboardError, match="b.json: uid 'voxwatch-overview' is also the uid of a.json"):
        dashboards.load(tmp_path)
    (tmp_path / "b.json").write_text('{"uid": "x", "title": ')
    with pytest.raises(dashboards.DashboardError, match="b.json: not a readable JSON file"):
        dashboards.load(tmp_path)
    (tmp_path / "b.json").write_text(json.dumps({**good, "uid": "has spaces"}))
    with pytest.raises(dashboards.DashboardError, match="needs a uid of 1-40"):
        dashboards.load(tmp_path)
    with pytest.raises(dashboards.DashboardError, match="no dashboard JSON files"):
        dashboards.load(tmp_path / "empty")
