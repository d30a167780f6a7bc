"""The CLI's manners (issue #18): --version, help on every command and option, quiet closed pipes."""

from __future__ import annotations

import argparse
import csv
import io
import json
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Iterator

import pytest

from support.processes import REPO, cli_in_process, run_cli
from voxwatch.foundation.store_url import SQLITE, store_kind
from voxwatch import __version__
from voxwatch.cli import PIPE_CLOSED, parser
from voxwatch.metrics import METHOD_VERSION
from voxwatch.foundation.observation import Observation

pytestmark = pytest.mark.e2e

DAY = 86400.0
MODELS = (("pocketsphinx/en-us-5prealpha", "stt", "stt-stream", "ttfs_ms"),
          ("espeak-ng/en-us-1.51", "tts", "tts-stream", "ttfa_ms"))
DATASETS = ("stt-starter-clean", "stt-starter-noisy")


def commands(p: argparse.ArgumentParser, path: tuple[str, ...] = ("voxwatch",)) -> Iterator[
        tuple[tuple[str, ...], argparse.ArgumentParser, str | None]]:
    """Every parser of the tree with its command path and the help its parent lists it with."""
    yield path, p, None
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in action._choices_actions}
            for name, child in action.choices.items():
                for found in commands(child, path + (name,)):
                    yield found if found[1] is not child else (found[0], child, helps.get(name))


def test_every_command_has_a_description_and_every_argument_help():
    seen, missing = 0, []
    for path, p, listed_help in commands(parser()):
        seen += 1
        if len(path) > 1 and not (listed_help and p.description):
            missing.append(" ".join(path))
        missing += [f"{' '.join(path)} {'/'.join(a.option_strings) or a.dest}" for a in p._actions
                    if not a.help and not isinstance(a, argparse._SubParsersAction)]
    assert seen > 40  # the whole tree, the commands other modules register included
    assert {("voxwatch", "alerts", "list"), ("voxwatch", "preference", "board")} <= {c[0] for c in commands(parser())}
    assert missing == []


def test_version_names_the_package_and_the_method():
    out = run_cli("--version").stdout.strip()
    assert out == f"voxwatch {__version__} (method v{METHOD_VERSION})"


def rows(n_per_series: int, now: float) -> list[Observation]:
    """Stored rows over two boards, two datasets and the last 10 days, one a day per series and clip."""
    out = []
    for model_id, board, protocol, metric in MODELS:
        for dataset in DATASETS:
            for i in range(n_per_series):
                out.append(Observation(run_id=f"r{i % 10}", model_id=model_id, dataset=dataset, clip_id=f"c{i}",
                                       attempt=1, board=board, vendor=model_id.split("/")[0], protocol=protocol,
                                       region="us-east", started_at=now - DAY * (i % 10) - 60, status="ok",
                                       method_version=METHOD_VERSION, emulator=False, **{metric: 300.0 + i % 7}))
    return out


@pytest.fixture(scope="module")
def big_store(tmp_path_factory) -> str:
    """A SQLite store of 4 x 1,500 rows (several MB of export: more than a pipe buffers)."""
    folder = tmp_path_factory.mktemp("big")
    url = f"sqlite:///{folder / 'voxwatch.sqlite'}"
    (folder / "rows.jsonl").write_text("".join(json.dumps(asdict(r)) + "\n" for r in rows(1500, time.time())))
    run_cli("ingest", str(folder / "rows.jsonl"), "--store", url)
    return url


@pytest.mark.parametrize("args", [("export",), ("export", "--format", "csv"), ("leaderboard", "--format", "csv"),
                                  ("leaderboard",), ("providers", "list")])
def test_a_closed_pipe_ends_the_command_quietly(big_store: str, args: tuple[str, ...]):
    """`voxwatch ... | head -1` through a real pipe: one line read, the pipe closed, no traceback."""
    store = ("--store", big_store) if args[0] != "providers" else ()
    proc = subprocess.Popen([sys.executable, "-m", "voxwatch.cli", *args, *store], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=300)
    assert "Traceback" not in err and "BrokenPipe" not in err and err == ""
    assert code in (0, PIPE_CLOSED)


