"""One pass over a ranking's 30 days makes every window's series (store.series_data.group_windows): the
comparisons' refresh keeps each row's cells, not the row, and every window's series are exactly what
`group` makes of that window's rows, so the stored comparisons are the ones the rows define."""

from __future__ import annotations

import time

import pytest

from support.web_seed import ROWS
from voxwatch.metrics.series import WINDOWS
from voxwatch.store.comparisons import compute, compute_series
from voxwatch.store.series_data import group, group_windows


def test_each_windows_series_are_what_group_makes_of_the_windows_rows():
    rows = sorted(ROWS, key=lambda r: r.started_at)
    now = max(r.started_at for r in rows) + 60
    since = {window: now - span for window, span in WINDOWS.items()}
    windows = group_windows(iter(rows), since)  # one pass: an iterator, as the store streams it
    assert set(windows) == set(WINDOWS)
    for window, start in since.items():
        expected = group([r for r in rows if r.started_at >= start])
        assert list(windows[window]) == list(expected)  # the same series, in key order
        assert windows[window] == expected
        assert compute_series(windows[window]) == compute(r for r in rows if r.started_at >= start)
    assert len(windows["24h"]) < len(windows["30d"])  # the seed's rows are spread over 30 days
    assert any(r.emulator for r in rows) and not any(k.model_id == "speechmatics/enhanced-en" for k in windows["30d"])


def test_rows_out_of_time_order_are_refused():
    rows = sorted(ROWS, key=lambda r: r.started_at)
    with pytest.raises(ValueError, match="time order"):
        group_windows(reversed(rows), {"30d": time.time() - WINDOWS["30d"]})
