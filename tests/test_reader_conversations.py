"""Conversations count where a reader looks (issue #31 part 4): a store holding only conversations
shows them on the home page, the S2S board's header and freshness stamp, the model's page, the API
and `voxwatch leaderboard`, never the empty state nor a distributed-mode command; the scripted
baseline is labelled a baseline everywhere, and a block of few conversations says "preliminary".
Real SQLite and Postgres stores, the app in-process (starlette's TestClient), the CLI as a user runs it."""

from __future__ import annotations

import contextlib
import re
import time
from html import unescape
from typing import Iterator

import numpy as np
import pytest
from starlette.testclient import TestClient

from voxwatch.foundation.store_url import POSTGRES, store_kind
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.preliminary import SETTLED_CLUSTERS
from voxwatch.store import open_store
from voxwatch.web.app import create_app

from support.conversation_seed import stored_conversation
from support.browser import browser  # noqa: F401 (a fixture)
from support.postgres import fresh_postgres
from support.processes import run_cli

BASELINE = "local/cascade-scripted-baseline"
TALKS = 3  # under SETTLED_CLUSTERS: the block is preliminary
DISTRIBUTED_WORDS = ("beat starts", "voxwatch tick")


def _seed(url: str, talks: int = TALKS) -> float:
    """`talks` conversations of the scripted baseline; the newest one's start."""
    rng = np.random.default_rng(7)
    store = open_store(url)
    newest = 0.0
    try:
        for i in range(talks):
            started = time.time() - 3600 * (i + 1)
            newest = max(newest, started)
            row, turns = stored_conversation(rng, f"conv-{i}", model=BASELINE, scenario="clinic-desk",
                                             persona="default", region="local", started_at=started, turns=4,
                                             method=METHOD_VERSION)
            assert store.add_conversation(row, turns)
    finally:
        store.close()
    return newest