def test_the_export_through_head_exits_quietly_with_the_pipe_code(big_store: str):
    """The shell's view: the export is far larger than a pipe holds, so it meets the closed pipe."""
    proc = subprocess.run(["bash", "-o", "pipefail", "-c",
                           f"{sys.executable} -m voxwatch.cli export --store {big_store} | head -1"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.stderr == ""
    assert json.loads(proc.stdout)["dataset"] in DATASETS
    assert proc.returncode == PIPE_CLOSED


def listing_commands() -> list[tuple[str, ...]]:
    """The commands that list things: every `... list`, and those that list under another verb."""
    named = {("scenarios", "personas"), ("preference", "configs")}
    return sorted(path[1:] for path, p, _ in commands(parser())
                  if (path[-1] == "list" or path[1:] in named) and not any(
                      isinstance(a, argparse._SubParsersAction) for a in p._actions))


def test_every_listing_command_offers_table_csv_and_json():
    found = listing_commands()
    assert len(found) >= 9 and ("alerts", "list") in found and ("preference", "raters", "list") in found
    for path in found:
        (p,) = [p for full, p, _ in commands(parser()) if full[1:] == path]
        (fmt,) = [a for a in p._actions if "--format" in a.option_strings]
        assert set(fmt.choices) == {"table", "csv", "json"} and fmt.default == "table", path


NEEDS_STORE = {("alerts", "list"), ("runs", "list"), ("preference", "raters", "list")}


def test_each_listing_says_the_same_rows_as_csv_and_json(postgres_store_url: str):
    run_cli("preference", "raters", "add", "--label", "ana", "--store", postgres_store_url)
    def listed(*args: str) -> str:  # in this process: 36 read-only calls, an interpreter's start each saved
        proc = cli_in_process(*args)
        assert proc.returncode == 0, (args, proc.stderr)
        return proc.stdout

    for path in listing_commands():
        store = ("--store", postgres_store_url) if path in NEEDS_STORE else ()
        as_json = json.loads(listed(*path, "--format", "json", *store))
        text = listed(*path, "--format", "csv", *store)
        header = text.splitlines()[0].split(",")
        as_csv = list(csv.DictReader(io.StringIO(text)))
        assert isinstance(as_json, list) and len(as_json) == len(as_csv), path
        assert all(list(j) == header for j in as_json), path
        assert [{k: "" if v is None else str(v) for k, v in j.items()} for j in as_json] == as_csv, path
        if path not in {("alerts", "list"), ("runs", "list"), ("scenarios", "noise", "list")}:
            # the store holds no alert nor run record, the noise library no recording
            assert as_json, path
        table = listed(*path, *store)  # aligned text, a line for each row (prompts: under their set)
        first = "id" if "id" in header else header[0]
        assert all(any(line.startswith(f"{j[first]}  ") for line in table.splitlines()) for j in as_json), path
    (rater,) = json.loads(run_cli("preference", "raters", "list", "--format", "json",
                                  "--store", postgres_store_url).stdout)
    assert rater["label"] == "ana" and rater["ratings"] == 0


@pytest.fixture(scope="module")
def filtered_stores(tmp_path_factory, postgres_store_url: str) -> tuple[list[Observation], list[str]]:
    """The same 4 x 30 rows (10 days, two boards, two datasets) in a SQLite and a Postgres store."""
    folder = tmp_path_factory.mktemp("filtered")
    stored = rows(30, time.time())
    (folder / "rows.jsonl").write_text("".join(json.dumps(asdict(r)) + "\n" for r in stored))
    urls = [f"sqlite:///{folder / 'voxwatch.sqlite'}", postgres_store_url]
    for url in urls:
        run_cli("ingest", str(folder / "rows.jsonl"), "--store", url)
    return stored, urls


def _keys(found) -> list[tuple]:
    return sorted((r["model_id"], r["dataset"], r["clip_id"]) if isinstance(r, dict) else
                  (r.model_id, r.dataset, r.clip_id) for r in found)


def test_the_store_filters_in_its_sql(filtered_stores):
    from voxwatch.store import RowFilter, open_store

    stored, urls = filtered_stores
    now = time.time()
    only = RowFilter(since=now - 3 * DAY, until=now - DAY, boards=("stt",), datasets=("stt-starter-noisy",))
    expected = [r for r in stored if now - 3 * DAY <= r.started_at < now - DAY and only.keeps(r)]
    assert len(expected) == 6
    for url in urls:
        store = open_store(url, create=False)
        try:
            statements: list[str] = []
            if store_kind(url) == SQLITE:
                store._db.set_trace_callback(statements.append)
            assert _keys(store.observations(only=only)) == _keys(expected)
            assert _keys(store.observations(only=RowFilter(models=("espeak-ng/en-us-1.51",)))) == _keys(
                r for r in stored if r.board == "tts")
        finally:
            store.close()
        if statements:  # SQLite: the span and the sets are in the query, not applied to rows read
            (select,) = [s for s in statements if "dataset IN" in s]
            assert "started_at >=" in select and "started_at <" in select and "board IN ('stt')" in select


def test_export_reads_what_the_filters_select(filtered_stores):
    stored, urls = filtered_stores
    for url in urls:
        lines = run_cli("export", "--store", url, "--since", "2d", "--model", "pocketsphinx/en-us-5prealpha").stdout
        expected = [r for r in stored if r.board == "stt" and r.started_at >= time.time() - 2 * DAY]
        assert _keys(json.loads(line) for line in lines.splitlines()) == _keys(expected) and len(expected) == 12
        day = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 5 * DAY))
        table = list(csv.DictReader(io.StringIO(run_cli("export", "--format", "csv", "--store", url, "--until", day,
                                                        "--dataset", "stt-starter-clean", "--board", "tts").stdout)))
        assert table and all(float(r["started_at"]) < time.time() - 4 * DAY and r["board"] == "tts" for r in table)


