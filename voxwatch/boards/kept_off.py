"""The rows a board never shows, counted in words wherever a reader would otherwise wonder where they went.

Rows measured against an emulator (a loopback server: `emulator = true`) never enter a series
(docs/METHOD.md "Aggregates", store/series_data.py), and a row the harness could not measure is no
attempt (metrics.series.NOT_AN_ATTEMPT): neither moves a board. A run that measured such rows says
how many and why; a reader asked for a model or a window that holds only emulated rows says so
instead of a bare "No observations".
"""

from __future__ import annotations

from typing import Collection, Mapping, Sequence

from voxwatch.foundation.observation import Observation
from voxwatch.metrics.series import NOT_AN_ATTEMPT
from voxwatch.metrics.witness import stalled_row

WHERE = 'docs/OPERATIONS.md "Trying every vendor with no key"'
"""Where emulators and the rows measured against them are described."""


def run_line(rows: Sequence[Observation]) -> str | None:
    """One line for a run: how many of its rows the boards keep off, and why (None when none)."""
    emulated = sum(1 for r in rows if r.emulator)
    stalled = sum(1 for r in rows if not r.emulator and stalled_row(r.status, r.reason))
    excluded = sum(1 for r in rows if not r.emulator and r.status in NOT_AN_ATTEMPT) - stalled
    if not emulated + excluded + stalled:
        return None
    parts = []
    if emulated:
        parts.append(f"{emulated} measured against an emulator (a loopback server: a test rig's numbers, never a "
                     f"vendor's; {WHERE})")
    if stalled:
        parts.append(stalled_words(stalled))
    if excluded:
        parts.append(f"{excluded} the harness could not measure (status excluded: not attempts)")
    return f"{emulated + excluded + stalled} of {len(rows)} observations are kept off the boards: {'; '.join(parts)}"


def stalled_words(stalled: int) -> str:
    """What rows the clock witness excluded are (metrics.witness), in a run's line and a board's notes."""
    return (f"{stalled} excluded because the measuring worker stalled around a timed event for longer than the "
            f"clock witness's bound (its own stall, not the provider's latency: METHOD \"Clock witness\")")


def stalled_line(stalled: Mapping[str, int], where: str) -> str | None:
    """A board's note of the rows of its span excluded as the measuring worker's stall (None when none)."""
    total = sum(stalled.values())
    if not total:
        return None
    worst = ", ".join(f"{m} {n}" for m, n in sorted(stalled.items(), key=lambda kv: (-kv[1], kv[0]))[:5])
    return f"Not on the board {where}: {stalled_words(total)} ({worst})."


def no_observations(where: str, emulated: Mapping[str, int]) -> str:
    """What an empty board says: that nothing is stored `where` ('in the last 30d'), or that all that
    is stored there was measured against an emulator."""
    total = sum(emulated.values())
    if not total:
        return f"No observations {where}. Run `voxwatch run` first."
    return (f"No observations on the boards {where}: the {total} stored were all measured against an emulator, which "
            f"never enter the boards ({WHERE}).")


def model_lines(models: Collection[str], shown: Collection[str], emulated: Mapping[str, int], where: str) -> list[str]:
    """A line for each model asked for that has no board row `where` but rows measured against an emulator."""
    return [f"{m}: {emulated[m]} observations {where}, all measured against an emulator, which never enter the "
            f"boards ({WHERE})" for m in sorted(models) if m not in shown and emulated.get(m)]
