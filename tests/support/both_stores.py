"""The same rows in a SQLite store and in a Postgres one, for a module that reads them through each."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

from voxwatch.foundation.observation import Observation
from voxwatch.store import open_store


def seeded(rows: Sequence[Observation], postgres_url: str, folder: Path) -> dict[str, str]:
    """{"sqlite": url, "postgres": url}, each store holding exactly `rows`."""
    urls = {"sqlite": f"sqlite:///{folder / 'voxwatch.sqlite'}", "postgres": postgres_url}
    for url in urls.values():
        store = open_store(url)
        try:
            assert store.add(rows) == len(rows)
        finally:
            store.close()
    return urls


@contextmanager
def holding(kind: str, rows: Sequence[Observation], folder: Path) -> Iterator[str]:
    """The url of a store of `kind` ("sqlite" in `folder`, or a fresh Postgres migrated as a user
    migrates one: `voxwatch db upgrade`) holding `rows`, for a fixture parametrized on both stores."""
    if kind == "sqlite":
        yield _filled(f"sqlite:///{folder / 'voxwatch.sqlite'}", rows)
        return
    from support.postgres import fresh_postgres
    from support.processes import run_cli

    with fresh_postgres() as url:
        run_cli("db", "upgrade", "--store", url)
        yield _filled(url, rows)


def _filled(url: str, rows: Sequence[Observation]) -> str:
    store = open_store(url)
    try:
        store.add(rows)
    finally:
        store.close()
    return url
