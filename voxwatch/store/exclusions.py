"""The registry's exclusions as a Postgres table, so the Grafana panels JOIN them instead of carrying a copy.

`voxwatch/providers/registry.toml` stays the one place an exclusion is written (voxwatch/providers/registry.py
Exclusion). The `registry_exclusions` table (migration 13) mirrors it: every open of the Postgres
store (and so `voxwatch db upgrade`) rewrites the table when it differs from the registry the code
was given, in one transaction under its own advisory lock, so a panel never sees half of a
change and workers opening at once do not fight. SQLite has no copy: Grafana reads Postgres only.
"""

from __future__ import annotations

import psycopg

from voxwatch.providers.registry import Registry

TABLE = "registry_exclusions"
DDL = (f'CREATE TABLE {TABLE} (model_id text COLLATE "C" NOT NULL, metric text COLLATE "C" NOT NULL, '
       "reason text NOT NULL, PRIMARY KEY (model_id, metric))")
_LOCK = 0x766F7878  # pg_advisory_xact_lock key: one writer of the table at a time ("voxx")


def rows_of(registry: Registry) -> set[tuple[str, str, str]]:
    """(model, metric, reason) for every exclusion the registry declares."""
    return {(m.id, e.metric, e.reason) for m in registry.models.values() for e in m.exclusions}


def sync(conn: psycopg.Connection, registry: Registry) -> bool:
    """Make the table hold exactly the registry's exclusions; True when it had to change."""
    wanted = rows_of(registry)
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        have = set(cur.execute(f"SELECT model_id, metric, reason FROM {TABLE}").fetchall())
        if have == wanted:
            return False
        cur.execute(f"DELETE FROM {TABLE}")
        cur.executemany(f"INSERT INTO {TABLE} (model_id, metric, reason) VALUES (%s, %s, %s)", sorted(wanted))
    return True
