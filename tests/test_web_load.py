"""The web app under load: cached pages that follow the store, overload turned away with 503 and
Retry-After, a health check that answers through it, and the security headers on every response.

A real `voxwatch serve` on a seeded store. The overload is real too: a test holds a lock on the
fact table, so a model page's render waits on it while holding the server's only render slot
(--renders 1), and every further render finds no slot.
"""

from __future__ import annotations

import asyncio
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Iterator

import httpx
import pytest

from voxwatch.providers.registry import Registry
from voxwatch.store import open_store
from voxwatch.store.connection import connect
from voxwatch.web.cache import Page, Pages
from voxwatch.web.freshness import Freshness
from voxwatch.web.headers import POLICY
from voxwatch.web.source import open_source
from voxwatch.web.views import leaderboard_document

from support.postgres import fresh_postgres
from support.processes import run_cli
from support.web_seed import NOW, ROWS, serving

pytestmark = pytest.mark.e2e

QUEUE_WAIT_S = 0.5
TTS_MODEL = "cartesia/sonic-3.5"


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    with fresh_postgres() as url:
        run_cli("db", "upgrade", "--store", url)
        store = open_store(url)
        store.add(ROWS)
        store.close()
        yield url


@pytest.fixture
def sqlite(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'voxwatch.sqlite'}"
    store = open_store(url)
    store.add(ROWS)
    store.close()
    return url


@pytest.fixture(scope="module")
def busy(postgres: str, tmp_path_factory) -> Iterator[str]:
    """A server with one render slot and a short wait for it."""
    with serving(postgres, tmp_path_factory.mktemp("web-load") / "serve.log", None, "--renders", "1",
                 "--queue-wait", str(QUEUE_WAIT_S)) as base:
        yield base


def _new_tts_rows(tag: str, n: int) -> list:
    """n more ok rows of the TTS series, just measured: the board must count them."""
    model = next(r for r in ROWS if r.model_id == TTS_MODEL and r.status == "ok")
    return [replace(model, run_id=f"added-{tag}", clip_id=f"added{i}", started_at=NOW - 60 - i) for i in range(n)]


def _attempts(doc: dict) -> int:
    return sum(r["attempts"] for r in doc["rows"] if r["model_id"] == TTS_MODEL and r["metric"] == "ttfa_ms")


@pytest.mark.parametrize("kind", ["postgres", "sqlite"])
def test_a_page_is_computed_once_per_store_change(kind, request, tmp_path):
    url = request.getfixturevalue(kind)
    with serving(url, tmp_path / "serve.log") as base:
        api = f"{base}/api/v1/leaderboard?board=tts"
        first, again = httpx.get(api).json(), httpx.get(api).json()
        assert again == first  # the same document, generated_at included: served from the cache, not recomputed
        source = open_source(url, Registry.default())
        uncached = json.loads(json.dumps(leaderboard_document(source, Registry.default(), "30d", "tts", None)))
        source.close()
        assert {**first, "generated_at": None} == {**uncached, "generated_at": None}  # the numbers the app computes
        page = httpx.get(f"{base}/board/tts").text

        store = open_store(url)
        store.add(_new_tts_rows(kind, 3))
        store.close()
        after = httpx.get(api).json()  # the next request sees the write (--fresh-within 0)
        assert _attempts(after) == _attempts(first) + 3 and after["generated_at"] > first["generated_at"]
        assert httpx.get(f"{base}/board/tts").text != page


def test_the_version_is_read_at_most_once_per_interval_and_a_write_shows_after_it(sqlite):
    async def versions() -> tuple:
        registry = Registry.default()
        source = open_source(sqlite, registry)
        lazy, eager = Freshness(source, registry, 3600), Freshness(source, registry, 0.2)
        try:
            before = (await lazy.current(), await eager.current())
            store = open_store(sqlite)
            store.add(_new_tts_rows("version", 1))
            store.close()
            soon = await lazy.current()  # within its hour: not read again
            await asyncio.sleep(0.2)  # a read that started before the write is now too old
            return before, soon, await eager.current()
        finally:
            lazy.close()
            eager.close()
            source.close()

    (lazy, eager), soon, after = asyncio.run(versions())
    assert lazy == eager is not None and soon == lazy and after != eager


def test_overload_is_a_503_with_retry_after_and_health_still_answers(busy, postgres):
    cached = httpx.get(f"{busy}/")  # rendered before the overload: served from the cache through it
    assert cached.status_code == 200
    with connect(postgres, autocommit=False) as holder, ThreadPoolExecutor(1) as pool:
        holder.execute("LOCK TABLE obs_facts IN ACCESS EXCLUSIVE MODE")  # held until the rollback below
        held = pool.submit(httpx.get, f"{busy}/model/deepgram/nova-3", timeout=120)
        _wait_for_a_blocked_query(postgres)  # the model page's render waits on the lock, in the only slot

        for path, kind in (("/board/tts?held=1", "text/html"), ("/api/v1/leaderboard?held=1", "application/json")):
            start = time.monotonic()
            busy_page = httpx.get(busy + path, timeout=60)
            assert busy_page.status_code == 503, path
            assert int(busy_page.headers["retry-after"]) >= 1 and busy_page.headers["content-type"].startswith(kind)
            assert "busy" in busy_page.text
            assert time.monotonic() - start >= QUEUE_WAIT_S  # it waited its turn first, and no longer than asked
        health = httpx.get(f"{busy}/api/v1/health", timeout=60)
        assert health.status_code == 200 and health.json()["status"] == "ok"
        again = httpx.get(f"{busy}/", timeout=60)
        assert again.status_code == 200 and again.text == cached.text
        assert not held.done()  # the overload lasted through every check above

        holder.rollback()
        assert held.result().status_code == 200
    assert httpx.get(f"{busy}/board/tts?held=1").status_code == 200  # a free slot again: rendered


