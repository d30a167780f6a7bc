"""A numbered migration that adds obs_facts columns, replayed on a Postgres store that has rows: the
store as the migration before it left it (the view dropped, the columns gone, the version forgotten),
reopened so that it migrates again, then written to."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from voxwatch.foundation.observation import Observation
from voxwatch.store import open_store


def replay_migration(url: str, version: int, columns: tuple[str, ...], rows: list[Observation],
                     read: Callable[[Observation], Any]) -> tuple[list, list, list[int]]:
    """Store `rows`, undo migration `version` (drop `columns`), reopen, store them again as run 'new':
    what `read` gives for each row of the first lot and of the second, read back after the reopen,
    and the migrations the reopen applied."""
    store = open_store(url)
    assert version in store.migrated
    store.add(rows)
    conn = store.connection()
    conn.execute("DROP VIEW observations CASCADE")
    conn.execute(f"ALTER TABLE obs_facts {', '.join(f'DROP COLUMN {c}' for c in columns)}")
    conn.execute("DELETE FROM schema_migrations WHERE version = %s", (version,))
    store.close()
    again = open_store(url)
    try:
        newer = [replace(r, run_id="new") for r in rows]
        again.add(newer)
        back = {(r.run_id, r.clip_id, r.attempt): read(r) for r in again.observations()}
        return ([back[(r.run_id, r.clip_id, r.attempt)] for r in rows],
                [back[(r.run_id, r.clip_id, r.attempt)] for r in newer], list(again.migrated))
    finally:
        again.close()
