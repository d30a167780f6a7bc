"""Refreshes that many finishing runs ask for at once, run once: the paired comparisons of a
dataset, a family's lines, a comparison board's views.

Each costs a read of its rows over 30 days (at a year's scale: 24 s for a dataset's comparisons,
58 s for a family's lines), and every region's run of a slot asks for the same ones within a
minute. A request is a time in `refresh_requests` (the database's clock, so hosts agree); the
session that takes the name's advisory lock refreshes, and passes again while requests newer than
its last pass's start are pending; a session that cannot take the lock leaves, since the holder
sees its request. After unlocking, the holder looks once more, so a request made while it was
unlocking is never left waiting for the next tick. A crashed holder's session ends and its lock
with it.
"""

from __future__ import annotations

from typing import Callable

import psycopg

DDL = ("CREATE TABLE refresh_requests (name text COLLATE \"C\" PRIMARY KEY, requested_at double precision NOT NULL, "
       "done_at double precision)")
_NOW = "extract(epoch FROM clock_timestamp())::double precision"
_REQUEST = (f"INSERT INTO refresh_requests (name, requested_at) VALUES (%s, {_NOW}) "
            f"ON CONFLICT (name) DO UPDATE SET requested_at = EXCLUDED.requested_at")
_PENDING = "SELECT done_at IS NULL OR requested_at > done_at FROM refresh_requests WHERE name = %s"
_LOCK = "hashtextextended('voxwatch refresh ' || %s, 0)"


def coalesced(conn: psycopg.Connection, name: str, refresh: Callable[[], int]) -> int | None:
    """Ask for `name`'s refresh and run it unless another session is running it (then None: that one
    runs it again for this request). Returns what the refreshes run here returned, summed. `conn`
    must be in autocommit mode: the request is seen by the holder at once."""
    conn.execute(_REQUEST, (name,))
    done: int | None = None
    while conn.execute(f"SELECT pg_try_advisory_lock({_LOCK})", (name,)).fetchone()[0]:
        try:
            while _pending(conn, name):
                started = conn.execute(f"SELECT {_NOW}").fetchone()[0]
                done = (done or 0) + refresh()
                conn.execute("UPDATE refresh_requests SET done_at = %s WHERE name = %s", (started, name))
        finally:
            conn.execute(f"SELECT pg_advisory_unlock({_LOCK})", (name,))
        if not _pending(conn, name):
            break
    return done


def _pending(conn: psycopg.Connection, name: str) -> bool:
    found = conn.execute(_PENDING, (name,)).fetchone()
    return bool(found and found[0])
