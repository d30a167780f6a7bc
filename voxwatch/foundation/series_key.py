"""What identifies a leaderboard series: the rows one rolling aggregate is computed over, never pooled
with another series' rows. One definition of its fields and their order for every layer (the ranking,
the board, the Postgres aggregates, the web pages, the alerts).

Both keys are NamedTuples, so they unpack, compare, hash and sort exactly as the plain tuples they
replace: a dict keyed by one finds a plain tuple of the same values, the leaderboard's order is the
tuple order of SeriesKey, and JSON writes a key as a list.
"""

from __future__ import annotations

from typing import NamedTuple


class SeriesKey(NamedTuple):
    """One leaderboard series, in the leaderboard's sort order."""
    board: str
    model_id: str
    dataset: str
    region: str
    method_version: str
    protocol: str
    instrument: str  # the STT that scored a TTS series' intelligibility; "" when none, so keys always sort

    @property
    def rows_key(self) -> RowsKey:
        """The stored rows this series is cut from: the key without its board, protocol and instrument."""
        return RowsKey(self.model_id, self.dataset, self.region, self.method_version)

    @property
    def ranking_key(self) -> tuple[str, str, str]:
        """The ranking this series is ranked in (metrics.ranking): its board, dataset and protocol."""
        return self.board, self.dataset, self.protocol


class RowsKey(NamedTuple):
    """A model's rows on one dataset in one region under one method version: what the store reads and
    refreshes a series by (store.layout.SERIES, its columns), before the rows are split by board,
    protocol and instrument; what a method-version note and an alert are about. Its fields are
    SeriesKey's second to fifth, in that order (SeriesKey.rows_key)."""
    model_id: str
    dataset: str
    region: str
    method_version: str

    def series(self, board: str, protocol: str, instrument: str) -> SeriesKey:
        """The full key of the part of these rows measured under one board, protocol and instrument."""
        return SeriesKey(board, self.model_id, self.dataset, self.region, self.method_version, protocol, instrument)
