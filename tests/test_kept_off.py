"""Rows kept off the boards are counted (issue #40): rows measured against an emulator never enter a
series (docs/METHOD.md "Aggregates"), so a reader that finds nothing else says how many there are and
why, instead of a bare "No observations": `voxwatch leaderboard --model X` for a model of emulated
rows only, an empty window that holds emulated rows, and `voxwatch run` after a tick that measured
such rows (or rows the harness could not measure), on SQLite and on Postgres alike."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from support.both_stores import seeded
from support.processes import cli_in_process, run_cli
from voxwatch.boards import kept_off
from voxwatch.foundation.observation import Observation
from voxwatch.metrics import METHOD_VERSION
from voxwatch.store import RowFilter, open_store

DAY = 86400.0
NOW = time.time()
EMULATED = "deepgram/nova-3"  # measured here only against its emulator
REAL = "speechmatics/standard-en"  # measured 20 days ago: on the 30d board, not the 7d one
WHERE = 'docs/OPERATIONS.md "Trying every vendor with no key"'


def _row(model: str, tick: int, clip: int, started_at: float, emulator: bool, status: str = "ok") -> Observation:
    return Observation(run_id=f"{model}-t{tick}", model_id=model, dataset="stt-starter-clean", clip_id=f"c{clip}",
                       attempt=1, board="stt", vendor=model.split("/")[0], protocol="stt-stream", region="eu-west",
                       started_at=started_at + clip, status=status, method_version=METHOD_VERSION, emulator=emulator,
                       ttfs_ms=300.0 + 7 * clip + tick, substitutions=1, deletions=0, insertions=0, ref_words=10)


ROWS = ([_row(EMULATED, t, c, NOW - 3600 - 600 * t, emulator=True) for t in range(8) for c in range(10)]
        + [_row(REAL, t, c, NOW - 20 * DAY - 600 * t, emulator=False) for t in range(3) for c in range(6)])


@pytest.fixture(scope="module")
def stores(postgres_store_url: str, tmp_path_factory) -> dict[str, str]:
    return seeded(ROWS, postgres_store_url, tmp_path_factory.mktemp("kept"))


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_each_store_counts_the_emulated_rows_a_filter_selects(stores: dict[str, str], kind: str):
    store = open_store(stores[kind], create=False)
    try:
        assert store.emulated(RowFilter()) == {EMULATED: 80}
        assert store.emulated(RowFilter(since=NOW - 3600 - 600 * 3.5)) == {EMULATED: 40}  # the last 4 ticks
        assert store.emulated(RowFilter(until=NOW - DAY)) == {}
        assert store.emulated(RowFilter(models=(REAL,))) == {}
        assert store.emulated(RowFilter(since=NOW - 30 * DAY, boards=("stt",), datasets=("stt-starter-clean",),
                                        models=(EMULATED, REAL))) == {EMULATED: 80}
        assert store.emulated(RowFilter(boards=("tts",))) == {}
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_model_measured_only_against_an_emulator_is_said_in_one_line(stores: dict[str, str], kind: str):
    alone = cli_in_process("leaderboard", "--model", EMULATED, "--store", stores[kind])
    assert alone.returncode == 0 and alone.stderr == ""  # stored, so not refused as a typo (Postgres reads aggregates)
    assert alone.stdout == (f"{EMULATED}: 80 observations in the last 30d, all measured against an emulator, which "
                            f"never enter the boards ({WHERE})\n")
    both = cli_in_process("leaderboard", "--model", f"{EMULATED},{REAL}", "--store", stores[kind]).stdout
    assert both.startswith(f"{EMULATED}: 80 observations in the last 30d, all measured against an emulator")
    assert "STT board" in both and REAL in both and "No observations" not in both
    typo = cli_in_process("leaderboard", "--model", "deepgram/nova-2", "--store", stores[kind])
    assert typo.returncode == 2 and "did you mean deepgram/nova-3" in typo.stderr


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_window_of_emulated_rows_only_says_how_many_it_holds(stores: dict[str, str], kind: str):
    week = cli_in_process("leaderboard", "--window", "7d", "--store", stores[kind])
    assert week.returncode == 0 and week.stdout == (
        f"No observations on the boards in the last 7d: the 80 stored were all measured against an emulator, which "
        f"never enter the boards ({WHERE}).\n")
    month = cli_in_process("leaderboard", "--store", stores[kind]).stdout
    assert "STT board" in month and REAL in month and EMULATED not in month


def test_a_runs_line_counts_emulated_and_unmeasurable_rows_and_is_silent_otherwise():
    real = [_row(REAL, 0, c, NOW, emulator=False) for c in range(17)]
    emulated = [_row(EMULATED, 0, c, NOW, emulator=True) for c in range(80)]
    excluded = [_row(REAL, 1, c, NOW, emulator=False, status="excluded") for c in range(3)]
    assert kept_off.run_line(real + [replace(real[0], status="timeout")]) is None  # a failure is on the board
    assert kept_off.run_line(real + emulated + excluded) == (
        "83 of 100 observations are kept off the boards: 80 measured against an emulator (a loopback server: a test "
        f"rig's numbers, never a vendor's; {WHERE}); 3 the harness could not measure (status excluded: not attempts)")
    assert kept_off.run_line(emulated).startswith("80 of 80 observations are kept off the boards: 80 measured against")


@pytest.mark.e2e
def test_a_run_against_an_emulator_says_what_it_kept_off_and_how_many_are_stored(store_url: str):
    from voxwatch.providers.emulators.scenario import TTSScenario
    from voxwatch.providers.emulators.server import serve

    with serve("cartesia", TTSScenario(ttfb_ms=70.0, api_key="emu-key")) as url:
        proc = run_cli("run", "--models", "cartesia/sonic-3.5-2026-05-04", "--datasets", "tts-prompts", "--sample-size", "3",
                       "--store", store_url,
                       "--no-progress", env={"VOXWATCH_CARTESIA_BASE_URL": url, "VOXWATCH_CARTESIA_API_KEY": "emu-key"})
    lines = proc.stdout.splitlines()
    assert "3 of 3 observations are kept off the boards: 3 measured against an emulator (a loopback server" in proc.stdout
    assert (f"No observations on the boards in the last 30d: the 3 stored were all measured against an emulator, "
            f"which never enter the boards ({WHERE}).") in lines
    assert "Run `voxwatch run` first" not in proc.stdout
