"""Answer accuracy of S2S single turns (METHOD "Answer accuracy (S2S single turn)", issue #40 part 6): a
spoken question's reply heard by the fixed instrument and checked by metrics.answers, the row's
answer_correct (null when not scored, with the instrument's error where it failed), both stores keeping
it (Postgres migration 21, SQLite schema 8, older rows and spooled records null), and the series
statistic (the share of scored ok replies that said the answer, n/a under 5, a share's clustered
Clopper-Pearson interval), checked against the rows counted by hand."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import pytest

from voxwatch.cli.emulate import NO_ANSWER, WRONG_EVERY, emulated_reply, scenarios
from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.foundation.observation import Observation, from_record
from voxwatch.foundation.series_key import SeriesKey
from voxwatch.harness.measure import MeasureContext, measure_item
from voxwatch.harness.tick import Task, heard
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.answers import answer_correct
from voxwatch.metrics.clustered import design, rate_interval
from voxwatch.metrics.series import MIN_N, series_rows
from voxwatch.providers.emulators.server import serve
from voxwatch.providers.registry import Registry
from voxwatch.store import open_store
from voxwatch.store.series_data import group
from voxwatch.store.sqlite import SCHEMA_VERSION, _column

from support.both_stores import holding
from support.migration_replay import replay_migration
from support.postgres import fresh_postgres
from support.processes import REPO, run_cli

REGISTRY = Registry.default()
S2S = "openai/gpt-realtime-2025-08-28"
INSTRUMENT = "faster-whisper/tiny.en@1.2.1"
QUESTIONS = "s2s-questions"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog([bundled_root()])


# --- the harness, against OpenAI Realtime's emulator ------------------------------------------------

@pytest.fixture(scope="module")
def realtime(catalog):
    """The OpenAI emulator as `voxwatch emulate` serves it (its emulated answers included), and the model."""
    with serve("openai", scenarios(catalog, 20)) as url:
        with pytest.MonkeyPatch.context() as m:
            m.setenv("VOXWATCH_OPENAI_BASE_URL", url)
            m.setenv("VOXWATCH_OPENAI_API_KEY", "emulator-key")
            model = REGISTRY.resolve(S2S)
            adapter = REGISTRY.create(model)
            yield model, adapter


def _listener(log: list[tuple[np.ndarray, str]]):
    """The fixed instrument (Whisper tiny.en), noting what it was given and what it heard."""
    from voxwatch.providers.local.whisper_stt import WhisperTiny

    def hear(audio16k: np.ndarray) -> str:
        text = WhisperTiny.get().transcribe(audio16k)
        log.append((audio16k, text))
        return text
    return hear


@pytest.mark.realtime
def test_a_reply_to_a_spoken_question_is_heard_by_the_instrument_and_checked(catalog, realtime, tmp_path):
    model, adapter = realtime
    questions = catalog.load(QUESTIONS)
    log: list[tuple[np.ndarray, str]] = []
    ctx = MeasureContext(run_id="r", seed=1, region="local", timeout_s=30, recordings_dir=tmp_path, emulator=True,
                         instrument=_listener(log), instrument_id=INSTRUMENT)
    rows = [asyncio.run(measure_item(model, adapter, questions, clip, ctx)) for clip in questions.clips[:WRONG_EVERY]]
    assert [r.status for r in rows] == ["ok"] * WRONG_EVERY, [r.reason for r in rows]
    assert len(log) == WRONG_EVERY  # once per reply, all of it
    for row, clip, (audio, text) in zip(rows, questions.clips, log):
        assert audio.size / 16000 == pytest.approx(row.audio_duration_s, abs=0.05)
        assert (row.instrument_id, row.instrument_error, row.hypothesis) == (INSTRUMENT, None, text)
        assert row.answer_correct is answer_correct(clip.answers, text)
        assert row.reference == clip.text and row.ref_words is None  # the question is no reference: no WER
    assert rows[-1].answer_correct is False  # the emulator does not answer every WRONG_EVERY-th question
    assert emulated_reply(questions.clips[WRONG_EVERY - 1].answers, WRONG_EVERY - 1) == NO_ANSWER
    assert any(r.answer_correct for r in rows[:-1]), [r.hypothesis for r in rows]


@pytest.mark.realtime
def test_a_failing_instrument_leaves_the_row_ok_and_its_answer_unscored_with_the_reason(catalog, realtime, tmp_path):
    model, adapter = realtime
    questions = catalog.load(QUESTIONS)

    def broken(audio16k: np.ndarray) -> str:
        raise RuntimeError("instrument down")

    ctx = MeasureContext(run_id="r", seed=1, region="local", timeout_s=30, recordings_dir=tmp_path, emulator=True,
                         instrument=broken, instrument_id=INSTRUMENT)
    row = asyncio.run(measure_item(model, adapter, questions, questions.clips[0], ctx))
    assert row.status == "ok" and row.v2v_ms is not None
    assert (row.answer_correct, row.hypothesis, row.instrument_id) == (None, None, INSTRUMENT)
    assert row.instrument_error == "RuntimeError: instrument down"


@pytest.mark.realtime
def test_a_clip_without_answers_is_not_heard(catalog, realtime, tmp_path):
    model, adapter = realtime
    starter = catalog.load("stt-starter-clean")
    log: list = []
    ctx = MeasureContext(run_id="r", seed=1, region="local", timeout_s=30, recordings_dir=tmp_path, emulator=True,
                         instrument=_listener(log), instrument_id=INSTRUMENT)
    row = asyncio.run(measure_item(model, adapter, starter, starter.clips[0], ctx))
    assert row.status == "ok" and row.answer_correct is None and row.instrument_id is None and not log


def test_the_instrument_is_loaded_for_tts_and_for_questions_only(catalog):
    questions, starter, prompts = catalog.load(QUESTIONS), catalog.load("stt-starter-clean"), catalog.load("tts-prompts")
    s2s, tts = REGISTRY.resolve(S2S), REGISTRY.resolve("espeak-ng/en-us@1.52.0")
    stt = REGISTRY.resolve("pocketsphinx/en-us@5.1.1")
    assert heard(Task(s2s, questions, questions.clips[0])) and heard(Task(tts, prompts, prompts.prompts[0]))
    assert not heard(Task(s2s, starter, starter.clips[0])) and not heard(Task(stt, questions, questions.clips[0]))


# --- the statistic, by hand -------------------------------------------------------------------------

def answered(i: int, clip: int, tick: int, correct: bool | None, model: str = S2S, status: str = "ok",
             at: float | None = None, attempt: int = 1, **kw) -> Observation:
    """One stored S2S row on the spoken questions."""
    ok = status == "ok"
    return Observation(
        run_id=f"tick-{tick}", model_id=model, dataset=QUESTIONS, clip_id=f"q{clip:02d}", attempt=attempt, board="s2s",
        vendor=model.split("/")[0], protocol="s2s", region="local",
        started_at=(at if at is not None else time.time() - 3600) + 60 * tick + i, status=status,
        reason=None if ok else "no reply", condition="questions", family=QUESTIONS, utterance_id=f"q{clip:02d}",
        language="en", method_version=METHOD_VERSION, v2v_ms=500.0 + 7 * clip + 3 * tick if ok else None,
        connect_ms=20.0 if ok else None, quality_mos=2.5 + 0.05 * clip if ok else None,
        quality_instrument="dnsmos-p835@269fbebdb513" if ok else None, instrument_id=INSTRUMENT if ok else None,
        hypothesis=("The answer is right." if correct else "I am not sure.") if correct is not None else None,
        answer_correct=correct, **kw)


def seeded(model: str = S2S, ticks: int = 3, clips: int = 8, wrong=lambda clip, tick: (clip + tick) % 3 == 0,
           at: float | None = None) -> list[Observation]:
    """Every clip at every tick, a third wrong, plus a failed row and an instrument failure (both unscored)."""
    rows = [answered(i, c, t, not wrong(c, t), model, at=at) for t in range(ticks) for i, c in enumerate(range(1, clips + 1))]
    rows.append(answered(99, 1, 0, None, model, status="timeout", at=at, attempt=2))
    rows.append(answered(98, 2, 1, None, model, at=at, attempt=2, instrument_error="RuntimeError: instrument down"))
    return rows


def by_hand(rows: list[Observation]) -> tuple[float, int]:
    """Answer accuracy from stored rows, counted: correct over the ok rows scored for an answer."""
    scored = [r.answer_correct for r in rows if r.status == "ok" and r.answer_correct is not None]
    return sum(scored) / len(scored), len(scored)


def test_the_statistic_is_the_share_of_scored_ok_replies_with_a_shares_clustered_interval():
    rows = seeded()
    share, n = by_hand(rows)
    assert (share, n) == (16 / 24, 24)  # 8 of the 24 scored replies are wrong; the timeout and the failure unscored
    [(key, data)] = group(rows).items()
    first = series_rows(key, data)[0]
    assert (first.metric, first.answer_accuracy, first.answer_clips) == ("v2v_ms", pytest.approx(share), n)
    scored = [r for r in rows if r.status == "ok" and r.answer_correct is not None]
    hits = np.array([r.answer_correct for r in scored])
    assert first.answer_accuracy_ci == rate_interval(hits, design(utterance=[r.clip_id for r in scored],
                                                                  tick=[r.run_id for r in scored]))
    low, high = first.answer_accuracy_ci
    assert 0.0 <= low < share < high <= 1.0
    assert {r.answer_accuracy for r in series_rows(key, data)} == {first.answer_accuracy}  # the series' own, on each row


def test_under_five_scored_replies_it_is_na_and_at_the_edges_the_exact_interval():
    few = [answered(i, c, t, True) for i, (c, t) in enumerate([(1, 0), (2, 0), (1, 1), (2, 1)])]
    [(key, data)] = group(few).items()
    row = series_rows(key, data)[0]
    assert (row.answer_accuracy, row.answer_clips, row.answer_accuracy_ci) == (None, 4, None)
    for correct, expected in ((False, (0.0, 1 - 0.025 ** (1 / 6))), (True, (0.025 ** (1 / 6), 1.0))):
        six = [answered(i, c, t, correct) for i, (c, t) in enumerate([(c, t) for t in range(2) for c in range(1, 4)])]
        [(key, data)] = group(six).items()
        row = series_rows(key, data)[0]
        assert row.answer_accuracy == (1.0 if correct else 0.0) and row.answer_clips == MIN_N + 1
        assert row.answer_accuracy_ci == pytest.approx(expected)  # 0 of 6: the exact bound of 6 trials, as a rate's


def test_a_series_with_no_question_has_no_answer_figure():
    rows = [replace(r, answer_correct=None, dataset="stt-recorded-clean") for r in seeded()]
    [(key, data)] = group(rows).items()
    row = series_rows(key, data)[0]
    assert (row.answer_accuracy, row.answer_clips, row.answer_accuracy_ci) == (None, 0, None)


# --- the stores -------------------------------------------------------------------------------------

def _stored(url: str, rows: list[Observation]) -> dict[tuple[str, str, int], bool | None]:
    store = open_store(url)
    try:
        store.add(rows)
        return {(r.run_id, r.clip_id, r.attempt): r.answer_correct for r in store.observations()}
    finally:
        store.close()


def test_both_stores_keep_the_answer_and_its_null(store_url: str):
    rows = seeded()
    expected = {(r.run_id, r.clip_id, r.attempt): r.answer_correct for r in rows}
    assert _stored(store_url, rows) == expected and None in expected.values() and False in expected.values()


@pytest.mark.e2e
def test_both_stores_keep_the_answer_and_its_null_postgres(postgres_store_url: str):
    rows = seeded()
    assert _stored(postgres_store_url, rows) == {(r.run_id, r.clip_id, r.attempt): r.answer_correct for r in rows}


def test_an_older_sqlite_store_gains_the_column_and_keeps_its_rows_null(tmp_path: Path):
    path = tmp_path / "old.sqlite"
    old = [f for f in fields(Observation) if f.name != "answer_correct"]
    before = [replace(r, answer_correct=None) for r in seeded()[:3]]
    with sqlite3.connect(path) as db:  # the observations table as schema 7 made it
        db.execute(f"CREATE TABLE observations ({', '.join(_column(f) for f in old)}, "
                   "UNIQUE (run_id, model_id, dataset, clip_id, attempt))")
        db.executemany(f"INSERT INTO observations VALUES ({', '.join('?' for _ in old)})",
                       [tuple(getattr(r, f.name) for f in old) for r in before])
        db.execute("PRAGMA user_version = 7")
    url = f"sqlite:///{path}"
    newer = [replace(r, run_id="new") for r in seeded()[:3]]
    back = _stored(url, newer)
    assert [back[(r.run_id, r.clip_id, r.attempt)] for r in before] == [None] * 3
    assert [back[(r.run_id, r.clip_id, r.attempt)] for r in newer] == [r.answer_correct for r in newer]
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 8


def test_migration_21_adds_the_column_and_keeps_older_rows_null():
    before = seeded()[:3]
    with fresh_postgres() as url:
        old, newer, applied = replay_migration(url, 21, ("answer_correct",), before, lambda r: r.answer_correct)
        assert applied == [21] and old == [None] * 3
        assert newer == [r.answer_correct for r in before]
        assert "schema up to date" in run_cli("db", "upgrade", "--store", url).stdout


def test_a_record_spooled_or_exported_before_the_field_reads_it_null_and_a_wrong_type_is_refused():
    row = seeded()[0]
    record = json.loads(json.dumps({f.name: getattr(row, f.name) for f in fields(Observation) if f.name != "answer_correct"}))
    assert from_record(record).answer_correct is None
    assert from_record({**record, "answer_correct": True}).answer_correct is True
    with pytest.raises(ValueError, match="answer_correct: expected true or false, got 'yes'"):
        from_record({**record, "answer_correct": "yes"})


def test_the_series_key_of_an_answered_row_is_not_split_by_its_instrument():
    """An S2S series is (model, dataset, region, method, protocol): its failed rows, which no instrument
    heard, stay in it (only a TTS row's instrument splits its series)."""
    assert list(group(seeded())) == [SeriesKey("s2s", S2S, QUESTIONS, "local", METHOD_VERSION, "s2s", "")]


@pytest.mark.realtime
def test_the_benchmark_runs_and_no_control_counts_as_an_answer(tmp_path: Path):
    """benchmarks/answer_accuracy.py on three questions (its full run's figures are in docs/ACCURACY.md)."""
    proc = subprocess.run([sys.executable, "-m", "benchmarks.answer_accuracy", "--limit", "3"], cwd=REPO,
                          env={**os.environ, "VOXWATCH_SPEECH_DIR": str(tmp_path)}, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["questions"] == 3 and out["controls_never_correct"] is True
    assert {r["n"] for r in out["results"].values()} == {3} and "recorded speech, its last word" not in out["results"]


# --- every reader, on both stores -------------------------------------------------------------------

OTHER = "openai/gpt-realtime-2.1-mini"


def two_models() -> list[Observation]:
    """Two S2S models on the spoken questions: a third of the first's replies wrong, a quarter of the other's."""
    return seeded() + seeded(OTHER, wrong=lambda clip, tick: clip % 4 == 0)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.e2e)])
