"""TTS playback stalls (METHOD "TTS: playback stalls", issue 44): the definition on streams built by
hand (waits after the onset's chunk, at least 1 ms, summed), an emulator told to pause mid-stream for
known times measured through the real adapter within 5 ms of the injected truth per clip, both stores
keeping the row's stall_count and stall_ms (Postgres migration 24, SQLite schema 10), and the series
figures (the share of clips that stalled, the stall totals' p50 and p95) checked against the rows."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pytest

from support.bench import quick_run
from support.both_stores import holding
from support.contract import KEY, emulator_fixture, measure_stream
from support.migration_replay import replay_migration
from support.postgres import fresh_postgres

from voxwatch.datasets.catalog import Catalog, bundled_root
from voxwatch.foundation.observation import Observation, from_record
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.clustered import design, rate_interval
from voxwatch.metrics.series import MIN_N, percentile, series_rows
from voxwatch.metrics.stalls import STALL_MIN_MS, chunk_waits_ms, playout_stalls
from voxwatch.metrics.timeline import AudioStream, heard_at_ns
from voxwatch.providers.emulators.ledger import stall_error_ms, stalls_as_sent
from voxwatch.providers.emulators.scenario import TTSScenario
from voxwatch.store import open_store
from voxwatch.store.series_data import group

RATE = 1000  # samples per second: one sample a millisecond, so offsets read as ms
CHUNK = 20  # samples (ms) per chunk
TOLERANCE_MS = 5.0  # the target: a clip's stored stall total within 5 ms of the injected truth


def stream(arrivals_ms: list[float]) -> AudioStream:
    """A stream of 20 ms chunks arriving at these times (ms)."""
    n = len(arrivals_ms)
    return AudioStream(np.zeros(n * CHUNK), RATE, np.array([int(a * 1e6) for a in arrivals_ms], dtype=np.int64),
                       np.arange(n, dtype=np.int64) * CHUNK)


# --- the definition ---------------------------------------------------------------------------------

def test_a_stream_ahead_of_real_time_never_stalls():
    s = stream([100 + 5 * i for i in range(30)])
    assert playout_stalls(s, onset=0) == playout_stalls(s, onset=300) and playout_stalls(s, 0).count == 0
    assert playout_stalls(s, 0).total_ms == 0.0


def test_each_late_chunk_after_the_onset_waits_by_how_late_it_was():
    # chunk 0 at 100 ms: chunk i is due at 100 + 20 i. Chunk 5 comes 30 ms late (at 230), so playout
    # restarts 30 ms later; chunk 9 is then due at 310 and comes at 322 (12 ms); chunk 12 is 0.4 ms late.
    arrivals = [100 + 5 * i for i in range(5)] + [230, 232, 234, 236, 322, 324, 326, 382.4, 383]
    s = stream(arrivals)
    got = playout_stalls(s, onset=40)  # the onset in chunk 2: every stall above is after it
    assert got.count == 2 and got.total_ms == pytest.approx(42.0, abs=1e-6)
    assert chunk_waits_ms(s)[12] == pytest.approx(0.4, abs=1e-6) and 0.4 < STALL_MIN_MS  # too short to count
    # the model is TTFA's: each wait is how much later a sample after the chunk is heard
    assert heard_at_ns(s, 5 * CHUNK) - heard_at_ns(s, 5 * CHUNK - 1) == pytest.approx((30 + 1) * 1e6)


def test_a_wait_before_the_onset_is_ttfa_not_a_stall():
    arrivals = [100, 105, 300] + [302 + 2 * i for i in range(10)]  # chunk 2 is 160 ms late
    assert playout_stalls(stream(arrivals), onset=45).count == 0  # the onset is in chunk 2: its wait delays TTFA
    late = playout_stalls(stream(arrivals), onset=10)  # the onset in chunk 0: a listener hears the break
    assert late.count == 1 and late.total_ms == pytest.approx(160.0, abs=1e-6)


def test_the_emulators_stall_schedule_stalls_by_its_setting_under_the_same_model():
    """TTSScenario.stalls sends a speech chunk `ms` after its playout time on the emulator's clock:
    the send schedule read through metrics.stalls gives back exactly what was injected."""
    s = TTSScenario(ttfb_ms=50.0, leading_silence_ms=80.0, chunk_ms=20.0, send_every_ms=5.0,
                    stalls=((3, 40.0), (9, 12.5), (14, 0.5)))
    first_speech, n = 4, 34
    times = s.send_times(0, "x", n, first_speech)
    sent = AudioStream(np.zeros(n * CHUNK), RATE, np.array(times, dtype=np.int64), np.arange(n, dtype=np.int64) * CHUNK)
    got = playout_stalls(sent, onset=first_speech * CHUNK)
    assert got.count == s.truth("x")["stall_count"] == 2
    assert got.total_ms == pytest.approx(s.truth("x")["stall_ms"], abs=1e-3) and s.truth("x")["stall_ms"] == 52.5
    assert chunk_waits_ms(sent)[first_speech + 14] == pytest.approx(0.5, abs=1e-3)
    with pytest.raises(ValueError, match="distinct k >= 1"):
        TTSScenario(stalls=((0, 10.0),))


# --- against an emulator, through the real adapter ----------------------------------------------------

cartesia = emulator_fixture("cartesia")
INJECTED = ((3, 40.0), (11, 25.0), (20, 0.3))  # 2 stalls of 65 ms together; the 0.3 ms pause is under the minimum


@pytest.mark.realtime
def test_the_stored_stall_total_is_within_5_ms_of_the_truth(cartesia):
    """Each clip's stall count and total against the reply as the emulator sent it (its send stamp of
    every chunk, read through the same definition: ledger.stalls_as_sent, between the stamps before and
    after each write), within 5 ms; that truth is the injected pauses moved by the emulator's own
    lateness (on a busy machine a late send can add a stall, or move the playout a pause is timed from)."""
    prompts = Catalog([bundled_root()]).load("tts-prompts")
    scenario = TTSScenario(ttfb_ms=60.0, leading_silence_ms=80.0, speech_ms=600.0, api_key=KEY, stalls=INJECTED)
    cartesia(scenario)
    measure_stream("cartesia/sonic-3.5", prompts, prompts.prompts[4])  # warm-up: a process's first stream pays its imports
    for prompt in prompts.prompts[:3]:
        got = measure_stream("cartesia/sonic-3.5", prompts, prompt)
        injected, row = scenario.truth(prompt.text), got.row
        assert row.status == "ok", row.reason
        sent = stalls_as_sent(got.sent, scenario.chunk_ms, onset_chunk=4)  # 80 ms of silence: 4 chunks
        assert row.stall_count == sent.count >= injected["stall_count"] == 2
        error = stall_error_ms(row.stall_ms, got.sent, scenario.chunk_ms, onset_chunk=4)
        assert abs(error) <= TOLERANCE_MS, (row.stall_ms, sent, row.arrival_stamp, row.clock_uncertainty_ms)
    cartesia(replace(scenario, stalls=()))
    row = measure_stream("cartesia/sonic-3.5", prompts, prompts.prompts[0]).row
    assert row.status == "ok" and row.stall_count is not None and row.stall_ms is not None


# --- stored, and the series' figures -------------------------------------------------------------------

def synthesized(i: int, clip: int, tick: int, stall_ms: float | None, model: str = "cartesia/sonic-3.5",
                status: str = "ok", attempt: int = 1) -> Observation:
    """One stored TTS row whose clip stalled for `stall_ms` in all (None: not measured)."""
    ok = status == "ok"
    count = None if stall_ms is None else (0 if stall_ms == 0 else 1 + clip % 2)
    return Observation(
        run_id=f"tick-{tick}", model_id=model, dataset="tts-prompts", clip_id=f"p{clip:02d}", attempt=attempt, board="tts",
        vendor=model.split("/")[0], protocol="tts-stream", region="local", started_at=time.time() - 3600 + 60 * tick + i,
        status=status, reason=None if ok else "no audio", language="en", method_version=METHOD_VERSION,
        ttfa_ms=200.0 + clip if ok else None, ttfb_ms=120.0 + clip if ok else None,
        leading_silence_ms=80.0 if ok else None, connect_ms=10.0 if ok else None,
        stall_count=count if ok else None, stall_ms=stall_ms if ok else None)


def seeded(ticks: int = 3, clips: int = 8) -> list[Observation]:
    """Every clip at every tick; a third of them stalled (by 10 ms per clip number), a failed row, a row unmeasured."""
    rows = [synthesized(i, c, t, 10.0 * c if (c + t) % 3 == 0 else 0.0) for t in range(ticks)
            for i, c in enumerate(range(1, clips + 1))]
    return rows + [synthesized(98, 1, 0, None, status="timeout", attempt=2), synthesized(99, 2, 1, None, attempt=2)]


def test_the_series_figures_are_the_share_that_stalled_and_the_totals_percentiles():
    rows = seeded()
    measured = [r for r in rows if r.status == "ok" and r.stall_ms is not None]
    totals = np.array([r.stall_ms for r in measured])
    [(key, data)] = group(rows).items()
    first = series_rows(key, data)[0]
    assert first.stall_clips == len(measured) == 24
    assert first.stall_share == pytest.approx(float(np.mean(totals > 0))) and 0 < first.stall_share < 1
    assert first.stall_share_ci == rate_interval((totals > 0).astype(float),
                                                 design(utterance=[r.clip_id for r in measured],
                                                        tick=[r.run_id for r in measured]))
    assert first.stall_ms_p50 == percentile(totals, 50) and first.stall_ms_p95 is None  # p95 needs 100 clips
    assert {(r.stall_share, r.stall_ms_p50) for r in series_rows(key, data)} == {(first.stall_share, first.stall_ms_p50)}
    few = [r for r in rows if r.status == "ok" and r.stall_ms is not None][:MIN_N - 1]
    [(key, data)] = group(few).items()
    row = series_rows(key, data)[0]
    assert (row.stall_share, row.stall_clips, row.stall_share_ci, row.stall_ms_p50) == (None, MIN_N - 1, None, None)


def _stored(url: str, rows: list[Observation]) -> dict[tuple[str, str], tuple]:
    store = open_store(url)
    try:
        store.add(rows)
        return {(r.run_id, r.clip_id, r.attempt): (r.stall_count, r.stall_ms) for r in store.observations()}
    finally:
        store.close()


def test_sqlite_keeps_the_stalls_and_their_null(store_url: str):
    rows = seeded()
    expected = {(r.run_id, r.clip_id, r.attempt): (r.stall_count, r.stall_ms) for r in rows}
    assert _stored(store_url, rows) == expected and (None, None) in expected.values()


@pytest.mark.e2e
def test_migration_24_adds_the_columns_and_keeps_older_rows_null():
    rows = seeded()[:3]
    with fresh_postgres() as url:
        before, newer, applied = replay_migration(url, 24, ("stall_count", "stall_ms"), rows,
                                                  lambda r: (r.stall_count, r.stall_ms))
    assert applied == [24] and before == [(None, None)] * 3
    assert newer == [(r.stall_count, r.stall_ms) for r in rows] != before


def test_a_record_without_the_fields_reads_them_null_and_a_negative_one_is_refused():
    record = {k: v for k, v in vars_of(seeded()[0]).items() if k not in ("stall_count", "stall_ms")}
    assert (from_record(record).stall_count, from_record(record).stall_ms) == (None, None)
    with pytest.raises(ValueError, match="stall_ms: expected at least 0"):
        from_record({**record, "stall_ms": -1.0})


def vars_of(row: Observation) -> dict:
    from dataclasses import fields

    return {f.name: getattr(row, f.name) for f in fields(row)}


@pytest.mark.realtime
def test_the_benchmark_runs_quick_and_reads_each_clip_against_its_truth():
    """benchmarks/tts_stream.py --quick: its full run's figures are in docs/ACCURACY.md."""
    _, out = quick_run("tts_stream")
    [(name, result)] = out["results"].items()
    assert name == "cartesia@1" and result["clips"] + result["failed"] + result["excluded"] == 3, result
    assert result["injected"]["n"] == result["as_sent"]["n"] == result["clips"], result
    assert isinstance(out["stall_total_error_target_met"], bool)
    if result["clips"]:  # none when the clock witness excluded every stream of a very busy machine
        assert result["counts_right"] == result["clips"], result  # a missed pause: a count short
        assert out["worst_stall_error_ms"] < 50.0  # a missed pause is off by 15-120 ms


