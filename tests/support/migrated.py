"""A Postgres migration that adds observation fields, checked the one way: the store as the migration
before left it (the columns dropped, the version forgotten) upgrades with that migration alone, its
older rows reading the new fields null and newer rows keeping theirs."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Sequence

from voxwatch.foundation.observation import Observation
from voxwatch.store import open_store

from support.postgres import fresh_postgres


def keeps_older_rows_null(version: int, columns: Sequence[str], before: list[Observation],
                          fields: Callable[[Observation], Any], none: Any) -> None:
    """`fields(row)`: the new fields of a row as read back; `none`: what they are on a row stored before."""
    with fresh_postgres() as url:
        store = open_store(url)
        assert version in store.migrated
        store.add(before)
        conn = store.connection()
        conn.execute("DROP VIEW observations CASCADE")  # the store as the migration before left it
        conn.execute(f"ALTER TABLE obs_facts {', '.join(f'DROP COLUMN {c}' for c in columns)}")
        conn.execute("DELETE FROM schema_migrations WHERE version = %s", (version,))
        store.close()
        again = open_store(url)
        try:
            assert again.migrated == [version]
            newer = [replace(r, run_id="new") for r in before]
            again.add(newer)
            back = {(r.run_id, r.clip_id): fields(r) for r in again.observations()}
            assert [back[(r.run_id, r.clip_id)] for r in before] == [none] * len(before)
            assert [back[(r.run_id, r.clip_id)] for r in newer] == [fields(r) for r in newer]
        finally:
            again.close()