def test_the_leaderboard_over_a_span_is_the_statistic_of_its_rows(filtered_stores):
    """Both stores, a span of the user's: the board is metrics/ over the span's rows (leaderboard.build)."""
    from voxwatch.boards import leaderboard

    stored, urls = filtered_stores
    now = time.time()
    expected = leaderboard.format_csv(leaderboard.build(
        [r for r in stored if now - 4 * DAY <= r.started_at and r.dataset == "stt-starter-clean"]))
    for url in urls:
        got = run_cli("leaderboard", "--format", "csv", "--since", "4d", "--dataset", "stt-starter-clean",
                      "--store", url).stdout
        assert got == expected
        doc = json.loads(run_cli("leaderboard", "--format", "json", "--since", "4d", "--until", "1d",
                                 "--model", "espeak-ng/en-us-1.51", "--store", url).stdout)
        assert {r["model_id"] for r in doc["rows"]} == {"espeak-ng/en-us-1.51"} and doc["until"] is not None
        assert {r["n"] for r in doc["rows"] if r["metric"] == "ttfa_ms"} == {9}  # days 1, 2, 3 of each dataset
        table = run_cli("leaderboard", "--model", "espeak-ng/en-us-1.51", "--since", "4d", "--store", url).stdout
        assert "TTS board - since " in table and "STT board" not in table and "pocketsphinx" not in table


@pytest.mark.parametrize("args, message", [
    (("--since", "last tuesday"), "argument --since: 'last tuesday': expected an ISO date or time"),
    (("--board", "video"), "argument --board: 'video': expected comma-separated board names of stt, tts, s2s"),
    (("--since", "1d", "--until", "2d"), "must be before --until")])
@pytest.mark.parametrize("command", ["leaderboard", "export"])
def test_a_bad_filter_is_one_line(command: str, args: tuple[str, ...], message: str, filtered_stores):
    proc = run_cli(command, *args, "--store", filtered_stores[1][0], check=False)
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.splitlines()) == 1


@pytest.mark.parametrize("args, meant", [
    (("--model", "pocketsphinx"), "did you mean pocketsphinx/en-us-5prealpha"),  # a partial id: exact ids only
    (("--model", "espeak-ng/en-us-1.51,foo/bar"), "stored: espeak-ng/en-us-1.51, pocketsphinx/en-us-5prealpha"),
    (("--dataset", "stt-starter-claen"), "did you mean stt-starter-clean")])
@pytest.mark.parametrize("command", [("leaderboard",), ("leaderboard", "--format", "json"), ("compare",), ("export",)])
def test_a_filter_matching_nothing_stored_is_refused_with_the_ids_it_meant(command: tuple[str, ...],
                                                                           args: tuple[str, ...], meant: str,
                                                                           filtered_stores):
    """Every reader with --model/--dataset, both stores: a filter naming nothing stored is exit 2 and
    one line with the nearest stored or registered ids, as `voxwatch run` refuses the same typos, before
    a byte is written (an export once streamed the rows the rest of its filter matched, then said so)."""
    for url in filtered_stores[1]:
        proc = run_cli(*command, *args, "--store", url, check=False)
        assert proc.returncode == 2 and proc.stdout == "", (url, proc.stdout)
        (line,) = proc.stderr.splitlines()
        assert f"{args[0]} {args[1].split(',')[-1]} matches nothing stored" in line and meant in line, line


