"""The one way anything opens Postgres: the store, the web app, the alerts and the tests' and
benchmarks' helpers all connect here, from the one reading of the URL (`url.parse_store_url`),
and every database error about a store is worded here, with its password cut out (`database_error`).
"""

from __future__ import annotations

import psycopg

from voxwatch.foundation.store_url import StoreError
from voxwatch.foundation.store_url import POSTGRES, StoreURL, parse_store_url

CONNECT_TIMEOUT_S = 10


def connect(url: str | StoreURL, *, autocommit: bool = True, timeout_s: int = CONNECT_TIMEOUT_S) -> psycopg.Connection:
    """A connection to the Postgres store the URL names (libpq's reading of it, passed as keywords, so
    libpq never parses the URL again); `timeout_s` unless the URL sets connect_timeout. A failure is a
    StoreError that names the store without its password."""
    store = url if isinstance(url, StoreURL) else parse_store_url(url)
    if store.kind != POSTGRES:
        raise StoreError(f"{store.shown} is not a Postgres store (postgresql://...)")
    timeout = {} if "connect_timeout" in store.conninfo else {"connect_timeout": timeout_s}
    try:
        return psycopg.connect(**store.conninfo, autocommit=autocommit, **timeout)
    except psycopg.Error as exc:
        raise database_error(store, "cannot connect to", exc) from None


def database_error(store: StoreURL, what: str, exc: BaseException) -> StoreError:
    """A database error as a StoreError saying what failed ("cannot read the runs from") and naming the
    store, every spelling of its password cut out of the library's message."""
    return StoreError(f"{what} the Postgres store at {store.shown}: {store.scrub(str(exc).strip())}")
