"""The web's hostile cases from issue #30 (W1-W7), on real SQLite and Postgres stores and a real
`voxwatch serve` on loopback: the raw ratings' export only with the operator's token and never
cross-origin; nothing a rater's link opens names a configuration or a gold pair; a rater's token
masked in the access log; an id past any store's integers a 404; rating POSTs only from the site's
own pages; /rate/ under the same admission as the boards; a second answer a plain 409; every 405
with its Allow header.

The store and its raters are tests/test_web_rating.py's (its seeding helpers).
"""

from __future__ import annotations

import asyncio
import re
import threading

import httpx
import pytest

from voxwatch.store.connection import connect

from support.postgres import fresh_postgres
from support.processes import run_cli
from support.web_seed import serving
from test_web_rating import (OPERATOR, OPERATOR_TOKEN, TOKENS, Seeded, _answers, _client, _ratings, _seed,
                             seeded)  # noqa: F401 (a fixture)

pytestmark = pytest.mark.e2e

EXPORTS = ("/api/v1/preference/ratings.csv", "/api/v1/preference/ratings.jsonl")
HUGE = "99999999999999999999999999"
EVIL = "http://evil.example"


def test_the_ratings_export_needs_the_operator_token_and_is_never_cross_origin(seeded: Seeded):  # W1
    a = seeded.pairs["a_first"]
    with _client(seeded) as client:
        assert client.post(f"/rate/{TOKENS['ann']}/pair/{a.pair_id}", data=_answers(a, 1)).status_code == 303
        for path in EXPORTS:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {OPERATOR_TOKEN}"},
                            {"Authorization": f"Bearer {TOKENS['ann']}"}, {"Origin": EVIL}):
                refused = client.get(path, headers=headers)
                assert refused.status_code == 401, (path, headers)
                assert refused.headers["www-authenticate"].startswith("Bearer")
                assert "operator token" in refused.json()["error"] and "config" not in refused.text
                assert "access-control-allow-origin" not in refused.headers
            served = client.get(path, headers={**OPERATOR, "Origin": EVIL})
            assert served.status_code == 200 and a.config_a in served.text, path
            assert "access-control-allow-origin" not in served.headers
            assert served.headers["cache-control"] == "no-store"
            preflight = client.options(path, headers={"Origin": EVIL, "Access-Control-Request-Method": "GET"})
            assert "access-control-allow-origin" not in preflight.headers and preflight.status_code != 204
        public = client.get("/api/v1/health", headers={"Origin": EVIL})  # the public API stays public
        assert public.headers["access-control-allow-origin"] == "*"
        spec = client.get("/api/v1/openapi.json").json()
        reference = client.get("/api").text
    for path in EXPORTS:  # the document says so, and the reference's example sends the token
        operation = spec["paths"][path]["get"]
        assert operation["security"] == [{"operatorToken": []}] and {"401", "404"} <= set(operation["responses"])
    assert spec["components"]["securitySchemes"]["operatorToken"]["scheme"] == "bearer"
    assert "Authorization: Bearer $VOXWATCH_OPERATOR_TOKEN" in reference


def test_without_an_operator_token_the_export_is_not_served(seeded: Seeded, tmp_path):  # W1, `voxwatch serve`
    with serving(seeded.url, tmp_path / "serve.log") as base:
        for path in EXPORTS:
            for headers in ({}, OPERATOR):
                response = httpx.get(base + path, headers=headers, timeout=30)
                assert response.status_code == 404, path
                assert "voxwatch preference ratings export" in response.json()["error"]
                assert "access-control-allow-origin" not in response.headers
    with serving(seeded.url, tmp_path / "token.log", None, env={"VOXWATCH_OPERATOR_TOKEN": OPERATOR_TOKEN}) as base:
        assert httpx.get(base + EXPORTS[0], timeout=30).status_code == 401
        assert httpx.get(base + EXPORTS[0], headers=OPERATOR, timeout=30).status_code == 200
    for log in ("serve.log", "token.log"):
        assert OPERATOR_TOKEN not in (tmp_path / log).read_text()


def test_nothing_a_raters_link_opens_names_a_configuration_or_a_gold_pair(seeded: Seeded):  # W1
    ann = TOKENS["ann"]
    secrets = {p.config_a for p in seeded.pairs.values()} | {p.config_b for p in seeded.pairs.values()} | {
        "gold", "identical", "broken", "config", "local/"}
    with _client(seeded) as client:
        opened = [client.get(f"/rate/{ann}")]
        for pair in seeded.pairs.values():
            opened.append(client.get(f"/rate/{ann}/pair/{pair.pair_id}"))
            opened += [client.get(f"/rate/{ann}/audio/{pair.pair_id}/{shown}.wav") for shown in ("prompt", "first",
                                                                                                  "second")]
        opened.append(client.post(f"/rate/{ann}/pair/{seeded.pairs['identical'].pair_id}",
                                  data=_answers(seeded.pairs["identical"], 0)))
        for response in opened:
            assert response.status_code in (200, 303), response.url
            text = "" if response.headers.get("content-type") == "audio/wav" else response.text
            for secret in secrets:
                assert secret not in text.lower(), (response.url, secret)
                assert not any(secret in f"{k}: {v}".lower() for k, v in response.headers.items()
                               if k != "content-security-policy"), (response.url, secret)


