"""WER at the agent's deadline (METHOD "WER at the deadline"): the definition on hand-built timelines,
the harness's per-row word errors against an emulated streaming STT whose partial/final schedule is
injected (so the transcript at each deadline is known exactly), and the rows in both stores."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import pytest
from support.bench import quick_run
from support.contract import KEY, measure_stream, serve, starter_clean

from voxwatch.foundation.events import CHUNK_SENT, FINAL, PARTIAL, Event, Timeline
from voxwatch.foundation.observation import FIELDS, Observation, from_record
from voxwatch.metrics.deadline_wer import (DEADLINES_MS, ERRORS_FIELDS, SEGMENT, TRANSCRIPT, errors_at_deadlines,
                                           errors_field, transcript_at, transcripts_at_deadlines)
from voxwatch.foundation.series_key import SeriesKey
from voxwatch.metrics.series import SeriesData, series_rows
from voxwatch.metrics.specs import for_protocol
from voxwatch.metrics.wer import word_errors
from voxwatch.providers.emulators.scenario import Scripted, STTScenario
from voxwatch.store import open_store
from voxwatch.store.connection import connect

MS = 1_000_000
RATE = 16000


def _timeline(*results: tuple[float, str, str], chunk_ms: int = 20, chunks: int = 100, late_ms: float = 0.0) -> Timeline:
    """Chunks of `chunk_ms` written on time from t = 0 (each from chunk 50 on `late_ms` late), then the
    results (ms, kind, text)."""
    n = RATE * chunk_ms // 1000
    events = [Event(CHUNK_SENT, int((k * chunk_ms + (late_ms if k >= 50 else 0)) * MS), n_samples=n)
              for k in range(chunks)]
    events += [Event(kind, int(at * MS), text=text) for at, kind, text in results]
    return Timeline(events=events)


REFERENCE = "please book a table for two at seven"
SCHEDULE = ((900, PARTIAL, "please"), (1100, PARTIAL, "please book a"), (1150, FINAL, "please book a"),
            (1300, PARTIAL, "table"), (1600, PARTIAL, "table for two at"), (1900, FINAL, "table for two at seven"))
SPEECH_END = 1.2  # s: the deadlines are at 1200, 1450, 1700 and 2200 ms


def test_the_transcript_at_each_deadline_is_the_finals_then_the_partial_after_them():
    texts = transcripts_at_deadlines(_timeline(*SCHEDULE), SPEECH_END, sample_rate=RATE)
    assert texts == {0: "please book a", 250: "please book a table", 500: "please book a table for two at",
                     1000: "please book a table for two at seven"}
    parts = errors_at_deadlines(_timeline(*SCHEDULE), SPEECH_END, REFERENCE, "en", sample_rate=RATE)
    assert [parts[d].errors for d in DEADLINES_MS] == [5, 4, 1, 0]
    assert {p.ref_words for p in parts.values()} == {8}  # the clip's reference, as the final's


def test_a_partial_before_the_last_final_is_dropped_and_a_final_wins_a_tie():
    events = _timeline((100, PARTIAL, "hello"), (200, FINAL, "hello world"), (200, PARTIAL, "stale")).events
    assert transcript_at(events, 150 * MS) == "hello"
    assert transcript_at(events, 200 * MS) == "hello world"  # the partial at the final's stamp was its segment's
    assert transcript_at(events, 99 * MS) == ""  # nothing yet: every reference word deleted
    # a final stamped before a partial marked ahead of it (an adapter that holds a word) is still in time order
    held = [Event(PARTIAL, 300 * MS, text="next"), Event(FINAL, 250 * MS, text="hello")]
    assert transcript_at(held, 400 * MS) == "hello next"


def test_an_empty_final_closes_the_segment_its_partial_was():
    events = _timeline((100, PARTIAL, "a b"), (150, FINAL, "a b c"), (200, PARTIAL, "d"), (300, FINAL, "")).events
    assert transcript_at(events, 250 * MS) == "a b c d"
    assert transcript_at(events, 300 * MS) == "a b c"


def test_a_partial_that_holds_the_whole_transcript_stands_alone():
    events = _timeline((100, FINAL, "hello"), (150, PARTIAL, "hello world"), (200, FINAL, "world")).events
    assert transcript_at(events, 160 * MS, TRANSCRIPT) == "hello world"
    assert transcript_at(events, 160 * MS, SEGMENT) == "hello hello world"  # what reading it as a segment would do
    assert transcript_at(events, 120 * MS, TRANSCRIPT) == "hello"
    assert transcript_at(events, 250 * MS, TRANSCRIPT) == "hello world"
    with pytest.raises(ValueError, match="partial scope"):
        transcript_at(events, 0, "words")


def test_each_streaming_adapter_says_what_its_partials_hold():
    """Soniox's PARTIAL is every final token so far and the pending ones; every other adapter's is its
    segment's interim text (METHOD "WER at the deadline")."""
    from voxwatch.providers.stt.deepgram import DeepgramSTT
    from voxwatch.providers.stt.soniox import SonioxSTT

    assert SonioxSTT.partial_scope == TRANSCRIPT
    assert getattr(DeepgramSTT, "partial_scope", SEGMENT) == SEGMENT


