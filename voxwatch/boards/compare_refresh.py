"""The series comparison boards' kept views (store.compare_views), recomputed from each board's
stored series (store.board_series: one narrow read of the longest window serves every window) as
ticks finish, and asked for through the store's coalescing (store.coalesce), so the many runs of
a slot that finish together refresh them once. A store that keeps no views (SQLite) computes a
page from its rows on each request instead (web/compare_views).
"""

from __future__ import annotations

import time

from voxwatch.boards.compare_lines import from_series, to_json
from voxwatch.boards.use_cases import COMPARE_BOARDS, SERIES_BOARDS
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.series import WINDOWS
from voxwatch.providers.registry import Registry

NAME = "compare views"
"""The refresh's name among the store's coalesced refreshes."""


def refresh(store, registry: Registry | None, now: float | None = None) -> int:
    """Recompute every series comparison board's views in every window; returns the views written."""
    at = time.time() if now is None else now
    written = 0
    read: dict[tuple[str, str], object] = {}  # one read of a protocol's series serves each board of it
    for board_id in SERIES_BOARDS:
        board = COMPARE_BOARDS[board_id]
        if (board.board, board.protocol) not in read:
            read[board.board, board.protocol] = store.board_series(board.board, board.protocol, METHOD_VERSION,
                                                                   at - max(WINDOWS.values()))
        found = read[board.board, board.protocol]
        views = [(window, to_json(from_series(found.series(at - span, board.protocol), found.datasets, board, window,
                                              registry, at)))
                 for window, span in WINDOWS.items()]
        written += store.keep_compare_views(board_id, views, at)
    return written


def keeps_views(store) -> bool:
    """Whether the store keeps comparison views (Postgres) rather than computing them per page."""
    return hasattr(store, "keep_compare_views")


def request(store, registry: Registry | None) -> int | None:
    """Ask for the views' refresh: run here, or by the process already running it (None then, or
    for a store that keeps none)."""
    if not keeps_views(store):
        return None
    return store.coalesced(NAME, lambda: refresh(store, registry))