def test_a_raters_audio_carries_no_file_time(seeded: Seeded):  # W1: a gold pair's broken audio was written later
    ann, broken = TOKENS["ann"], seeded.pairs["broken"]
    mtime = (seeded.outputs / broken.broken_audio_path).stat().st_mtime
    with _client(seeded) as client:
        tags = set()
        for pair in seeded.pairs.values():
            for shown in ("prompt", "first", "second"):
                response = client.get(f"/rate/{ann}/audio/{pair.pair_id}/{shown}.wav")
                assert response.status_code == 200 and "last-modified" not in response.headers, (pair.gold, shown)
                assert str(int(mtime)) not in response.headers["etag"]
                tags.add(response.headers["etag"])
        first = f"/rate/{ann}/audio/{broken.pair_id}/first.wav"
        etag = client.get(first).headers["etag"]
        part = client.get(first, headers={"Range": "bytes=0-3", "If-Range": etag})
        assert part.status_code == 206 and part.content == b"RIFF"
        whole = client.get(first, headers={"Range": "bytes=0-3", "If-Range": '"another"'})
        assert whole.status_code == 200 and len(whole.content) > 4
    assert len(tags) >= 4  # one per file, whatever its time


def test_the_access_log_masks_the_raters_token(seeded: Seeded, tmp_path):  # W2
    ann, pair = TOKENS["ann"], seeded.pairs["a_first"]
    log = tmp_path / "serve.log"
    with serving(seeded.url, log, None, "--access-log",
                 env={"VOXWATCH_PREFERENCE_OUTPUTS_DIR": str(seeded.outputs)}) as base:
        with httpx.Client(base_url=base, timeout=30, headers={"Origin": base}) as client:
            assert client.get(f"/rate/{ann}").status_code == 200
            assert client.get(f"/rate/{ann}/pair/{pair.pair_id}?from=mail").status_code == 200
            assert client.get(f"/rate/{ann}/audio/{pair.pair_id}/first.wav").status_code == 200
            assert client.post(f"/rate/{ann}/pair/{pair.pair_id}", data=_answers(pair, 1)).status_code == 303
            assert client.get("/rate/not-a-token").status_code == 404
            assert client.get("/api/v1/health").status_code == 200
    text = log.read_text()
    assert ann not in text and "not-a-token" not in text, text
    for line in (f"GET /rate/***/pair/{pair.pair_id}?from=mail", f"GET /rate/***/audio/{pair.pair_id}/first.wav",
                 f"POST /rate/***/pair/{pair.pair_id}", "GET /rate/*** ", "GET /api/v1/health"):
        assert line in text, (line, text)


def test_a_pair_id_past_any_stores_integers_is_a_404(seeded: Seeded):  # W3
    ann = TOKENS["ann"]
    with _client(seeded) as client:
        for path in (f"/rate/{ann}/pair/{HUGE}", f"/rate/{ann}/audio/{HUGE}/first.wav",
                     f"/rate/{ann}/pair/{2**63}", f"/rate/{ann}/pair/{2**63 - 1}", f"/rate/{ann}/pair/{'9' * 5000}",
                     f"/rate/{ann}/audio/{'9' * 5000}/first.wav", f"/rate/{ann}/pair/-1", f"/rate/{ann}/pair/1x"):
            response = client.get(path)  # Python will not even read an integer of 5,000 digits (a 500 before)
            assert response.status_code == 404 and "There is no" in response.text, path[:80]
            assert "9" * 30 not in response.text, path[:80]  # not echoed whole
        post = client.post(f"/rate/{ann}/pair/{HUGE}", data={"overall": "1"})
        assert post.status_code == 404 and not _ratings(seeded)


@pytest.mark.parametrize("headers", [{"Origin": EVIL}, {"Origin": "null"}, {"Origin": "http://testserver.evil.example"},
                                     {"Referer": f"{EVIL}/rate/x"}, {"Sec-Fetch-Site": "cross-site"},
                                     {"Sec-Fetch-Site": "same-site", "Origin": "http://testserver"}, {}],
                         ids=["origin", "null", "suffix", "referer", "fetch-site", "same-site", "none"])
