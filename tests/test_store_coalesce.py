"""The refreshes finishing runs ask for at once are run once (store.coalesce), on a real Postgres:
a process asking while another refreshes leaves at once, and the one refreshing passes again for it;
a request is never left waiting for the next tick."""

from __future__ import annotations

from typing import Iterator

import psycopg
import pytest

from voxwatch.store import open_store
from voxwatch.store.coalesce import coalesced
from voxwatch.store.connection import connect

from support.postgres import fresh_postgres


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with fresh_postgres() as found:
        open_store(found).close()  # migrated: refresh_requests exists
        yield found


def _connect(url: str) -> psycopg.Connection:
    return connect(url)  # the store's own: autocommit


def test_a_request_made_during_a_refresh_is_answered_by_one_more_pass_of_its_holder(url):
    with _connect(url) as a, _connect(url) as b:
        passes: list[str] = []
        others: list[int | None] = []

        def refresh_a() -> int:
            passes.append("a")
            if len(passes) == 1:  # a second process's run finishes while this one refreshes
                others.append(coalesced(b, "views", lambda: passes.append("b") or 1))
            return 10

        assert coalesced(a, "views", refresh_a) == 20
        assert others == [None]  # b left at once: a held the refresh
        assert passes == ["a", "a"]  # and a passed again for b's request, which it saw
        assert coalesced(b, "views", lambda: passes.append("b") or 1) == 1  # nothing held: b runs its own
        assert passes == ["a", "a", "b"]


def test_names_are_refreshed_apart_and_a_failed_refresh_unlocks(url):
    with _connect(url) as a, _connect(url) as b:
        def failing() -> int:
            raise RuntimeError("the refresh failed")

        with pytest.raises(RuntimeError):
            coalesced(a, "family lines f1", failing)
        # the failed request is still pending and the lock was let go: the next asker runs it
        assert coalesced(b, "family lines f1", lambda: 3) == 3
        seen: list[int | None] = []
        assert coalesced(a, "comparisons d1", lambda: seen.append(coalesced(b, "comparisons d2", lambda: 5)) or 1) == 1
        assert seen == [5]  # another name is not held by this one's refresh