# --- every reader -------------------------------------------------------------------------------------

@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.e2e)])
def stalled_store(request, tmp_path) -> str:
    with holding(request.param, seeded(), tmp_path) as url:
        yield url


def test_the_board_api_and_csv_show_the_stalls_of_the_stored_rows(stalled_store: str):
    """The TTS web board's stalls cell, the leaderboard API's and the board CSV's fields: the series'
    figures as metrics.series computes them from the rows (the Postgres aggregates included)."""
    import csv
    import io
    import re

    from starlette.testclient import TestClient

    from voxwatch.metrics.published import rounded
    from voxwatch.web.app import create_app

    rows = seeded()
    [(key, data)] = group(rows).items()
    expected = series_rows(key, data)[0]
    assert expected.stall_share is not None and expected.stall_ms_p50 is not None
    with TestClient(create_app(stalled_store)) as client:
        api = client.get("/api/v1/leaderboard", params={"board": "tts"}).json()["rows"]
        table = list(csv.DictReader(io.StringIO(client.get("/board/tts", params={"format": "csv"}).text)))
        page = client.get("/board/tts").text
    assert api and all(r["stall_share"] == rounded(expected.stall_share, "fraction") and r["stall_clips"] == 24
                       and r["stall_ms_p50"] == rounded(expected.stall_ms_p50, "ms") and r["stall_ms_p95"] is None
                       and r["stall_share_ci"] == rounded(list(expected.stall_share_ci), "fraction") for r in api)
    assert table and all(float(r["stall_share"]) == pytest.approx(expected.stall_share)
                         and float(r["stall_ms_p50"]) == pytest.approx(expected.stall_ms_p50) for r in table)
    cell = re.search(r'data-field="stall_share" data-value="([^"]+)">([^<]+)<', page)
    assert cell and float(cell.group(1)) == pytest.approx(expected.stall_share)
    assert cell.group(2) == f"{100 * expected.stall_share:.1f}% stalled"
    assert f"stall total per clip: p50 {expected.stall_ms_p50:.1f} ms, p95 n/a" in page