def test_a_rating_post_from_another_site_is_refused(seeded: Seeded, headers):  # W4
    a = seeded.pairs["a_first"]
    with _client(seeded) as client:
        client.headers.pop("Origin")
        refused = client.post(f"/rate/{TOKENS['ann']}/pair/{a.pair_id}", data=_answers(a, 1), headers=headers)
        assert refused.status_code == 403 and "own rating pages" in refused.text
        assert not _ratings(seeded)
        for own in ({"Sec-Fetch-Site": "same-origin", "Origin": "null"}, {"Referer": "http://testserver/rate/x"}):
            pair = seeded.pairs["b_first" if "Referer" in own else "a_first"]
            taken = client.post(f"/rate/{TOKENS['ann']}/pair/{pair.pair_id}", data=_answers(pair, 1), headers=own)
            assert taken.status_code == 303, own


def test_a_second_answer_is_a_409_in_words(seeded: Seeded):  # W6
    a = seeded.pairs["a_first"]
    with _client(seeded) as client:
        assert client.post(f"/rate/{TOKENS['ann']}/pair/{a.pair_id}", data=_answers(a, 1)).status_code == 303
        again = client.post(f"/rate/{TOKENS['ann']}/pair/{a.pair_id}", data=_answers(a, -2))
    assert again.status_code == 409
    message = re.search(r'id="form-error">([^<]*)<', again.text).group(1)
    assert "You have rated this pair already" in message and not re.search(r"\d{9,}", message), message
    assert {r.cmos for r in _ratings(seeded)} == {1}  # shown A first: +1 in A/B terms, unchanged


def test_every_405_says_what_is_allowed(seeded: Seeded):  # W7
    pair_id = seeded.pairs["a_first"].pair_id
    with _client(seeded) as client:
        for method, path, allowed in (("POST", "/board/stt", {"GET", "HEAD"}),
                                      ("DELETE", "/api/v1/leaderboard", {"GET", "HEAD"}),
                                      ("PUT", f"/rate/{TOKENS['ann']}/pair/{pair_id}", {"GET", "HEAD", "POST"}),
                                      ("POST", f"/rate/{TOKENS['ann']}", {"GET", "HEAD"}),
                                      ("POST", "/static/site.css", {"GET", "HEAD"})):
            response = client.request(method, path)
            assert response.status_code == 405, (method, path)
            assert {m.strip() for m in response.headers["allow"].split(",")} == allowed, (method, path)


def test_rate_pages_wait_for_a_render_slot_as_the_boards_do(request, tmp_path):  # W5
    """One render slot, held by a rater's request stuck in the ratings store (a lock taken in
    Postgres): requests to unknown tokens and to the boards are both turned away with 503 and
    Retry-After; once the store answers, a real rater is served."""
    with fresh_postgres() as url:
        run_cli("db", "upgrade", "--store", url)
        s = _seed(url, tmp_path)
        with serving(url, tmp_path / "serve.log", None, "--renders", "1", "--queue-wait", "0.5") as base:
            with connect(url, autocommit=False) as lock:
                lock.execute("LOCK TABLE preference_raters IN ACCESS EXCLUSIVE MODE")
                stuck: list[int] = []
                holder = threading.Thread(target=lambda: stuck.append(
                    httpx.get(f"{base}/rate/the-first-unknown", timeout=60).status_code))
                holder.start()
                try:
                    _until_busy(base)
                    answers = asyncio.run(_flood(base, [f"/rate/unknown-{i}" for i in range(24)]
                                                 + ["/board/stt", "/board/tts", f"/rate/{TOKENS['ann']}"]))
                    for path, (status, retry_after) in answers.items():
                        assert status == 503 and retry_after, (path, status)
                finally:
                    lock.rollback()
                holder.join(timeout=60)
            assert stuck == [404]
            assert httpx.get(f"{base}/rate/{TOKENS['ann']}", timeout=30).status_code == 200
            assert httpx.get(f"{base}/board/stt", timeout=30).status_code == 200
    assert s.raters  # the rater served above was seeded


def _until_busy(base: str) -> None:
    """Until the one slot is taken (a render is turned away), or fail after a generous wait. Each
    probe is a page never kept (an unknown model's 404), so none is answered from the cache."""
    for i in range(120):
        if httpx.get(f"{base}/model/probe-{i}", timeout=30).status_code == 503:
            return
        threading.Event().wait(0.25)
    raise AssertionError("the stuck rater's request never held the render slot")


async def _flood(base: str, paths: list[str]) -> dict[str, tuple[int, str | None]]:
    """Every path at once (a bounded number of connections on loopback): (status, Retry-After) each."""
    async with httpx.AsyncClient(base_url=base, timeout=30, limits=httpx.Limits(max_connections=len(paths))) as client:
        responses = await asyncio.gather(*(client.get(p) for p in paths))
    return {p: (r.status_code, r.headers.get("retry-after")) for p, r in zip(paths, responses)}
