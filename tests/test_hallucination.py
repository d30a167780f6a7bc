"""Hallucination on non-speech (METHOD "Hallucination on non-speech", issue 44): the generated clips without
speech (stt-nonspeech) and the empty prompts (tts-empty); each row's invented words (after the WER
normalizer) or audible ms, stored by both stores (Postgres migration 23, SQLite schema 10); the series
figures (the share with any, its Clopper-Pearson interval, the words per minute) checked against the
rows counted by hand; and every reader (CLI, API, board page, comparison page and its CSV, the Postgres
aggregates) agreeing with metrics.series on two emulated STT models, one told to say words on silence."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from dataclasses import replace

import numpy as np
import pytest

from benchmarks.hallucination import (HALLUCINATING, HAND_COUNT, INJECTED, SILENT, STREAM_CLIPS, STREAMING, emulated,
                                      expected_words, measure, no_clock, scenario, share_by_hand)
from voxwatch import config
from voxwatch.datasets import build_nonspeech
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.foundation.observation import Observation
from voxwatch.foundation.series_key import SeriesKey
from voxwatch.harness.measure import MeasureContext, measure_item
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.clustered import count_rate_interval, design, rate_interval, ratio_variance
from voxwatch.metrics.hallucination import EMPTY_PROMPT, NONSPEECH, audible_ms, invented_words
from voxwatch.metrics.series import SeriesData, series_rows
from voxwatch.metrics.vad import speech_anchors
from voxwatch.providers.emulators.scenario import Scenarios, TTSScenario
from voxwatch.providers.emulators.server import serve
from voxwatch.providers.registry import Registry
from voxwatch.store import open_store
from voxwatch.store.series_data import group

from support.postgres import fresh_postgres
from support.processes import run_cli

CLEAN = "stt-starter-clean"
CLEAN_CLIPS = 5  # the speech clips the comparison page's use case is made of


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog([bundled_root()])


# --- the definition -------------------------------------------------------------------------------

def test_invented_words_are_the_words_after_the_wer_normalizer():
    assert invented_words("Thank you.", "en") == 2
    assert invented_words("I'm here", "en") == 3  # the normalizer spells it "i am here"
    assert invented_words("Um. Hmm.", "en") == 0  # fillers it drops
    assert invented_words("[BLANK_AUDIO] (music)", "en") == invented_words("", "en") == invented_words(None, "en") == 0
    assert invented_words("...", "en") == 1  # the normalizer keeps a '.' of it: a word, as WER counts it too
    assert invented_words("Thank you for watching!", "en") == 4


def test_audible_ms_counts_the_audible_audio_of_a_reply_with_an_onset():
    rate = 16000
    x = np.zeros(2 * rate)
    x[rate // 2: rate // 2 + int(0.3 * rate)] = 0.3 * np.sin(2 * np.pi * 440 * np.arange(int(0.3 * rate)) / rate)
    assert audible_ms(x, rate) == pytest.approx(300, abs=12)  # the 10 ms windows that reach into the tone
    assert audible_ms(np.zeros(rate), rate) == audible_ms(np.zeros(0), rate) == 0.0
    click = np.zeros(rate)
    click[100:120] = 0.9  # 20 samples: audible windows, but no sustained onset
    assert audible_ms(click, rate) == 0.0


def _series(words: list[int | None], statuses: list[str], seconds: float = 2.0, ticks: int = 2) -> SeriesData:
    n = len(words)
    return SeriesData(statuses=statuses, utterances=[f"c{i % (n // ticks)}" for i in range(n)],
                      ticks=[f"t{i // (n // ticks)}" for i in range(n)],
                      values={m: [None] * n for m in ("latency_ms", "rtf", "connect_ms")},
                      errors=[None] * n, words=[None] * n, invented_words=words,
                      heard_s=[seconds if w is not None else None for w in words])


def test_the_series_share_interval_and_words_per_minute_are_the_hand_counts():
    words = [2, 0, 0, 4, 0, 1, 0, 0, 0, 3, 0, 2]  # two ticks of six clips
    statuses = ["ok"] * 12
    data = _series(words, statuses)
    key = SeriesKey("stt", "m", "stt-nonspeech", "r", METHOD_VERSION, "stt-batch", "")
    [first, *_] = series_rows(key, data)
    hits = np.array([w > 0 for w in words], dtype=float)
    d = design(utterance=data.utterances, tick=data.ticks)
    assert (first.hallucination_rate, first.hallucination_clips, first.invented_words) == (5 / 12, 12, 12)
    assert first.hallucination_rate_ci == rate_interval(hits, d)
    minutes = np.full(12, 2.0 / 60)
    assert first.invented_words_per_min == pytest.approx(12 / (24 / 60))
    assert first.invented_words_per_min_ci == count_rate_interval(
        first.invented_words_per_min, ratio_variance(d, np.array(words, dtype=float), minutes), float(minutes.sum()))
    assert first.pooled_wer is None and first.wer_clips == 0  # never in pooled WER
    assert (first.utterances, first.ticks) == (6, 2)  # its clusters are its clips', no clock having any

    with_failures = _series([*words[:-2], None, None], statuses[:-2] + ["timeout", "error"])  # failures: unscored
    [other, *_] = series_rows(key, with_failures)
    assert (other.hallucination_clips, other.hallucination_rate, other.attempts) == (10, 4 / 10, 12)
    few = _series([1, 0, 0, 0], ["ok"] * 4)
    [under, *_] = series_rows(key, few)
    assert (under.hallucination_rate, under.hallucination_clips, under.invented_words_per_min) == (None, 4, None)


def test_a_tts_series_share_is_of_empty_prompts_with_audible_audio():
    ms = [0.0, 600.0, 0.0, 0.0, 120.0, 0.0]
    data = SeriesData(statuses=["ok"] * 6, utterances=["empty", "blank"] * 3, ticks=["a", "a", "b", "b", "c", "c"],
                      values={m: [None] * 6 for m in ("ttfa_ms", "ttfb_ms", "leading_silence_ms", "connect_ms")}, errors=[None] * 6, words=[None] * 6, invented_audio_ms=ms)
    [first, *_] = series_rows(SeriesKey("tts", "m", "tts-empty", "r", METHOD_VERSION, "tts-stream", ""), data)
    assert (first.hallucination_rate, first.hallucination_clips) == (2 / 6, 6)
    assert first.invented_audio_ms == pytest.approx(720 / 6) and first.invented_words_per_min is None


# --- the bundled clips ----------------------------------------------------------------------------

def test_the_clips_without_speech_are_generated_exactly_and_say_nothing(catalog):
    ds = catalog.load(build_nonspeech.NAME)  # every file's sha256 checked against the manifest
    assert ds.info.condition == NONSPEECH and ds.info.extra["license"] == "Apache-2.0"
    assert "no licence" in ds.info.extra["license_note"]
    assert build_nonspeech.check(bundled_root()) == []  # the committed bytes are the recipe's, byte for byte
    assert {k for _, k, _ in build_nonspeech.CLIPS} == {"silence", "line noise", "background noise",
                                                        "music-like tones", "hold music"}
    for clip in ds.clips:
        assert clip.text == "" and clip.speech_start == clip.speech_end == clip.duration_s
        anchors = speech_anchors(ds.audio(clip))
        found = ds.info.extra["vad_found"][clip.id]
        assert (anchors is None) == (found is None)  # what the dataset says the shared VAD makes of each
    assert ds.info.extra["vad_found"]["silence-zero"] is None and ds.info.extra["vad_found"]["line-hiss"] is None
    empty = catalog.load(build_nonspeech.TTS_NAME)
    assert empty.info.condition == EMPTY_PROMPT and [p.text for p in empty.prompts] == ["", "   "]


def test_every_stt_model_hears_them_at_every_tick_by_default(catalog):
    from voxwatch.harness.tick import plan_tick

    cfg = config.load()
    assert "stt-nonspeech" in cfg.boards["stt"].datasets and "tts-empty" in cfg.boards["tts"].datasets
    plan = plan_tick(cfg, Registry.default(), catalog, seed=7)
    heard = {(t.model.id, t.item.id) for t in plan.tasks if t.dataset.name == "stt-nonspeech"}
    every = {c.id for c in catalog.load("stt-nonspeech").clips}
    assert heard == {(m, c) for m in cfg.boards["stt"].models for c in every}  # the draw is larger than the set


# --- measured against emulators -------------------------------------------------------------------

@pytest.fixture(scope="module")
def measured(catalog) -> list[Observation]:
    """Two ticks of two emulated batch STT models on every clip without speech and five clean clips:
    openai/whisper-1 told to say INJECTED's words, groq/whisper-large-v3-turbo nothing."""
    ns, clean = catalog.load("stt-nonspeech"), catalog.load(CLEAN)
    spoken = {c.id: c.text for c in clean.clips[:CLEAN_CLIPS]}
    every = tuple(c.id for c in ns.clips)
    with emulated({HALLUCINATING: scenario((ns, INJECTED), (clean, spoken)), SILENT: scenario((clean, spoken))}):
        rows = measure(ns, {HALLUCINATING: every, SILENT: every}, ticks=2)
        rows += measure(clean, {HALLUCINATING: tuple(spoken), SILENT: tuple(spoken)}, ticks=1)
    return rows