def _wait_for_a_blocked_query(url: str) -> None:
    deadline = time.monotonic() + 60
    with connect(url) as conn:
        while not conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                               "AND wait_event_type = 'Lock'").fetchone()[0]:
            assert time.monotonic() < deadline, "the model page never reached the locked table"
            time.sleep(0.05)


def test_every_response_carries_the_security_headers(busy):
    responses = {path: httpx.get(busy + path) for path in (
        "/", "/board/stt", "/board/stt?format=csv", "/model/deepgram/nova-3", "/alerts", "/api/v1/leaderboard",
        "/api/v1/health", "/api/v1/openapi.json", "/static/style.css", "/board/nothing", "/api/v1/leaderboard?window=1y")}
    responses["POST /"] = httpx.post(f"{busy}/")
    assert {p: r.status_code for p, r in responses.items()} == {**dict.fromkeys(responses, 200), "/board/nothing": 404,
                                                               "/api/v1/leaderboard?window=1y": 400, "POST /": 405}
    for path, r in responses.items():
        assert r.headers["content-security-policy"] == POLICY, path
        assert (r.headers["x-content-type-options"], r.headers["x-frame-options"], r.headers["referrer-policy"]) == (
            "nosniff", "DENY", "same-origin"), path
        assert "server" not in r.headers, path
    policy = dict((d.split()[0], d.split()[1:]) for d in POLICY.split("; "))
    assert policy["default-src"] == ["'none'"] and "script-src" not in policy  # no script from anywhere
    assert policy["frame-ancestors"] == ["'none'"] and policy["style-src"] == ["'self'"]
    for path in ("/", "/board/stt", "/model/deepgram/nova-3", "/alerts"):  # what the policy must allow: nothing inline
        html = responses[path].text
        assert "<script" not in html and " style=" not in html and "<style" not in html, path
        assert '<link rel="stylesheet" href="/static/style.css">' in html, path


def test_text_is_sent_gzipped_to_who_accepts_it(busy):
    plain = httpx.get(f"{busy}/board/stt", headers={"accept-encoding": "identity"})
    zipped = httpx.get(f"{busy}/board/stt", headers={"accept-encoding": "br;q=1, gzip;q=0.5"})
    refused = httpx.get(f"{busy}/board/stt", headers={"accept-encoding": "gzip;q=0"})
    assert "content-encoding" not in plain.headers and "content-encoding" not in refused.headers
    assert zipped.headers["content-encoding"] == "gzip" and zipped.text == plain.text == refused.text
    assert int(zipped.headers["content-length"]) < len(plain.content) / 3
    assert plain.headers["vary"] == zipped.headers["vary"] == "accept-encoding"


def test_the_cache_is_bounded_by_entries_and_bytes():
    def pages_kept(pages: Pages) -> list[str]:
        return [p for p in ("/0", "/1", "/2", "/3", "/4") if pages.get((p, b""), "v1") is not None]

    by_count = Pages(entries=3, max_bytes=10_000, max_age_s=60)
    by_bytes = Pages(entries=10, max_bytes=4000, max_age_s=60)
    page = Page(200, [], b"x" * 1000)
    for i in range(4):
        by_count.put((f"/{i}", b""), "v1", page, time.monotonic())
        by_bytes.put((f"/{i}", b""), "v1", page, time.monotonic())
    assert pages_kept(by_count) == ["/1", "/2", "/3"]  # the least recently used went first
    assert pages_kept(by_bytes) == ["/0", "/1", "/2", "/3"]  # 4000 bytes: still within
    by_bytes.get(("/0", b""), "v1")  # used again: /1 is now the least recently used
    by_bytes.put(("/4", b""), "v1", page, time.monotonic())
    assert pages_kept(by_bytes) == ["/0", "/2", "/3", "/4"]
    by_bytes.put(("/huge", b""), "v1", Page(200, [], b"z" * 1001), time.monotonic())  # over a quarter: never kept
    assert by_bytes.get(("/huge", b""), "v1") is None and len(by_bytes) == 4
    assert by_count.get(("/1", b""), "v2") is None and by_count.get(("/1", b""), "v1") is None  # another version: dropped
    by_count.put(("/old", b""), "v1", page, time.monotonic() - 61)
    assert by_count.get(("/old", b""), "v1") == (page, True)  # past max_age: served while rendered again
    assert by_count.get(("/2", b""), "v1") == (page, False)
