"""The README stays short and true: at most 250 lines; its board and `make run` times are the ones
benchmarks/make_run.py recorded (docs/make_run.txt); that board is laid out as the code lays a board
out now, under the current method; the numbers it quotes (method version, dashboards) are the code's."""

from __future__ import annotations

import re
import time

from benchmarks import make_run
from voxwatch.boards import leaderboard
from voxwatch.cli import parser
from voxwatch.store.comparisons import compute
from voxwatch.boards.leaderboard import FITTED_HALLUCINATION, FITTED_HEADERS, HALLUCINATION_HEADER, wide_header
from voxwatch.boards.listing import WIDTH
from voxwatch.foundation.observation import Observation
from voxwatch.metrics import METHOD_VERSION

from support.processes import REPO

README = (REPO / "README.md").read_text()
RECORD = (REPO / "docs" / "make_run.txt").read_text()
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}


def _a_board(width: int | None = None, nothing_said: bool = False) -> str:
    """A board the code prints now (fitted to `width`, or every column), from rows of the current
    method (two ticks of five clips; with nothing_said, of clips without speech too)."""
    silent = [Observation(run_id=f"tick{t}", model_id="pocketsphinx/en-us@5.1.1", dataset="stt-nonspeech",
                          clip_id=f"n{c}", attempt=1, board="stt", vendor="pocketsphinx", protocol="stt-stream",
                          region="local", started_at=time.time() - 60, status="ok", condition="nonspeech",
                          invented_words=c % 2, audio_duration_s=2.0, method_version=METHOD_VERSION, hypothesis="",
                          reference="", emulator=False)
              for t in range(2) for c in range(5)] if nothing_said else []
    rows = silent + [Observation(run_id=f"tick{t}", model_id="pocketsphinx/en-us@5.1.1", dataset="stt-starter-clean",
                        clip_id=f"u{c}", attempt=1, board="stt", vendor="pocketsphinx", protocol="stt-stream",
                        region="local", started_at=time.time() - 60, status="ok", ttfs_ms=100.0 + 10 * c + t,
                        first_partial_ms=50.0, substitutions=1, deletions=0, insertions=0, ref_words=10,
                        method_version=METHOD_VERSION, hypothesis="a", reference="a", emulator=False)
            for t in range(2) for c in range(5)]
    return leaderboard.format_table(leaderboard.build(rows), "30d", comparisons=compute(rows), width=width)


def test_the_readme_is_at_most_250_lines():
    assert len(README.splitlines()) <= 250


def test_the_readme_shows_the_recorded_board_and_times():
    assert make_run.readme_block(RECORD) in README
    first, second, board = make_run.parse_record(RECORD)
    assert 0 < second and 0 < first and "STT board" in board and "TTS board" in board


def test_the_recorded_board_is_of_the_current_method_and_layout():
    _, _, board = make_run.parse_record(RECORD)
    headings = re.findall(r"^(STT|TTS|S2S) board - rolling 30d, current method v(\w+)", board, re.M)
    assert headings and {v for _, v in headings} == {METHOD_VERSION}
    columns = {title.split()[0].lower(): re.split(r"\s{2,}", header.strip())
               for title, header in re.findall(r"^(\w+ board - .*)\n( ?rank  model.*)$", board, re.M)}
    # `make run` prints the fitted layout; a record made before it (method 12's) shows every column (--wide)
    # a board scored on clips without speech (or empty prompts) ends in its hallucination column
    width = None if all(c in (list(wide_header(b)), list(wide_header(b) + HALLUCINATION_HEADER))
                        for b, c in columns.items()) else WIDTH
    assert columns and (width is None or all(c in (list(FITTED_HEADERS[b]), list(FITTED_HEADERS[b] + FITTED_HALLUCINATION))
                                             for b, c in columns.items()))
    legend = _a_board(width, nothing_said="hallucination" in board).split("\n\n")[-1]
    assert legend.startswith("Ranks per dataset") and legend in board


def test_the_numbers_the_readme_quotes_are_the_codes():
    versions = set(re.findall(r"method version (\d+)", README)) | set(re.findall(r"method v(\d+)", README))
    assert versions == {METHOD_VERSION}
    for method in ("docs/METHOD.md", "voxwatch/web/docs/METHOD.md"):  # the contract's title names the version it is
        assert (REPO / method).read_text().splitlines()[0].endswith(f"(method version {METHOD_VERSION})"), method
    dashboards = len(list((REPO / "dashboards").glob("*.json")))
    for text in (README, (REPO / "docs" / "OPERATIONS.md").read_text()):
        quoted = [NUMBERS[w.lower()] for w in re.findall(r"\b(\w+) (?:Grafana )?dashboards\b", text) if w.lower() in NUMBERS]
        assert quoted and set(quoted) == {dashboards}


def test_every_link_in_the_readme_and_docs_resolves():
    for doc in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", doc.read_text()):
            assert (doc.parent / target).exists(), f"{doc.name}: {target}"


GRAFANA_PORT = 3000  # docker-compose.yml's ${GRAFANA_PORT:-3000}: the one other web server the docs open


def test_every_local_address_the_docs_open_is_on_the_port_voxwatch_serve_listens_on():
    port = parser().parse_args(["serve"]).port  # `voxwatch serve`'s default
    docs = [REPO / "README.md", REPO / "docker-compose.yml", *(REPO / "docs").glob("*.md"),
            *(REPO / "dashboards").glob("*.md")]
    found = [(doc.name, int(n)) for doc in docs
             for n in re.findall(r"https?://(?:127\.0\.0\.1|localhost):(\d+)", doc.read_text())]
    assert {d for d, _ in found} >= {"WEB.md", "CONVERSATIONS.md", "OPERATIONS.md"}  # the addresses are found
    assert [(d, n) for d, n in found if n not in (port, GRAFANA_PORT)] == []