def _nonspeech(rows: list[Observation]) -> list[Observation]:
    return [r for r in rows if r.dataset == "stt-nonspeech"]


@pytest.mark.e2e  # its fixture measures two emulated models over every clip: the slow tier
def test_each_row_stores_the_injected_words_exactly_and_no_clock(measured):
    rows = _nonspeech(measured)
    assert len(rows) == 40
    for r in rows:
        assert r.status == "ok", r.reason
        assert r.invented_words == expected_words(r.model_id, r.clip_id), (r.model_id, r.clip_id, r.hypothesis)
        assert r.hypothesis == (INJECTED.get(r.clip_id, "") if r.model_id == HALLUCINATING else "")
        assert no_clock(r) and r.audio_duration_s == 2.0
    assert sum(r.invented_words for r in rows if r.model_id == HALLUCINATING) == 2 * sum(HAND_COUNT.values())
    clean = [r for r in measured if r.dataset == CLEAN]
    assert all(r.invented_words is None and r.latency_ms is not None and r.ref_words for r in clean)


@pytest.mark.realtime
def test_a_streaming_model_told_to_say_words_on_silence_stores_them(catalog):
    ns = catalog.load("stt-nonspeech")
    with emulated({STREAMING: scenario((ns, INJECTED))}):
        rows = measure(ns, {STREAMING: STREAM_CLIPS}, ticks=1)
    assert [(r.clip_id, r.status, r.invented_words) for r in rows] == [(c, "ok", HAND_COUNT[c]) for c in STREAM_CLIPS]
    assert all(no_clock(r) for r in rows)