@contextlib.contextmanager
def _postgres() -> Iterator[str]:
    with fresh_postgres() as url:
        run_cli("db", "upgrade", "--store", url)
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.e2e)])
def store_of(request, tmp_path) -> Iterator[str]:
    """A migrated empty store of each kind (its URL)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'voxwatch.sqlite'}"
        open_store(url).close()
        yield url
    else:
        with _postgres() as url:
            yield url


def _text(html: str) -> str:
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)))


def _section(html: str, board: str) -> str:
    return html.split(f'id="board-{board}"', 1)[1].split("</section>", 1)[0]


def test_a_store_of_conversations_only_shows_them_where_a_reader_looks(store_of: str):
    newest = _seed(store_of)
    with TestClient(create_app(store_of)) as client:
        home, board = client.get("/").text, client.get("/board/s2s").text
        model = client.get(f"/model/{BASELINE}").text
        api = client.get("/api/v1/conversations").json()
        one = client.get("/api/v1/conversations/conv-0").json()
        conversation = client.get("/conversation/conv-0").text
        models = client.get("/api/v1/models").json()
    s2s = _section(home, "s2s")
    assert f'data-field="conversations" data-count="{TALKS}"' in s2s and f"{TALKS} conversations" in _text(s2s)
    assert 'data-field="empty"' not in s2s  # the S2S board holds conversations: not empty
    assert 'data-field="empty"' in _section(home, "stt")  # the STT board holds nothing
    for shown in (s2s, board):  # the S2S board's own words (the empty STT and TTS boards name how to measure)
        assert not any(words in shown for words in DISTRIBUTED_WORDS)
    for page in (home, board):
        stamp = re.search(r'<time data-field="newest">', page)
        assert stamp and "No measurement stored yet" not in page  # the stamp counts conversations
        assert f'data-newest="{newest}"' in page
    assert 'data-field="empty"' not in board and "No single-turn measurements" not in board
    assert f'data-count="{TALKS}"' in board.split("</h1>", 1)[1].split('<section', 1)[0]  # the header counts them
    assert board.count('class="conversation-block"') == 1
    assert "No series of this model" not in model and model.count('class="conversation-block"') == 1
    assert f'data-count="{TALKS}"' in model and 'data-field="baseline"' in model.split("</h1>")[0]
    assert "A scripted baseline, not a language model" in _text(model)
    for page in (board, model):
        block = page.split('class="conversation-block"', 1)[1].split("</h3>", 1)[0]
        assert 'data-field="baseline"' in block
        assert f"preliminary: only {TALKS} conversations so far" in _text(block)
    assert one["baseline"] is True and 'data-field="baseline"' in conversation.split('data-field="model"', 1)[1]
    [block] = api["blocks"]
    assert block["baseline"] is True and block["preliminary"] is True
    assert block["preliminary_reason"] == (f"only {TALKS} conversations so far: its intervals stay wide until "
                                           f"{SETTLED_CLUSTERS}")
    assert models["models"] == []  # no single-turn series: the models listing is of series
    assert all(re.fullmatch(r"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", c["started_at"]) for c in api["conversations"])
    rates = [block["adherence"]["rate"], *block["adherence"]["interval"], *(r["rate"] for r in block["dimensions"].values()
                                                                          if r["rate"] is not None)]
    assert rates and all(round(v, 4) == v for v in rates)  # published: fractions to 4 places


def test_the_cli_prints_the_conversation_board_without_no_observations(store_of: str, cli):
    _seed(store_of)
    code, out, err = cli("leaderboard", "--board", "s2s", "--store", store_of)
    assert code == 0, err
    assert "No observations" not in out and "voxwatch run` first" not in out
    assert out.startswith("S2S conversations - rolling 30d")
    assert f"{BASELINE} [baseline: a script, not a model] on clinic-desk" in out
    assert f"  preliminary: only {TALKS} conversations so far" in out


def test_a_settled_block_is_not_preliminary(tmp_path):
    url = f"sqlite:///{tmp_path / 'voxwatch.sqlite'}"
    _seed(url, SETTLED_CLUSTERS)
    with TestClient(create_app(url)) as client:
        [block] = client.get("/api/v1/conversations").json()["blocks"]
        board = client.get("/board/s2s").text
    assert block["preliminary"] is False and block["preliminary_reason"] is None
    assert 'data-field="preliminary"' not in board


def test_an_empty_store_says_voxwatch_run_never_a_distributed_command(store_of: str):
    with TestClient(create_app(store_of)) as client:
        home, board = client.get("/").text, client.get("/board/s2s").text
    for page in (home, board):
        assert 'data-field="empty"' in page and "<code>voxwatch run</code> measures every board now" in page
        assert "No measurement stored yet" in page
        assert "voxwatch tick" not in page
    assert ("beat starts" in board) == (store_kind(store_of) == POSTGRES)  # workers and beat exist there only


def test_chromium_at_390_px_shows_the_conversations_of_a_store_holding_only_them(store_of: str, browser, tmp_path):
    """A phone's reading of a store of conversations only: the home page's S2S board counts them and
    links to the board, which shows the baseline's block (labelled, preliminary) inside the window's
    width, with no empty state and a newest-measurement stamp."""
    from support.web_seed import serving

    _seed(store_of)
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                            {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True})
    try:
        with serving(store_of, tmp_path / "serve.log") as base:
            browser.get(base + "/")
            home = browser.execute_script("""
                const s2s = document.querySelector('#board-s2s');
                const count = s2s.querySelector('[data-field="conversations"]');
                return {count: count && count.innerText, visible: !!(count && count.offsetHeight),
                        empty: !!s2s.querySelector('[data-field="empty"]'),
                        link: count && count.querySelector('a').getAttribute('href'),
                        newest: !!document.querySelector('time[data-field="newest"]'),
                        scroll: document.documentElement.scrollWidth};""")
            assert home["count"].startswith(f"{TALKS} conversations in the last 30d") and home["visible"], home
            assert not home["empty"] and home["newest"] and home["scroll"] <= 390, home
            browser.get(base + home["link"])
            board = browser.execute_script("""
                const block = document.querySelector('section.conversation-block');
                const box = e => e && e.getBoundingClientRect().toJSON();
                const mark = s => block && block.querySelector(s);
                return {blocks: document.querySelectorAll('section.conversation-block').length,
                        baseline: mark('[data-field="baseline"]') && mark('[data-field="baseline"]').innerText,
                        preliminary: mark('[data-field="preliminary"]') && mark('[data-field="preliminary"]').innerText,
                        heading: box(block && block.querySelector('h3')),
                        header: document.querySelector('h1 + p[data-field="conversations"]') !== null,
                        empty: document.querySelectorAll('[data-field="empty"]').length,
                        stamp: document.querySelector('.freshness').innerText,
                        scroll: document.documentElement.scrollWidth};""")
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    assert board["blocks"] == 1 and board["baseline"] == "baseline" and board["header"], board
    assert board["preliminary"].startswith(f"preliminary: only {TALKS} conversations so far"), board
    assert board["empty"] == 0 and board["stamp"].startswith("Newest measurement"), board
    assert board["scroll"] <= 390 and 0 <= board["heading"]["left"] and board["heading"]["right"] <= 390, board