def store_of(request, tmp_path) -> str:
    with holding(request.param, two_models(), tmp_path) as url:
        yield url


def _mean_mos(rows: list[Observation]) -> float:
    scored = [r.quality_mos for r in rows if r.status == "ok" and r.quality_mos is not None]
    return sum(scored) / len(scored)


def test_every_reader_shows_the_answer_accuracy_of_the_stored_rows(store_of: str, cli):
    """The CLI board (fitted and --wide), the web board's ranked and all-metrics tables, the API's JSON,
    the board's CSV, and the S2S comparison page with its API and CSV: each model's answer accuracy as
    counted by hand from the rows, with the interval metrics.series gives it, MOS beside it."""
    import csv
    import io
    import re

    from starlette.testclient import TestClient

    from voxwatch.boards.leaderboard import build
    from voxwatch.metrics.published import rounded
    from voxwatch.web.app import create_app

    rows = two_models()
    hand = {m: by_hand([r for r in rows if r.model_id == m]) for m in (S2S, OTHER)}
    assert hand[S2S] == (16 / 24, 24) and hand[OTHER] == (18 / 24, 24)
    intervals = {r.model_id: r.answer_accuracy_ci for r in build(rows) if r.metric == "v2v_ms"}

    code, fitted, err = cli("leaderboard", "--board", "s2s", "--store", store_of)
    assert code == 0, err
    header = next(line for line in fitted.splitlines() if line.lstrip().startswith("rank"))
    assert re.split(r"\s{2,}", header.strip()) == ["rank", "model", "metric", "n", "p50 [95% CI]", "failed",
                                                   "answer accuracy", "price", "MOS"]
    for model, (share, n) in hand.items():
        low, high = intervals[model]
        line = next(line for line in fitted.splitlines() if model in line)
        assert f"{100 * share:.1f}% [{100 * low:.1f}, {100 * high:.1f}]" in line, line
        assert f"{_mean_mos([r for r in rows if r.model_id == model]):.2f}" in line
    assert "24 replies (answer accuracy)" in fitted and "answer accuracy (S2S) is the share" in fitted
    code, wide, err = cli("leaderboard", "--board", "s2s", "--wide", "--store", store_of)
    assert code == 0, err
    assert "answer accuracy [95% CI]" in wide and "pooled WER" not in wide
    for model, (share, n) in hand.items():
        low, high = intervals[model]
        assert f"{100 * share:.1f}% [{100 * low:.1f}%, {100 * high:.1f}%] ({n} replies)" in wide

    with TestClient(create_app(store_of)) as client:
        api = client.get("/api/v1/leaderboard", params={"board": "s2s"}).json()["rows"]
        table = list(csv.DictReader(io.StringIO(client.get("/board/s2s", params={"format": "csv"}).text)))
        page = client.get("/board/s2s").text
        compared = client.get("/api/v1/compare/s2s").json()
        compare_csv = list(csv.DictReader(io.StringIO(client.get("/api/v1/compare/s2s", params={"format": "csv"}).text)))
        compare_page = client.get("/compare/s2s").text

    for model, (share, n) in hand.items():
        mine = [r for r in api if r["model_id"] == model]
        assert mine and all(r["answer_accuracy"] == rounded(share, "fraction") and r["answer_clips"] == n
                            and r["answer_accuracy_ci"] == rounded(list(intervals[model]), "fraction") for r in mine)
        assert all(float(r["answer_accuracy"]) == pytest.approx(share) for r in table if r["model_id"] == model)
        ranked = re.search(rf'<tr data-model="{re.escape(model)}".*?</tr>', page, re.S).group(0)
        assert re.search(rf'data-field="answer_accuracy" data-value="([^"]+)">{100 * share:.1f}%</td>', ranked)
        assert f'data-field="quality_mos" data-value="{_mean_mos([r for r in rows if r.model_id == model])}"' in ranked
        everything = re.search(rf'<tbody class="series" data-model="{re.escape(model)}".*?</tbody>', page, re.S).group(0)
        assert f'{100 * share:.1f}%<br><small>{n} replies</small>' in everything
        low, high = intervals[model]
        assert f'data-field="answer_accuracy_ci" class="ci">[{100 * low:.1f}%, {100 * high:.1f}%]' in everything
    assert "no scored words" not in page and "answer accuracy" in page

    assert compared["accuracy"] == {"figure": "answer_accuracy", "title": "answer accuracy", "unit": "fraction",
                                    "lower_is_better": False}
    assert compared["use_case"]["id"] == "questions" and compared["use_case"]["datasets"] == [QUESTIONS]
    lines = {r["model_id"]: r for r in compared["rows"]}
    for model, (share, n) in hand.items():
        r = lines[model]
        assert (r["accuracy"], r["accuracy_n"]) == (rounded(share, "fraction"), n)
        assert r["quality_mos"] == rounded(_mean_mos([x for x in rows if x.model_id == model]), "fraction")
        assert r["quality_n"] == 25  # every ok reply has a MOS, the unscored answer too
        assert f'data-value="{r["accuracy"]}">{100 * r["accuracy"]:.2f}%' in compare_page
        assert float(next(x for x in compare_csv if x["model_id"] == model)["accuracy"]) == r["accuracy"]
    assert "answer accuracy" in compare_page and "beside the answer accuracy" in compare_page