def _store(url: str, rows: list[Observation]) -> list[Observation]:
    store = open_store(url)
    try:
        store.add([replace(r, emulator=False) for r in rows])  # as a vendor's rows: what the readers read
        return list(store.observations())
    finally:
        store.close()


@pytest.fixture(params=["sqlite", "postgres"])
def shown(request, tmp_path, measured):
    """The measured rows, stored as a vendor's, in a store of the parameter's kind; its URL."""
    with contextlib.ExitStack() as stack:
        url = f"sqlite:///{tmp_path / 'shown.sqlite'}" if request.param == "sqlite" else \
            stack.enter_context(fresh_postgres())
        kept = _store(url, measured)
        assert sorted((r.run_id, r.model_id, r.clip_id, r.invented_words) for r in kept) == \
            sorted((r.run_id, r.model_id, r.clip_id, r.invented_words) for r in measured)
        yield url


@pytest.mark.e2e
def test_every_reader_agrees_with_the_series_and_the_hallucinating_model_shows(shown, measured):
    """The acceptance: a board with two emulated STT models, one hallucinating on silence, shows it in
    its columns and on the comparison page; every reader's figure is metrics.series'."""
    from starlette.testclient import TestClient

    from voxwatch.metrics.published import rounded
    from voxwatch.web.app import create_app

    hand = {m: share_by_hand([r for r in _nonspeech(measured) if r.model_id == m]) for m in (HALLUCINATING, SILENT)}
    assert hand[HALLUCINATING][:2] == (0.4, 30.0) and hand[SILENT][:2] == (0.0, 0.0)
    series = {k.model_id: series_rows(k, d)[0] for k, d in group(replace(r, emulator=False) for r in
                                                                  _nonspeech(measured)).items()}
    for m, (share, per_min, n) in hand.items():
        assert (series[m].hallucination_rate, series[m].hallucination_clips) == (share, n)
        assert series[m].invented_words_per_min == pytest.approx(per_min)
    assert series[HALLUCINATING].hallucination_rate_ci[0] > 0 and series[SILENT].hallucination_rate_ci[0] == 0

    printed = json.loads(run_cli("leaderboard", "--board", "stt", "--format", "json", "--store", shown).stdout)["rows"]
    table = run_cli("leaderboard", "--board", "stt", "--store", shown).stdout
    with TestClient(create_app(shown)) as client:
        api = client.get("/api/v1/leaderboard", params={"board": "stt"}).json()["rows"]
        page = client.get("/board/stt").text
        compared = client.get("/api/v1/compare/stt-batch", params={"order": "hallucination"}).json()
        by_rank = client.get("/api/v1/compare/stt-batch").json()
        compare_csv = list(csv.DictReader(io.StringIO(client.get("/compare/stt-batch", params={"format": "csv"}).text)))
        compare_page = client.get("/compare/stt-batch").text
        assert client.get("/api/v1/compare/stt-batch", params={"order": "loudest"}).status_code == 400
    for m, first in series.items():
        for rows in (printed, api):
            [r] = [r for r in rows if r["model_id"] == m and r["dataset"] == "stt-nonspeech" and r["metric"] == "latency_ms"]
            assert r["hallucination_rate"] == rounded(first.hallucination_rate, "fraction")
            assert r["hallucination_clips"] == first.hallucination_clips == 20
            assert r["invented_words_per_min"] == pytest.approx(first.invented_words_per_min, abs=1e-3)
        assert f'data-field="hallucination" data-value="{first.hallucination_rate}"' in page
    for m, first in series.items():  # the fitted board's hallucination column, on the model's line
        [line] = [x for x in table.splitlines() if m in x and "latency_ms" in x and "0/min" in x]
        low, high = first.hallucination_rate_ci
        assert f"{100 * first.hallucination_rate:.1f}% [{100 * low:.1f}, {100 * high:.1f}], " \
               f"{first.invented_words_per_min:.1f}/min" in line

    assert [u["id"] for u in compared["use_cases"]] == ["clean"]  # the clips without speech are no use case
    lines = {r["model_id"]: r for r in compared["rows"]}
    for m, first in series.items():
        r = lines[m]
        assert (r["hallucination"], r["hallucination_n"]) == (rounded(first.hallucination_rate, "fraction"), 20)
        assert r["hallucination_ci"] == list(rounded(first.hallucination_rate_ci, "fraction"))
        assert r["invented_words_per_min"] == rounded(first.invented_words_per_min, "fraction")
        row = next(x for x in compare_csv if x["model_id"] == m)
        assert float(row["hallucination"]) == r["hallucination"] and int(row["hallucination_n"]) == 20
        assert f'data-field="hallucination" data-value="{r["hallucination"]}"' in compare_page
    assert [r["model_id"] for r in compared["rows"]][0] == SILENT and compared["order"] == "hallucination"
    assert {r["model_id"] for r in by_rank["rows"]} == {SILENT, HALLUCINATING}
    assert "hallucination" in compare_page and "order=hallucination" in compare_page


