"""The preference board's fitted snapshots (`preference_fits`), for both stores.

Fitting every board takes seconds to minutes (1,000-resample bootstraps, METHOD "Preference
(Elo)"), so it never happens on a page render: `voxwatch preference fit` stores one row per fit
(voxwatch/preference/standings.py makes the boards), and the pages, the API and `preference board`
read the newest. A fit is never changed; a newer one supersedes it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass

from voxwatch.store.preference_rows import names
from voxwatch.store.preference import column_types

FITS = "preference_fits"


@dataclass(slots=True)
class FitRow:
    """One fit of every board: when, under which method version, over how many ratings (all rubrics,
    gold pairs and excluded raters left out) and raters, and the boards as JSON (standings.Snapshot)."""

    fit_id: int | None
    fitted_at: float
    method_version: str
    ratings: int
    raters: int
    resamples: int
    boards: str  # JSON


def ddl(dialect: str) -> list[str]:
    """The table and its index (IF NOT EXISTS on SQLite, which runs it on each open)."""
    exists = "IF NOT EXISTS " if dialect == "sqlite" else ""
    cols = ", ".join(f"{n} {t}" for n, t in column_types(FitRow, dialect))
    return [f"CREATE TABLE {exists}{FITS} ({cols})",
            f"CREATE INDEX {exists}preference_fits_time ON {FITS} (fitted_at)"]


SELECT_LATEST = f"SELECT {', '.join(names(FitRow))} FROM {FITS} ORDER BY fitted_at DESC, fit_id DESC LIMIT 1"


def read_fit(values) -> FitRow | None:
    return FitRow(*values) if values is not None else None


class PreferenceFits:
    """Write a fit, read the newest, over the store's `_cursor(what)` and placeholder `MARK`."""

    MARK = "?"

    def _cursor(self, what: str) -> AbstractContextManager:
        raise NotImplementedError

    def add_preference_fit(self, row: FitRow) -> int:
        cols = [c for c in names(FitRow) if c != "fit_id"]
        with self._cursor("write a preference fit to") as cur:
            cur.execute(f"INSERT INTO {FITS} ({', '.join(cols)}) VALUES ({', '.join([self.MARK] * len(cols))}) "
                        "RETURNING fit_id", tuple(getattr(row, c) for c in cols))
            row.fit_id = cur.fetchone()[0]
        return row.fit_id

    def latest_preference_fit(self) -> FitRow | None:
        with self._cursor("read the preference fits of") as cur:
            cur.execute(SELECT_LATEST)
            return read_fit(cur.fetchone())