# --- end to end: `voxwatch run` against the emulator ------------------------------------------------

def _exported(url: str) -> list[Observation]:
    out = run_cli("export", "--format", "jsonl", "--store", url).stdout
    return [from_record(json.loads(line)) for line in out.splitlines()]


@pytest.fixture(params=["sqlite", "postgres"])
def fresh_store(request, tmp_path):
    """A store of the parameter's kind, twice: where `voxwatch run` measures, and where its rows are read."""
    if request.param == "sqlite":
        yield lambda name: f"sqlite:///{tmp_path / name}.sqlite"
    else:
        with contextlib.ExitStack() as stack:
            yield lambda name: stack.enter_context(fresh_postgres())


@pytest.mark.e2e
def test_voxwatch_run_against_the_emulator_scores_the_answers_and_the_readers_show_them(catalog, fresh_store, tmp_path):
    """Two `voxwatch run` ticks of OpenAI Realtime on the spoken questions against its emulator (as
    `voxwatch emulate` serves it): every reply heard by Whisper tiny.en and checked, stored on SQLite and
    Postgres. The emulator's rows never reach a board, so the same rows, stored as a vendor's would be,
    are read back: the board, the API and the comparison page show the accuracy counted from them."""
    from starlette.testclient import TestClient

    from voxwatch.metrics.published import rounded
    from voxwatch.web.app import create_app

    measured = fresh_store("measured")
    with serve("openai", scenarios(catalog, 20)) as emulator:
        env = {"VOXWATCH_OPENAI_BASE_URL": emulator, "VOXWATCH_OPENAI_API_KEY": "emulator-key",
               "VOXWATCH_RUN_RECORDINGS_DIR": str(tmp_path / "recordings")}
        for seed in ("5", "6"):
            run_cli("run", "--models", S2S, "--datasets", QUESTIONS, "--sample-size", "3", "--seed", seed, "--store",
                    measured, "--no-progress", "--wide", env=env)
    rows = _exported(measured)
    questions = {c.id: (i, c) for i, c in enumerate(catalog.load(QUESTIONS).clips)}
    assert len(rows) == 6 and len({r.run_id for r in rows}) == 2 and all(r.emulator for r in rows)
    for r in rows:
        index, clip = questions[r.clip_id]
        assert (r.status, r.instrument_id, r.instrument_error) == ("ok", INSTRUMENT, None), r.reason
        assert r.hypothesis and r.answer_correct is answer_correct(clip.answers, r.hypothesis)
        if (index + 1) % WRONG_EVERY == 0:  # the emulator said no answer
            assert r.answer_correct is False
    share, n = by_hand(rows)
    assert n == 6

    shown = fresh_store("shown")
    _stored(shown, [replace(r, emulator=False) for r in rows])  # as a vendor's rows: what the readers read
    printed = run_cli("leaderboard", "--board", "s2s", "--format", "json", "--store", shown).stdout
    [board] = [r for r in json.loads(printed)["rows"] if r["metric"] == "v2v_ms"]
    assert (board["answer_accuracy"], board["answer_clips"]) == (rounded(share, "fraction"), 6)
    with TestClient(create_app(shown)) as client:
        api = client.get("/api/v1/leaderboard", params={"board": "s2s"}).json()["rows"]
        page = client.get("/board/s2s").text
        compared = client.get("/api/v1/compare/s2s").json()
        compare_page = client.get("/compare/s2s").text
    assert all(r["answer_accuracy"] == rounded(share, "fraction") for r in api)
    assert f'data-field="answer_accuracy" data-value="{share}">{100 * share:.1f}%</td>' in page
    [line] = compared["rows"]
    assert (line["accuracy"], line["accuracy_n"], compared["use_case"]["id"]) == (rounded(share, "fraction"), 6, "questions")
    assert f'{100 * line["accuracy"]:.2f}%' in compare_page