def test_the_postgres_aggregates_hold_the_series_figures(measured):
    with fresh_postgres() as url:
        _store(url, measured)
        store = open_store(url)
        try:
            kept = {(r.model_id, r.dataset, r.metric): r for r in store.aggregates("30d", 0.0)}
        finally:
            store.close()
    for key, data in group(replace(r, emulator=False) for r in measured).items():
        for want in series_rows(key, data):
            got = kept[(key.model_id, key.dataset, want.metric)]
            for name in ("hallucination_rate", "hallucination_clips", "invented_words", "invented_words_per_min"):
                assert getattr(got, name) == pytest.approx(getattr(want, name)), name
            assert got.hallucination_rate_ci == pytest.approx(want.hallucination_rate_ci)


# --- the TTS mirror: empty prompts ----------------------------------------------------------------

@pytest.mark.parametrize(("fault", "status", "audible"), [(None, "ok", True), ("bad_request", "ok", False),
                                                          ("inaudible", "ok", False), ("server_error", "server_error", None)])
def test_an_empty_prompt_is_scored_by_the_audible_audio_sent_and_a_clean_refusal_is_fine(catalog, fault, status, audible):
    import asyncio
    import os

    ds = catalog.load("tts-empty")
    registry = Registry.default()
    with serve("openai", Scenarios(tts=TTSScenario(api_key="k", fault=fault))) as url:
        before = dict(os.environ)
        os.environ.update(VOXWATCH_OPENAI_BASE_URL=url, VOXWATCH_OPENAI_API_KEY="k")
        try:
            model = registry.resolve("openai/gpt-4o-mini-tts-2025-12-15")
            adapter = registry.create(model)
            rows = [asyncio.run(measure_item(model, adapter, ds, p, MeasureContext(run_id="r", seed=1, region="t",
                                                                                     timeout_s=10, emulator=True)))
                    for p in ds.prompts]
        finally:
            os.environ.clear()
            os.environ.update(before)
    for r in rows:
        assert r.status == status and r.ttfa_ms is None and r.ref_words is None
        if audible is None:
            assert r.invented_audio_ms is None  # a failure is a failure: not scored
        else:
            assert (r.invented_audio_ms > 0) is audible
        if fault == "bad_request":
            assert r.invented_audio_ms == 0.0 and r.reason.startswith("refused the empty prompt")