def test_an_export_refused_for_its_filter_writes_no_file(filtered_stores, tmp_path: Path):
    out = tmp_path / "rows.jsonl"
    proc = run_cli("export", "--model", "pocketsphinx", "--out", str(out), "--store", filtered_stores[1][0], check=False)
    assert proc.returncode == 2 and "did you mean pocketsphinx/en-us-5prealpha" in proc.stderr
    assert not out.exists() and proc.stdout == ""


def test_an_empty_store_is_said_as_before_and_a_typo_refused_there_too(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'empty.sqlite'}"
    run_cli("db", "upgrade", "--store", url)
    registered = run_cli("leaderboard", "--model", "pocketsphinx/en-us@5.1.1", "--store", url)
    assert registered.stdout.startswith("No observations in the last 30d. Run `voxwatch run` first.")
    typo = run_cli("leaderboard", "--model", "pocketsphinx", "--store", url, check=False)
    assert typo.returncode == 2 and "did you mean pocketsphinx/en-us@5.1.1?" in typo.stderr


def test_progress_goes_to_stderr_only_when_asked_or_a_terminal(filtered_stores, tmp_path: Path):
    stored, (sqlite_url, postgres_url) = filtered_stores
    quiet = run_cli("export", "--store", sqlite_url)  # stderr is a pipe here: no bar
    assert quiet.stderr == "" and len(quiet.stdout.splitlines()) == len(stored)
    shown = run_cli("export", "--store", sqlite_url, "--progress")
    assert "exporting" in shown.stderr and f"{len(stored)}row" in shown.stderr.replace(" ", "")
    assert shown.stdout == quiet.stdout  # the data, untouched by the bar
    (tmp_path / "rows.jsonl").write_text(quiet.stdout)
    assert "checking" in run_cli("ingest", str(tmp_path / "rows.jsonl"), "--store", sqlite_url, "--progress").stderr
    refreshed = run_cli("db", "refresh", "--store", postgres_url, "--progress")
    assert "refreshing" in refreshed.stderr and "recomputed the rolling aggregates of 4 series" in refreshed.stdout
    assert run_cli("db", "refresh", "--store", postgres_url, "--no-progress").stderr == ""


def test_a_terminal_on_stderr_gets_the_bar_and_stdout_keeps_the_data(filtered_stores):
    import fcntl
    import os
    import pty
    import struct
    import termios

    stored, (sqlite_url, _) = filtered_stores
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a bar needs columns
    proc = subprocess.Popen([sys.executable, "-m", "voxwatch.cli", "export", "--store", sqlite_url], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    out = proc.stdout.read().decode()
    proc.wait(timeout=120)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal's other end closed: all read
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert proc.returncode == 0 and b"exporting" in seen
    assert [json.loads(line)["clip_id"] for line in out.splitlines()] and len(out.splitlines()) == len(stored)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: nothing listens there


def test_an_unreachable_grafana_is_one_line_naming_the_url():
    url = f"http://127.0.0.1:{_free_port()}"
    proc = run_cli("dashboards", "push", "--url", url, env={"VOXWATCH_GRAFANA_TOKEN": "glsa_s3cret-token"},
                   check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"voxwatch: error: cannot reach Grafana at {url}: connection refused\n"
    unknown = run_cli("dashboards", "push", "--url", "http://grafana.invalid:3000",
                      env={"VOXWATCH_GRAFANA_TOKEN": "glsa_s3cret-token"}, check=False)
    assert unknown.returncode == 2 and unknown.stderr.splitlines() == [
        "voxwatch: error: cannot reach Grafana at http://grafana.invalid:3000: the host name does not resolve"]


@pytest.mark.parametrize("args", [("leaderboard",), ("leaderboard", "--format", "json"), ("export", "--since", "1d"),
                                  ("runs", "list", "--format", "csv"), ("alerts", "list"), ("db", "refresh")])
def test_an_unreachable_store_is_one_line_without_its_password(args: tuple[str, ...]):
    url = f"postgresql://voxwatch:pa55-w0rd@127.0.0.1:{_free_port()}/voxwatch"
    proc = run_cli(*args, "--store", url, check=False)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr
    assert "pa55-w0rd" not in proc.stderr + proc.stdout and "postgresql://voxwatch:***@127.0.0.1" in proc.stderr
