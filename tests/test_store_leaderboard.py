"""The SQLite store (idempotent, lossless) and the leaderboard built from it."""

import time
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from voxwatch.boards import leaderboard
from voxwatch.store.comparisons import compute
from voxwatch.metrics import METHOD_VERSION
from voxwatch.foundation.observation import Observation, RunRecord
from voxwatch.foundation.store_url import StoreError
from voxwatch.store import open_store


def row(clip: str, status: str = "ok", ttfs: float | None = 100.0, s: int = 0, ref: int = 10, **kw) -> Observation:
    base = Observation(run_id="r1", model_id="pocketsphinx/en-us@5.1.1", dataset="stt-starter-clean", clip_id=clip,
                       attempt=1, board="stt", vendor="pocketsphinx", protocol="stt-stream", region="local",
                       started_at=time.time(), status=status, ttfs_ms=ttfs if status == "ok" else None,
                       first_partial_ms=50.0 if status == "ok" else None, substitutions=s, deletions=0,
                       insertions=0, ref_words=ref if status == "ok" else None, method_version="2",
                       hypothesis="some words", reference="some words", emulator=False)
    return replace(base, **kw)


def test_rows_round_trip_and_duplicates_are_not_counted_twice(tmp_path: Path):
    store = open_store(f"sqlite:///{tmp_path}/s.sqlite")
    rows = [row("a", s=1), row("b", connection_reused=True), row("c", status="timeout", reason="no final")]
    assert store.add(rows) == 3
    assert store.add(rows[:2]) == 0  # a redelivered write changes nothing
    assert store.add([replace(rows[0], attempt=2)]) == 1  # a retry is a new attempt row
    back = list(store.observations())
    assert len(back) == 4
    assert [asdict(r) for r in back if r.attempt == 1] == [asdict(r) for r in rows]
    assert [r.connection_reused for r in back if r.attempt == 1] == [None, True, None]
    store.close()


def test_runs_are_recorded(tmp_path: Path):
    store = open_store(f"sqlite:///{tmp_path}/s.sqlite")
    run = RunRecord(run_id="r1", started_at=1.0, region="local", seed=3)
    store.start_run(run)
    run.status, run.rows = "succeeded", 4
    store.finish_run(run)
    assert [(r.run_id, r.status, r.rows) for r in store.runs()] == [("r1", "succeeded", 4)]


