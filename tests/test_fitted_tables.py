"""Every table the CLI prints fits 160 columns by default (issue #40): the leaderboard and the paired
comparisons of a store with many models and long ids (a cascade's, Gemini's preview), and the
listings; `--wide` still prints every column, each cell whole, as before. The fitted board keeps
every rank as the wide one has it, and a wrapped id is the whole id, cut where its parts join."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from support.compare_seed import ROWS
from support.processes import cli_in_process
from support.web_seed import sqlite_store
from voxwatch.boards.listing import WIDTH, fitted, wrapped
from voxwatch.metrics import METHOD_VERSION

CASCADE = "cascade/deepgram/nova-3+openai/gpt-4.1-mini-2025-04-14+cartesia/sonic-3.5-2026-05-04"
PREVIEW = "gemini/gemini-2.5-flash-native-audio-preview-12-2025"
WIDE_ONLY = ("mean", "p95", "max", "dataset", "region", "method", "errors", "timeouts", "inaudible")


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    """The comparison pages' store (four models a board, two datasets, six ticks, a superseded
    method's and an emulator's rows) with two more S2S models of long ids."""
    rows = list(ROWS)
    rows += [replace(r, model_id=CASCADE, vendor="cascade") for r in ROWS if r.model_id == "gemini/gemini-3.8-live"]
    rows += [replace(r, model_id=PREVIEW, vendor="gemini") for r in ROWS if r.model_id == "openai/gpt-realtime-2.1-mini"]
    return sqlite_store(tmp_path_factory.mktemp("fitted"), rows)


def _cli(*args: str) -> str:
    proc = cli_in_process(*args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def _header(text: str, board: str) -> list[str]:
    lines = text.splitlines()
    title = next(i for i, line in enumerate(lines) if line.startswith(f"{board} board - "))
    return re.split(r"\s{2,}", lines[title + 1].strip())


def _ranks(text: str, wide: bool) -> dict[tuple[str, str], str]:
    """(model, dataset) -> rank of each series whose id is whole on its line."""
    found, dataset = {}, None
    for line in text.splitlines():
        if line.startswith("-- "):
            dataset = line[3:].split(",")[0]
        elif re.match(r"^ {0,4}(\d+(?:-\d+)?|-) {2}\S", line):
            cells = re.split(r"\s{2,}", line.strip())
            model = re.sub(r" \(v\d+\)$", "", cells[1])  # a superseded method's series, fitted
            if not model.endswith("+"):  # a wrapped id's first piece
                found[(model, cells[2] if wide else dataset)] = cells[0]
    return found


def test_the_leaderboard_fits_160_columns_and_wide_keeps_every_column(store: str):
    fitted_board, wide = _cli("leaderboard", "--store", store), _cli("leaderboard", "--store", store, "--wide")
    assert _widest(fitted_board) <= WIDTH < _widest(wide)
    for board in ("STT", "TTS", "S2S"):
        assert not set(WIDE_ONLY) & set(_header(fitted_board, board))
        assert set(WIDE_ONLY) <= set(_header(wide, board))
    assert {"rank", "model", "metric", "n", "p50 [95% CI]", "failed", "pooled WER", "price"} <= set(_header(fitted_board, "STT"))
    assert "MOS" in _header(fitted_board, "S2S") and "pooled WER" not in _header(fitted_board, "S2S")
    assert " words)" in wide and " words)" not in fitted_board  # the count moves to a line under the board
    assert re.search(r"counted per series: \d+-\d+ words \(WER\)", fitted_board)
    assert f"acme/superseded-stt (v{int(METHOD_VERSION) - 1})" in fitted_board  # a superseded method's series says so
    assert "; region us-east" in fitted_board and "$10 in / $20 out per 1M audio tokens" in fitted_board
    lines = fitted_board.splitlines()
    first = next(i for i, line in enumerate(lines) if line[7:].startswith("cascade/"))
    whole, k = "", first
    while len(whole) < len(CASCADE):
        whole, k = whole + lines[k][7:].split()[0], k + 1
    assert whole == CASCADE and k - first >= 2 and lines[first][7:].split()[0].endswith("+")  # cut after a '+'
    assert "connect_ms" in lines[first + 1]  # its second piece beside its series' next metric row
    ranks, wide_ranks = _ranks(fitted_board, wide=False), _ranks(wide, wide=True)
    assert len(ranks) >= 30 and ranks.items() <= wide_ranks.items()  # the same ranks, only laid out narrower
    assert {"1", "2", "3", "4", "-"} <= set(ranks.values())


def test_the_comparisons_fit_160_columns_and_wide_names_who_is_ahead(store: str):
    fitted_pairs, wide = _cli("compare", "--store", store), _cli("compare", "--store", store, "--wide")
    assert _widest(fitted_pairs) <= WIDTH < _widest(wide)
    assert " a ahead" in fitted_pairs or " b ahead" in fitted_pairs
    assert re.search(r"\S+ ahead of \S+", wide) and not re.search(r"\S+ ahead of \S+", fitted_pairs)
    assert f"(method v{METHOD_VERSION}; scored by faster-whisper/tiny.en@1.2.1)" in fitted_pairs
    assert re.search(r"^pooled_wer .* [+-]\d+\.\d \[[+-]\d+\.\d, [+-]\d+\.\d\] pts ", fitted_pairs, re.M)
    assert "deepgram/nova-3 " in _cli("compare", "--store", store, "--model", "deepgram/nova-3")


@pytest.mark.parametrize("args", [("providers", "list"), ("datasets", "list"), ("scenarios", "personas"),
                                  ("datasets", "fetch"), ("preference", "prompts", "list")])
def test_every_listing_fits_160_columns_and_wide_prints_each_cell_whole(args: tuple[str, ...]):
    fitted_list, wide = _cli(*args), _cli(*args, "--wide")
    assert _widest(fitted_list) <= WIDTH < _widest(wide)
    words = lambda text: sorted(re.findall(r"[A-Za-z]{4,}", text))  # noqa: E731 - nothing lost but columns chosen away
    if args != ("providers", "list"):
        assert words(fitted_list) == words(wide)


def test_the_registry_listing_fitted_names_the_columns_chosen_and_wide_every_one():
    fitted_list, wide = _cli("providers", "list"), _cli("providers", "list", "--wide")
    header = lambda text: re.split(r"\s{2,}", next(ln for ln in text.splitlines() if ln.startswith("id ")))  # noqa: E731
    assert header(fitted_list) == ["id", "protocol", "status", "key", "successor", "session limit", "price"]
    assert {"board", "checked", "deprecated", "shutdown", "price checked", "source file"} <= set(header(wide))


def test_a_wrapped_cell_is_cut_where_its_parts_join_and_flows_beside_its_rows():
    assert wrapped(CASCADE, 34) == ["cascade/deepgram/nova-3+", "openai/gpt-4.1-mini-2025-04-14+",
                                    "cartesia/sonic-3.5-2026-05-04"]
    assert wrapped("unset (VOXWATCH_ASSEMBLYAI_API_KEY)", 30) == ["unset", "(VOXWATCH_ASSEMBLYAI_API_KEY)"]
    assert wrapped("abcdefghijklmnopqrstuvwxyz", 10) == ["abcdefghij", "klmnopqrst", "uvwxyz"]
    table = [("rank", "model", "metric"), "-- a ranking", ("1", CASCADE, "v2v_ms"), ("", "", "connect_ms"),
             ("2", "short/id", "v2v_ms")]
    lines = fitted(table, 50, right={0}, rule=True, flow=True, flexible={1}, least={0: 5})
    assert max(map(len, lines)) <= 50 and lines[2] == "-- a ranking"
    assert [line.split()[-1] for line in lines[3:7]] == ["v2v_ms", "connect_ms", "cartesia/sonic-3.5-2026-05-04",
                                                         "v2v_ms"]
    assert lines[0].startswith(" rank  ")  # the rank column is 5 wide: a range such as '1-4' fits
    assert fitted(table, None) == fitted(table, 10_000)  # unfitted: every cell whole
