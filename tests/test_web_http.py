"""HTTP behaviour of `voxwatch serve` (docs/WEB.md "Caching and compression"): Cache-Control, ETag and
Last-Modified with 304s, a store write changing the ETag, HEAD, gzip, CORS on the API only, the favicon.

Against a real server on a seeded Postgres store; requests by httpx, whose Accept-Encoding asks for
gzip unless a test says otherwise.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from email.utils import formatdate, parsedate_to_datetime
from typing import Iterator

import httpx
import pytest

from voxwatch.store import open_store

from support.web_seed import NOW, ROWS, seeded_store, serving

pytestmark = pytest.mark.e2e

PAGES = ("/", "/board/stt", "/model/deepgram/nova-3", "/api/v1/leaderboard", "/api/v1/models", "/static/style.css")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[tuple[str, str]]:
    """(base URL, store URL): a server on a store seeded with test_web's rows."""
    with seeded_store() as url:
        with serving(url, tmp_path_factory.mktemp("http") / "serve.log") as base:
            yield base, url


def test_pages_are_public_for_a_minute_with_validators_and_304s(site):
    base, _ = site
    for path in PAGES:
        first = httpx.get(base + path)
        assert first.status_code == 200, path
        assert first.headers["cache-control"] == "public, max-age=60", path
        etag, modified = first.headers["etag"], first.headers["last-modified"]
        again = httpx.get(base + path, headers={"If-None-Match": etag})
        assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag, path
        assert again.headers["cache-control"] == "public, max-age=60"
        assert httpx.get(base + path, headers={"If-None-Match": 'W/"something-else"'}).status_code == 200, path
        assert httpx.get(base + path, headers={"If-Modified-Since": modified}).status_code == 304, path
        earlier = formatdate(parsedate_to_datetime(modified).timestamp() - 3600, usegmt=True)
        assert httpx.get(base + path, headers={"If-Modified-Since": earlier}).status_code == 200, path
        # If-None-Match wins over If-Modified-Since (RFC 9110 13.2.2)
        assert httpx.get(base + path, headers={"If-None-Match": '"other"', "If-Modified-Since": modified}).status_code == 200


def test_errors_health_and_rating_pages_are_never_stored(site):
    base, _ = site
    for path, status in (("/api/v1/health", 200), ("/board/nothing", 404), ("/rate/not-a-token", 404),
                         ("/api/v1/leaderboard?window=1y", 400)):
        response = httpx.get(base + path)
        assert (response.status_code, response.headers["cache-control"]) == (status, "no-store"), path
        assert "etag" not in response.headers, path


def test_a_store_write_changes_the_etag_and_the_page(site):
    base, url = site
    before = httpx.get(f"{base}/api/v1/leaderboard")
    etag = before.headers["etag"]
    ok = next(r for r in ROWS if r.model_id == "deepgram/nova-3" and r.status == "ok" and not r.emulator)
    s = open_store(url)
    s.add([replace(ok, run_id="run-http-write", started_at=NOW - 60)])  # one more attempt on a shown series
    s.close()
    after = httpx.get(f"{base}/api/v1/leaderboard", headers={"If-None-Match": etag})
    assert after.status_code == 200 and after.headers["etag"] != etag
    attempts = lambda doc: sum(r["attempts"] for r in doc["rows"] if r["model_id"] == "deepgram/nova-3")
    assert attempts(after.json()) > attempts(before.json())
    assert httpx.get(f"{base}/api/v1/leaderboard", headers={"If-None-Match": after.headers["etag"]}).status_code == 304


def test_head_is_the_get_without_its_body(site):
    base, _ = site
    got, head = httpx.get(f"{base}/api/v1/models"), httpx.head(f"{base}/api/v1/models")
    assert head.status_code == 200 and head.content == b""
    for name in ("content-type", "content-encoding", "content-length", "etag", "cache-control", "vary"):
        assert head.headers.get(name) == got.headers.get(name), name


def test_large_responses_are_gzipped_when_asked(site):
    base, _ = site
    for path in ("/api/v1/leaderboard", "/api/v1/openapi.json", "/model/deepgram/nova-3", "/board/nothing"):
        raw = httpx.get(base + path, headers={"Accept-Encoding": "gzip"})
        assert raw.headers["content-encoding"] == "gzip" and "accept-encoding" in raw.headers["vary"].lower(), path
        plain = httpx.get(base + path, headers={"Accept-Encoding": "identity"})
        assert "content-encoding" not in plain.headers and raw.content == plain.content, path  # httpx decodes
        refused = httpx.get(base + path, headers={"Accept-Encoding": "gzip;q=0, identity"})
        assert "content-encoding" not in refused.headers, path
    with httpx.Client() as client:  # the bytes on the wire: gzip, and much smaller
        with client.stream("GET", f"{base}/api/v1/leaderboard", headers={"Accept-Encoding": "gzip"}) as response:
            wire = b"".join(response.iter_raw())
    assert json.loads(gzip.decompress(wire)) and len(wire) < len(gzip.decompress(wire)) / 4
    small = httpx.get(f"{base}/api/v1/health", headers={"Accept-Encoding": "gzip"})
    assert "content-encoding" not in small.headers  # under 500 bytes: not worth it


def test_cors_only_on_the_api(site):
    base, _ = site
    origin = {"Origin": "https://example.org"}
    for path in ("/api/v1/leaderboard", "/api/v1/models/deepgram/nova-3/history", "/api/v1/health",
                 "/api/v1/openapi.json"):
        response = httpx.get(base + path, headers=origin)
        assert response.headers["access-control-allow-origin"] == "*", path
        assert "access-control-allow-credentials" not in response.headers
    preflight = httpx.options(f"{base}/api/v1/leaderboard",
                              headers={**origin, "Access-Control-Request-Method": "GET"})
    assert preflight.status_code == 204 and preflight.headers["access-control-allow-origin"] == "*"
    assert "POST" not in preflight.headers["access-control-allow-methods"]
    post = httpx.options(f"{base}/api/v1/leaderboard", headers={**origin, "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in post.headers
    for path in ("/", "/board/stt", "/model/deepgram/nova-3", "/method", "/rate/not-a-token"):
        assert "access-control-allow-origin" not in httpx.get(base + path, headers=origin).headers, path
    rate_post = httpx.post(f"{base}/rate/not-a-token/pair/1", headers=origin, data={"x": "1"})
    assert "access-control-allow-origin" not in rate_post.headers
    rate_preflight = httpx.options(f"{base}/rate/not-a-token/pair/1",
                                   headers={**origin, "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in rate_preflight.headers


def test_the_favicon_is_served_and_linked(site):
    base, _ = site
    for path in ("/favicon.ico", "/favicon.svg"):
        icon = httpx.get(base + path)
        assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml"), path
        assert icon.text.startswith("<svg") and "<script" not in icon.text
    assert '<link rel="icon" href="/favicon.svg" type="image/svg+xml">' in httpx.get(f"{base}/").text
