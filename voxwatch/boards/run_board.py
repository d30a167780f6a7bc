"""What `voxwatch run` prints of the rolling board after a tick: the rankings it measured, each whole (so
every rank is the board's), and one line saying how many other rankings the store holds and how to
read them. A run of one model on one dataset is read at a glance; `voxwatch leaderboard` is every board."""

from __future__ import annotations

from typing import Iterable

from voxwatch.foundation.observation import Observation
from voxwatch.metrics.series import MetricRow


def _ranking(r: Observation | MetricRow) -> tuple[str, str, str, str]:
    """The ranking a row belongs to: board, dataset, protocol and region (its method versions shown together)."""
    return r.board, r.dataset, r.protocol, r.region


def measured(board: list[MetricRow], rows: Iterable[Observation]) -> tuple[list[MetricRow], int]:
    """The board's rows of the rankings the run's rows measured, and how many other rankings it holds."""
    wanted = {_ranking(r) for r in rows}
    return [r for r in board if _ranking(r) in wanted], len({_ranking(r) for r in board} - wanted)


def others_line(others: int, window: str) -> str | None:
    """The hint under a run's board: the rankings of the window it left out, and the command that prints them."""
    if not others:
        return None
    return (f"{others} other ranking(s) of the last {window} were not measured in this run: `voxwatch leaderboard` "
            "prints every board")
