"""A throwaway database on the test Postgres, for a test that needs the real server."""

from __future__ import annotations

import contextlib
import os
import secrets
from typing import Iterator

POSTGRES_ADMIN = os.environ.get("VOXWATCH_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")


@contextlib.contextmanager
def fresh_postgres() -> Iterator[str]:
    """A new, empty database on the test Postgres (VOXWATCH_TEST_POSTGRES, else the local one), dropped after."""
    from voxwatch.foundation.store_url import StoreError
    from voxwatch.store.connection import connect

    try:
        admin = connect(POSTGRES_ADMIN, timeout_s=5)
    except StoreError as exc:
        raise RuntimeError(f"the tests need Postgres at {POSTGRES_ADMIN} (.ci/run starts it): {exc}") from None
    name = f"voxwatch_test_{secrets.token_hex(5)}"
    with admin:
        admin.execute(f"CREATE DATABASE {name}")
        try:
            yield POSTGRES_ADMIN.rsplit("/", 1)[0] + "/" + name
        finally:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
