"""The same rows in a SQLite store and in a Postgres one, for a module that reads them through each."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

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
