"""Which stored observations a reader wants (a time span, boards, datasets, models, and the clip's
family, speaker and accent), said once.

The stores turn it into their SQL's WHERE clause, so a filtered export or board reads only the rows
it keeps (the time index serves the span); readers of rows already read use `keeps`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RowFilter:
    since: float | None = None  # unix seconds, inclusive (started_at >= since)
    until: float | None = None  # unix seconds, exclusive (started_at < until)
    boards: tuple[str, ...] = ()  # empty: every one
    datasets: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    families: tuple[str, ...] = ()  # the clip's dataset family (a clean dataset and its degraded conditions)
    speakers: tuple[str, ...] = ()  # per-clip metadata: a board over these speakers' or accents' clips only
    accents: tuple[str, ...] = ()

    def where(self, mark: str) -> tuple[str, list]:
        """(" WHERE ..." or "", its arguments) for a store whose placeholder is `mark` (? or %s)."""
        clauses: list[str] = []
        args: list = []
        for op, value in ((">=", self.since), ("<", self.until)):
            if value is not None:
                clauses.append(f"started_at {op} {mark}")
                args.append(value)
        for column, values in (*self._sets(), *self._clip_sets()):
            if values:
                clauses.append(f"{column} IN ({', '.join([mark] * len(values))})")
                args.extend(values)
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), args

    def keeps(self, row) -> bool:
        """Whether a row (an Observation or a leaderboard MetricRow) is one this filter selects by its
        board, dataset and model (the span is the reader's: a MetricRow covers one; so are the clip
        sets, which only `where` applies: a MetricRow pools clips)."""
        return all(not values or getattr(row, column) in values for column, values in self._sets())

    @property
    def by_clip(self) -> bool:
        """Whether it selects clips within a series (family, speaker, accent): no stored aggregate
        holds such a subset, so its statistics are computed from the rows it selects."""
        return any(values for _, values in self._clip_sets())

    def _sets(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        return (("board", self.boards), ("dataset", self.datasets), ("model_id", self.models))

    def _clip_sets(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        return (("family", self.families), ("speaker", self.speakers), ("accent", self.accents))