def test_an_unusable_store_path_is_a_clear_error(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot open the SQLite store"):
        open_store(f"sqlite:///{blocker}/sub/s.sqlite")
    with pytest.raises(StoreError, match="unsupported store URL"):
        open_store("mysql://localhost/x")


def test_leaderboard_statistics_error_rate_and_pooled_wer():
    rows = [row(f"c{i}", ttfs=float(100 * (i + 1)), s=i % 2, ref=10, run_id=f"r{i % 2}") for i in range(6)]
    rows += [row("t1", status="timeout"), row("e1", status="error")]
    rows += [row("emu", ttfs=1e6, emulator=True)]  # never shown
    single_tick = leaderboard.build(replace(r, run_id="r1") for r in rows)
    assert single_tick[0].p50 is not None and single_tick[0].p50_ci is None  # one tick: no interval
    rows += [row(f"v1-{i}", method_version="1") for i in range(5)]  # never pooled with v2
    board = leaderboard.build(rows)
    v2 = {r.metric: r for r in board if r.method_version == "2"}
    ttfs = v2["ttfs_ms"]
    assert ttfs.n == 6 and ttfs.p50 == pytest.approx(350.0) and ttfs.max == 600.0
    assert ttfs.mean == pytest.approx(350.0) and ttfs.p95 is None  # a p95 needs 100 values (METHOD)
    assert ttfs.attempts == 8 and ttfs.error_rate == pytest.approx(1 / 8) and ttfs.timeout_rate == pytest.approx(1 / 8)
    assert ttfs.pooled_wer == pytest.approx(3 / 60) and ttfs.wer_words == 60
    assert ttfs.p50_ci[0] <= ttfs.p50 <= ttfs.p50_ci[1] and ttfs.wer_ci[0] <= ttfs.pooled_wer <= ttfs.wer_ci[1]
    assert ttfs.mean_ci[0] <= ttfs.mean <= ttfs.mean_ci[1] and ttfs.protocol == "stt-stream"
    assert {r.method_version for r in board} == {"1", "2"}
    table = leaderboard.format_table(board, "30d", comparisons=compute(rows))
    assert "method v1, v2" in table and "never pooled" in table
    csv_text = leaderboard.format_csv(board)
    assert csv_text.splitlines()[0].startswith("board,model_id,dataset")
    assert len(csv_text.splitlines()) == 1 + len(board)


def test_statistics_do_not_depend_on_row_order_and_exclusions_blank_a_metric():
    from voxwatch.providers.registry import Registry

    rows = [row(f"c{i}", ttfs=float((i * 7919) % 997), s=i % 3, ref=8 + i % 5) for i in range(40)]
    rows += [row(f"x{i}", model_id="openai/gpt-4o-transcribe:realtime", ttfs=100.0 + i) for i in range(6)]
    forward, backward = leaderboard.build(rows, Registry.default()), leaderboard.build(rows[::-1], Registry.default())
    for a, b in zip(forward, backward):
        assert (a.p50_ci, a.p95_ci, a.wer_ci, a.p99) == (b.p50_ci, b.p95_ci, b.wer_ci, b.p99)
        assert a.mean_ci == b.mean_ci
        assert a.mean == pytest.approx(b.mean) and a.std == pytest.approx(b.std)
    excluded = [r for r in forward if r.note]
    assert [(r.model_id, r.metric, r.n, r.p50, r.p50_ci) for r in excluded] == \
        [("openai/gpt-4o-transcribe:realtime", "first_partial_ms", 0, None, None)]


def test_the_cli_table_shows_every_series_with_its_region_method_rates_and_wer():
    """Two regions and two method versions of one model on one dataset: four series, each line with
    its own region, method, rank, error rate and WER (a series never borrows the one above)."""
    rows = []
    now, old = METHOD_VERSION, str(int(METHOD_VERSION) - 1)
    for region, method, base in (("us-east", now, 100.0), ("eu-west", now, 400.0), ("us-east", old, 100.0),
                                 ("eu-west", old, 400.0)):
        for i in range(12):
            rows.append(row(f"{region}{method}c{i}", ttfs=base + i, s=i % 3, region=region, method_version=method,
                            run_id=f"{region}-{method}-{i // 4}", status="error" if i == 5 else "ok"))
    board = leaderboard.build(rows)
    table = leaderboard.format_table(board, "30d", comparisons=compute(rows)).splitlines()
    lines = [ln.split() for ln in table if "ttfs_ms" in ln and not ln.startswith("--")]
    assert "-- stt-starter-clean, streaming STT: ranked by ttfs_ms, paired on the same clips" in table
    assert len(lines) == 4
    shown = {(ln[3], ln[4]): ln for ln in lines}  # rank, model, dataset, region, method, metric, ...
    v_now, v_old = f"v{now}", f"v{old}"
    assert set(shown) == {("us-east", v_now), ("eu-west", v_now), ("us-east", v_old), ("eu-west", v_old)}
    # each region is its own ranking (its ticks are its own: no clip was heard by both), so each leads its own
    assert shown[("us-east", v_now)][0] == "1" and shown[("eu-west", v_now)][0] == "1"
    assert shown[("us-east", v_old)][0] == "-" and shown[("eu-west", v_old)][0] == "-"  # superseded: not ranked
    for ln in lines:
        assert "8.3%" in ln and any(c.endswith("%") and c != "8.3%" for c in ln[-8:])  # error rate 1/12, and WER
    assert f"method v{old} are shown, not ranked" in "\n".join(table)