def test_the_deadline_moves_with_the_chunk_that_carried_the_end_of_speech():
    """TTFS's anchor: a chunk written 200 ms late (and those after it) moves the end of speech with it."""
    late = _timeline(*SCHEDULE, late_ms=200.0)
    assert transcripts_at_deadlines(late, SPEECH_END, sample_rate=RATE)[0] == "please book a table"


def test_a_series_pools_the_rows_scored_at_the_deadlines_as_pooled_wer():
    """metrics.series: sum(S + D + I at D) / sum(N) over the ok rows scored there (a row stored before it
    was measured, or a failed row, counts in none), n/a under 5 such rows, with pooled WER's interval."""
    key = SeriesKey("stt", "m", "d", "r", "17", "stt-stream", "")
    n = 8
    statuses = ["ok"] * n + ["timeout"]
    at_0 = [4, 3, 2, 6, 1, 0, None, None, None]  # two ok rows were not scored at the deadlines
    data = SeriesData(statuses=statuses, utterances=[f"u{i % 3}" for i in range(n + 1)],
                      ticks=[f"t{i % 2}" for i in range(n + 1)],
                      values={m.name: [300.0] * n + [None] for m in for_protocol("stt-stream", headline_only=True)},
                      errors=[1] * n + [None], words=[10] * n + [None], errors_at_0ms=at_0,
                      errors_at_250ms=[0] * 6 + [None] * 3, errors_at_500ms=[0] * 6 + [None] * 3,
                      errors_at_1000ms=[0] * 6 + [None] * 3)
    row = series_rows(key, data)[0]
    assert row.deadline_clips == 6 and row.wer_at_0ms == pytest.approx(16 / 60) and row.wer_at_1000ms == 0
    assert row.pooled_wer == pytest.approx(8 / 80)  # the final's, over every scored row
    assert row.wer_at_0ms_ci is not None and row.wer_at_0ms_ci[0] < 16 / 60 < row.wer_at_0ms_ci[1]
    few = replace(data, errors_at_0ms=[1] * 4 + [None] * 5)
    assert series_rows(key, few)[0].wer_at_0ms is None  # under MIN_N rows scored at the deadline
    one_tick = replace(data, ticks=["t"] * (n + 1))
    assert series_rows(key, one_tick)[0].wer_at_0ms_ci is None  # one tick cannot show how ticks vary
    batch = replace(data, errors_at_0ms=(), errors_at_250ms=(), errors_at_500ms=(), errors_at_1000ms=())
    assert series_rows(key, batch)[0].deadline_clips == 0 and series_rows(key, batch)[0].wer_at_0ms is None


# --- the harness against an emulated streaming STT with an injected schedule ---

MARGIN_MS = 125.0  # every scripted result is this far from every deadline: a busy machine's lateness stays inside it
LATE = (Scripted(-200, False, 2), Scripted(125, False, 4), Scripted(375, True, 5), Scripted(750, False, 7),
        Scripted(1300, True, None))
"""Finalises late: half the words at 0 ms, the last segment's final 1.3 s after the end of speech."""
EARLY = (Scripted(-400, False, 3), Scripted(-150, True, None))
"""Finalises before the end of speech."""
SPLIT = (Scripted(-300, True, 3), Scripted(-125, False, 6), Scripted(125, True, 6), Scripted(625, True, None))
"""Three segments, the last word's final only at 625 ms."""


def test_the_schedules_keep_their_margin_from_every_deadline():
    for script in (LATE, EARLY, SPLIT):
        assert min(abs(s.at_ms - d) for s in script for d in DEADLINES_MS) >= MARGIN_MS


@pytest.fixture(scope="module")
def clip():
    ds, clips = starter_clean()
    return ds, clips["u044"]  # "I would like to speak to a person.": 8 words, speech ends at 1.95 s


