"""`voxwatch run` prints the rankings it measured (issue #40), each whole so every rank is the board's,
and one line saying how many other rankings the store holds and how to read them."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.processes import run_cli
from voxwatch.store import open_store


@pytest.mark.e2e
def test_a_run_prints_the_rankings_it_measured_and_says_how_to_read_the_rest(tmp_path: Path):
    from support.compare_seed import ROWS as OTHERS
    from voxwatch.boards import leaderboard

    url = f"sqlite:///{tmp_path / 'voxwatch.sqlite'}"
    store = open_store(url)
    store.add(OTHERS)  # four boards' rankings in us-east over the last two weeks
    store.close()
    others = {(r.board, r.dataset, r.protocol, r.region) for r in leaderboard.build(OTHERS)}
    proc = run_cli("run", "--models", "espeak-ng/en-us@1.52.0", "--datasets", "tts-prompts", "--sample-size", "2",
                   "--store", url, "--no-progress")
    assert "TTS board" in proc.stdout and "STT board" not in proc.stdout and "S2S board" not in proc.stdout
    assert "-- tts-prompts, streaming TTS: ranked by ttfa_ms, paired on the same clips; region local" in proc.stdout
    assert "region us-east" not in proc.stdout and "cartesia/sonic-3.5" not in proc.stdout  # another region's ranking
    assert proc.stdout.rstrip().endswith(f"{len(others)} other ranking(s) of the last 30d were not measured in this "
                                         "run: `voxwatch leaderboard` prints every board")
    every = run_cli("leaderboard", "--store", url).stdout
    assert "STT board" in every and "S2S board" in every and "region local" in every and "region us-east" in every
