"""The store the rating pages write ratings to: opened on first use, used from one thread.

The rest of the web app reads through a read-only Source; rating collection needs the store
itself (store.add_ratings checks and writes a batch whole). A SQLite connection belongs to the
thread that opened it, so every call runs on one thread of its own; rating traffic is a few
requests a minute, so one at a time is enough. A store that cannot be opened or written raises
StoreUnavailable (the page is a 503) and is opened again on the next call.
"""

from __future__ import annotations

import asyncio
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, TypeVar

from voxwatch.foundation.redaction import scrub
from voxwatch.foundation.store_url import StoreError
from voxwatch.store import open_store

from voxwatch.web.source import StoreUnavailable

T = TypeVar("T")
PUBLIC = "The ratings store cannot be reached right now; your answers are kept on this page: please try again."


class RatingStore:
    def __init__(self, url: str) -> None:
        self._url = url
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="voxwatch-ratings")
        self._store = None

    async def call(self, what: str, work: Callable[..., T]) -> T:
        """`work(store)` on the store's thread; a store error is a StoreUnavailable (other errors pass)."""
        return await asyncio.wrap_future(self._thread.submit(self._run, what, work))

    def _run(self, what: str, work: Callable[..., T]) -> T:
        try:
            if self._store is None:
                self._store = open_store(self._url, create=False)
            return work(self._store)
        except (StoreError, sqlite3.Error) as exc:
            self._drop()
            raise StoreUnavailable(PUBLIC, scrub(f"cannot {what}: {exc}", urls=[self._url])) from None

    def _drop(self) -> None:
        if self._store is not None:
            try:
                self._store.close()
            except Exception:  # noqa: BLE001 - a broken store is being dropped anyway
                pass
            self._store = None

    def close(self) -> None:
        self._thread.submit(self._drop)
        self._thread.shutdown(wait=True, cancel_futures=False)