def _with_error(text: str) -> str:
    words = text.split()
    words[1] = "could"  # one substitution in the final, so the final's WER is not 0
    return " ".join(words)


@pytest.mark.realtime
@pytest.mark.parametrize("script", [LATE, EARLY, SPLIT], ids=["late", "early", "split"])
def test_each_rows_errors_at_a_deadline_are_the_injected_transcripts(monkeypatch, clip, script):
    ds, c = clip
    transcript = _with_error(c.text)
    scenario = STTScenario(transcript=transcript, speech_start_s=c.speech_start, speech_end_s=c.speech_end,
                           api_key=KEY, script=script)
    with serve("deepgram", scenario) as url:
        monkeypatch.setenv("VOXWATCH_DEEPGRAM_BASE_URL", url)
        monkeypatch.setenv("VOXWATCH_DEEPGRAM_API_KEY", KEY)
        measure_stream("deepgram/nova-3", ds, c)  # warm-up
        row = measure_stream("deepgram/nova-3", ds, c).row
    assert row.status == "ok", row.reason
    truth = {d: word_errors(c.text, scenario.script_text_at(transcript, d), "en").errors for d in DEADLINES_MS}
    assert {d: getattr(row, errors_field(d)) for d in DEADLINES_MS} == truth
    assert row.hypothesis == transcript and row.substitutions + row.deletions + row.insertions == 1
    if script is LATE:  # the late finaliser's transcript at 0 and 250 ms is worse than its final
        assert truth[0] > truth[250] > truth[1000] > 1


# --- stored ---

def test_the_fields_are_declared_once_and_checked():
    assert set(ERRORS_FIELDS) <= set(FIELDS)
    record = {"run_id": "r", "model_id": "m", "dataset": "d", "clip_id": "c", "attempt": 1, "board": "stt",
              "vendor": "v", "protocol": "streaming", "region": "x", "started_at": 1.0, "status": "ok",
              "errors_at_250ms": 3}
    assert from_record(record).errors_at_250ms == 3
    with pytest.raises(ValueError, match="errors_at_0ms: expected at least 0"):
        from_record({**record, "errors_at_0ms": -1})
    with pytest.raises(ValueError, match="errors_at_500ms: expected an integer"):
        from_record({**record, "errors_at_500ms": 1.5})


def _row(errors: dict[str, int | None]) -> Observation:
    return Observation(run_id="run-deadline", model_id="deepgram/nova-3", dataset="stt-starter-clean", clip_id="u044",
                       attempt=1, board="stt", vendor="deepgram", protocol="streaming", region="test",
                       started_at=1_800_000_000.0, status="ok", ref_words=8, substitutions=1, deletions=0,
                       insertions=0, **errors)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_both_stores_keep_a_rows_errors_at_each_deadline(kind, tmp_path, postgres_store_url):
    url = f"sqlite:///{tmp_path / 'v.sqlite'}" if kind == "sqlite" else postgres_store_url
    stored = _row({"errors_at_0ms": 6, "errors_at_250ms": 4, "errors_at_500ms": 2, "errors_at_1000ms": None})
    store = open_store(url)
    try:
        store.add([stored])
        back = next(r for r in store.observations() if r.run_id == stored.run_id)
    finally:
        store.close()
    assert dataclasses.asdict(back) == dataclasses.asdict(stored)


def test_migration_22_adds_the_columns_to_the_fact_table(postgres_store_url):
    with connect(postgres_store_url) as conn:
        assert conn.execute("SELECT 1 FROM schema_migrations WHERE version = 22").fetchone() is not None
        have = {c for (c,) in conn.execute("SELECT column_name FROM information_schema.columns "
                                           "WHERE table_name = 'obs_facts'")}
    assert set(ERRORS_FIELDS) <= have


@pytest.mark.realtime
def test_the_benchmark_runs_and_meets_its_targets():
    """benchmarks/deadline_wer.py --quick, so it cannot rot: three injected schedules, each stream's
    errors at every deadline exactly the truth, and the late finaliser worse at 0 and 250 ms."""
    _, out = quick_run("deadline_wer", timeout_s=300)
    assert out["wer_at_deadline_exact_target_met"] is True and out["late_finaliser_worse_target_met"] is True, out
    late = out["results"]["late final"]
    assert late["streams"] == late["exact"] == 1 and late["wer_at"]["0"]["truth"] > late["final_wer"]