# --- the alert rule -------------------------------------------------------------------------------

def test_a_series_that_starts_inventing_words_on_silence_raises_a_hallucination_spike():
    """The alerts watch the share as they watch a rate: the recent window's share of scored clips with any
    invented word against the baseline's, clustered by clip and tick (rules.rate_spike); its recent value
    is metrics.series' share of the same rows."""
    from voxwatch.alerts.evaluate import judge
    from voxwatch.alerts.store import Series
    from voxwatch.config import Alerts
    from voxwatch.foundation.series_key import RowsKey

    series = Series(RowsKey("test/hal@1", "stt-nonspeech", "eu", METHOD_VERSION), "stt", "stt-batch", 0)
    rules = Alerts(min_baseline=5)
    # (started_at, status, instrument, S + D + I, N, tick, utterance, panel, latency_ms, invented_words)
    baseline = [(float(k), "ok", None, None, None, k // 10, k % 10, False, None, 0) for k in range(300)]
    recent = [(1000.0 + k, "ok", None, None, None, 100 + k // 10, k % 10, False, None,
               2 if (k + k // 10) % 10 < 4 else 0) for k in range(120)]  # 12 ticks, 4 clips of 10 each, in turn
    findings = {c.kind: c for c in judge(series, ["latency_ms"], list(zip(*(baseline + recent))), 1000.0, rules)}
    spike = findings["hallucination"]
    assert spike.metric == "hallucination_rate" and spike.finding.holds
    assert (spike.finding.recent, spike.finding.baseline) == (0.4, 0.0)
    data = SeriesData(statuses=["ok"] * 120, utterances=[r[6] for r in recent], ticks=[r[5] for r in recent],
                      values={m: [None] * 120 for m in ("latency_ms", "rtf", "connect_ms")}, errors=[None] * 120,
                      words=[None] * 120, invented_words=[r[9] for r in recent], heard_s=[2.0] * 120)
    assert series_rows(SeriesKey("stt", "m", "stt-nonspeech", "eu", METHOD_VERSION, "stt-batch", ""), data)[0] \
        .hallucination_rate == spike.finding.recent
    steady = [(1000.0 + k, "ok", None, None, None, 100 + k // 10, k % 10, False, None, 0) for k in range(60)]
    calm = {c.kind: c.finding for c in judge(series, ["latency_ms"], list(zip(*(baseline + steady))), 1000.0, rules)}
    assert calm["hallucination"].holds is False
    speech = [r[:9] + (None,) for r in baseline + recent]  # a series without clips without speech: no such check
    assert "hallucination" not in {c.kind for c in judge(series, ["latency_ms"], list(zip(*speech)), 1000.0, rules)}


def test_a_tts_comparison_line_carries_its_models_empty_prompt_figures():
    """The TTS comparison page's lines are heard by an instrument, the empty prompts by none: the line of each
    model carries its figures on tts-empty all the same, and tts-empty is no use case."""
    import time

    from voxwatch.boards.compare_lines import from_rows
    from voxwatch.boards.use_cases import COMPARE_BOARDS

    now, rows = time.time() - 600, []
    for model, audible in (("espeak-ng/en-us@1.52.0", 0.0), ("openai/gpt-4o-mini-tts-2025-12-15", 600.0)):
        common = dict(model_id=model, attempt=1, board="tts", vendor=model.split("/")[0], protocol="tts-stream",
                      region="local", status="ok", method_version=METHOD_VERSION, emulator=False)
        for tick in range(3):
            rows += [Observation(run_id=f"t{tick}", dataset="tts-prompts", clip_id=f"p{i}", started_at=now + tick,
                                 condition="text", utterance_id=f"p{i}", ttfa_ms=200.0 + i, ttfb_ms=100.0,
                                 leading_silence_ms=50.0, connect_ms=5.0, substitutions=0, deletions=0, insertions=0,
                                 ref_words=8, instrument_id="faster-whisper/tiny.en@1.2.1", **common)
                     for i in range(5)]
            rows += [Observation(run_id=f"t{tick}", dataset="tts-empty", clip_id=p, started_at=now + tick,
                                 condition=EMPTY_PROMPT, utterance_id=p, invented_audio_ms=audible if p == "empty" else 0.0,
                                 **common) for p in ("empty", "blank")]
    view = from_rows(rows, COMPARE_BOARDS["tts"], "30d", None, time.time())
    assert [u.id for u in view.cases] == ["prompts"]
    lines = {x.model_id: x for x in view.lines["prompts"].lines}
    assert (lines["espeak-ng/en-us@1.52.0"].hallucination, lines["espeak-ng/en-us@1.52.0"].invented_audio_ms) == (0.0, 0.0)
    loud = lines["openai/gpt-4o-mini-tts-2025-12-15"]
    assert (loud.hallucination, loud.hallucination_n, loud.invented_audio_ms) == (0.5, 6, 300.0)
