"""Speech quality of conversation replies (METHOD "Speech quality", issue #31 part 3): each answered
turn's reply scored by the single-turn instrument after the call (an instrument failure the turn's
instrument error, never its status), both stores keeping it (Postgres migration 20, SQLite schema 7,
older turns null), and every reader of a block (the CLI's board, the web board, the API's JSON and
CSV) and of a turn (the conversation's page and API) showing the figure metrics/ defines, checked
against a mean and a cluster-robust interval computed by hand from the seeded turns."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import math
import re
import sqlite3
import time
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest
from scipy.stats import t as student_t
from starlette.testclient import TestClient

from voxwatch.conversations.catalog import ScenarioCatalog, bundled_root as scenarios_root
from voxwatch.conversations.records import rows_of, score_of
from voxwatch.conversations.runner import ConversationSettings, run_conversation
from voxwatch.conversations.scenario_file import LoadedScenario
from voxwatch.conversations.scorecards import scorecard_text, turns_table
from voxwatch.foundation.audio import resample
from voxwatch.harness.tick import speech_quality as instrument
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.conversation_aggregate import scorecard, speech_quality
from voxwatch.metrics.published import rounded
from voxwatch.metrics.timeline import collect_audio
from voxwatch.providers.local.dnsmos_quality import INSTRUMENT_ID, DnsmosQuality
from voxwatch.providers.registry import Registry
from voxwatch.store import open_store
from voxwatch.store.conversation_rows import (ConversationRow, TurnRow, conversation_of_record,
                                              conversation_record)
from voxwatch.store.sqlite import SCHEMA_VERSION, _column
from voxwatch.web.app import create_app

from support.conversation_seed import stored_conversation
from support.postgres import fresh_postgres
from support.processes import run_cli

REGISTRY = Registry.default()
MODEL = "openai/gpt-realtime-2025-08-28"


# --- the runner -------------------------------------------------------------------------------------

@pytest.mark.realtime
def test_each_answered_turn_is_scored_after_the_call_and_a_failing_instrument_is_the_turns_error(tmp_path):
    """The local cascade through two turns of a bundled scenario: the instrument hears each turn's
    reply (as received, at 16 kHz) once the call is over; it fails on the second, which stays `ok`."""
    full = ScenarioCatalog([scenarios_root()]).load("clinic-desk")
    loaded = LoadedScenario(replace(full.scenario, turns=full.scenario.turns[:2]), full.folder, full.pin)
    model = REGISTRY.resolve("local/cascade-scripted-baseline")
    heard: list[np.ndarray] = []

    def flaky(audio16k: np.ndarray) -> float:
        heard.append(audio16k)
        if len(heard) == 2:
            raise RuntimeError("instrument fell over")
        return instrument(audio16k)

    adapter = REGISTRY.create(model)
    try:
        run = asyncio.run(run_conversation(adapter, model.id, model.vendor, loaded, ConversationSettings(quality=flaky)))
    finally:
        adapter.close()
    assert [t.status for t in run.turns] == ["ok", "ok"], [t.reason for t in run.turns]
    assert len(heard) == 2
    for turn, audio in zip(run.turns, heard):  # after the call: the reply the turn received, whole
        reply = collect_audio(turn.timeline.events)
        assert audio.size == resample(reply.samples, reply.sample_rate, 16000).size
    first, second = run.turns
    assert first.quality.mos == DnsmosQuality.get().score(heard[0]) and 1.0 <= first.quality.mos <= 5.0
    assert (first.quality.instrument, first.quality.error) == (INSTRUMENT_ID, None)
    assert second.quality.mos is None and second.quality.instrument == INSTRUMENT_ID
    assert second.quality.error == f"{INSTRUMENT_ID}: RuntimeError: instrument fell over"
    assert [t.quality_mos for t in run.score.turns] == [first.quality.mos, None]
    assert "MOS" in turns_table(run).splitlines()[0] and f"{first.quality.mos:.2f}" in turns_table(run)
    row, turns = rows_of(run, loaded, run_id="r", region="local", started_at=1.0, finished_at=2.0, whole=False)
    assert [(t.quality_mos, t.quality_instrument, t.instrument_error) for t in turns] == \
        [(first.quality.mos, INSTRUMENT_ID, None), (None, INSTRUMENT_ID, second.quality.error)]
    assert score_of(row, turns) == run.score  # the stored rows read back into the same score


# --- the definition, by hand ------------------------------------------------------------------------

def _by_hand(turns: list[tuple[str, float]]) -> tuple[float, tuple[float, float] | None, int]:
    """The block's speech quality from (conversation, MOS) pairs, written out: the mean; the one-way
    cluster-robust variance of a mean (residuals summed per conversation, squared, over n^2, times
    G / (G - 1)) with Student's t on G - 1 degrees of freedom, truncated at 1 and 5."""
    n = len(turns)
    mean = sum(m for _, m in turns) / n
    sums: dict[str, float] = {}
    for conversation, m in turns:
        sums[conversation] = sums.get(conversation, 0.0) + (m - mean)
    g = len(sums)
    if g < 2:
        return mean, None, n
    variance = g / (g - 1) * sum(s * s for s in sums.values()) / (n * n)
    half = student_t.ppf(0.975, g - 1) * math.sqrt(variance)
    return mean, (max(1.0, mean - half), min(5.0, mean + half)), n


def _seeded(talks: int = 6) -> list[tuple[ConversationRow, list[TurnRow]]]:
    rng = np.random.default_rng(31)
    now = time.time()
    out = [stored_conversation(rng, f"conv-{i}", model=MODEL, scenario="clinic-desk", persona="default",
                               region="us-east", started_at=now - 600 * (i + 1), turns=4, method=METHOD_VERSION,
                               quality=3.0 + 0.2 * (i % 3)) for i in range(talks)]
    few = stored_conversation(rng, "few-0", model=MODEL, scenario="clinic-desk", persona="noisy-cafe",
                              region="us-east", started_at=now - 60, turns=2, method=METHOD_VERSION, quality=3.5)
    return out + [few]


def _scored(conversations) -> list[tuple[str, float]]:
    return [(t.conversation_id, t.quality_mos) for _, turns in conversations for t in turns
            if t.quality_mos is not None]


def test_the_metric_is_the_mean_with_its_interval_clustered_by_conversation():
    block = [c for c in _seeded() if c[0].persona == "default"]
    mean, interval, n = _by_hand(_scored(block))
    q = speech_quality([score_of(row, turns) for row, turns in block])
    assert (q.n, q.instruments) == (n, (INSTRUMENT_ID,)) and n > 5
    assert q.mos == pytest.approx(mean, abs=1e-12)
    assert q.interval == pytest.approx(interval, abs=1e-9) and 1.0 <= q.interval[0] < q.mos < q.interval[1] <= 5.0
    one = speech_quality([score_of(*block[0])])
    assert one.interval is None and (one.mos is None) == (one.n < 5)  # one conversation: no interval
    assert speech_quality([]).mos is None and speech_quality([]).n == 0


# --- the stores -------------------------------------------------------------------------------------

def _store_all(url: str, conversations) -> None:
    store = open_store(url)
    try:
        for row, turns in conversations:
            assert store.add_conversation(row, turns)
    finally:
        store.close()


def test_an_older_sqlite_store_gains_the_columns_and_keeps_its_turns_null(tmp_path):
    path = tmp_path / "old.sqlite"
    old = [f for f in fields(TurnRow) if f.name not in ("quality_mos", "quality_instrument", "instrument_error")]
    row, turns = _seeded(1)[0]
    with sqlite3.connect(path) as db:  # the turn table as schema 6 made it, holding one conversation's turns
        db.execute(f"CREATE TABLE conversation_turns ({', '.join(_column(f) for f in old)}, "
                   "PRIMARY KEY (conversation_id, turn_index))")
        db.executemany(f"INSERT INTO conversation_turns VALUES ({', '.join('?' for _ in old)})",
                       [tuple(getattr(t, f.name) for f in old) for t in turns])
        db.execute("PRAGMA user_version = 6")
    store = open_store(f"sqlite:///{path}")
    try:
        assert store.add_conversation(row, [])  # the conversation's row; its turns are the old table's
        [(_, back)] = store.conversations(since=0)
        assert [t.quality_mos for t in back] == [None] * len(turns) and len(back) == 4
        row2, turns2 = replace_id(_seeded(1)[0], "new")
        assert store.add_conversation(row2, turns2)
        stored = {r.conversation_id: t for r, t in store.conversations(since=0)}
        assert [t.quality_mos for t in stored["new"]] == [t.quality_mos for t in turns2]
    finally:
        store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 7


def replace_id(conversation, new_id: str):
    row, turns = conversation
    return replace(row, conversation_id=new_id), [replace(t, conversation_id=new_id) for t in turns]


def test_migration_20_adds_the_turns_quality_and_keeps_older_turns_null():
    with fresh_postgres() as url:
        store = open_store(url)
        assert 20 in store.migrated
        row, turns = _seeded(1)[0]
        assert store.add_conversation(row, turns)
        conn = store.connection()
        for name in ("quality_mos", "quality_instrument", "instrument_error"):  # as migration 19 left it
            conn.execute(f"ALTER TABLE conversation_turns DROP COLUMN {name}")
        conn.execute("DELETE FROM schema_migrations WHERE version = 20")
        store.close()
        again = open_store(url)
        try:
            assert again.migrated == [20]
            row2, turns2 = replace_id(_seeded(1)[0], "new")
            assert again.add_conversation(row2, turns2)
            stored = {r.conversation_id: t for r, t in again.conversations(since=0)}
            assert [t.quality_mos for t in stored[row.conversation_id]] == [None] * 4
            assert [(t.quality_mos, t.quality_instrument) for t in stored["new"]] == \
                [(t.quality_mos, t.quality_instrument) for t in turns2] and any(t.quality_mos for t in turns2)
        finally:
            again.close()
        assert "schema up to date" in run_cli("db", "upgrade", "--store", url).stdout


def test_a_record_spooled_before_the_quality_fields_reads_with_them_null():
    row, turns = _seeded(1)[0]
    record = conversation_record(row, turns)
    for t in record["turns"]:
        for name in ("quality_mos", "quality_instrument", "instrument_error"):
            del t[name]
    _, back = conversation_of_record(json.loads(json.dumps(record)))
    assert [t.quality_mos for t in back] == [None] * 4
    bad = conversation_record(row, turns)
    bad["turns"][0]["quality_mos"] = "3.1"
    with pytest.raises(ValueError, match=r"turns\[0\]\.quality_mos: expected float \| None, got str"):
        conversation_of_record(bad)


# --- every reader, on both stores -------------------------------------------------------------------

@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.e2e)])
def store_of(request, tmp_path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'voxwatch.sqlite'}"
    else:
        with fresh_postgres() as url:
            run_cli("db", "upgrade", "--store", url)
            yield url


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_every_reader_shows_the_metrics_speech_quality(store_of: str, cli):
    seeded = _seeded()
    _store_all(store_of, seeded)
    block = [c for c in seeded if c[0].persona == "default"]
    mean, (low, high), n = _by_hand(_scored(block))
    few_n = len(_scored([c for c in seeded if c[0].persona != "default"]))
    assert 0 < few_n < 5  # the other block is under the floor: n/a

    code, out, err = cli("leaderboard", "--board", "s2s", "--store", store_of)
    assert code == 0, err
    lines = [line for line in out.splitlines() if "speech quality (MOS)" in line]
    assert lines == [f"  speech quality (MOS)    {mean:.2f} [{low:.2f}, {high:.2f}]  ({n} turns; {INSTRUMENT_ID})",
                     f"  speech quality (MOS)    -  ({few_n} turns scored; too few for a mean; {INSTRUMENT_ID})"], out

    with TestClient(create_app(store_of)) as client:
        board = client.get("/board/s2s").text
        api = client.get("/api/v1/conversations").json()
        table = list(csv.DictReader(io.StringIO(client.get("/api/v1/conversations?format=csv").text)))
        conversation = block[0][0].conversation_id
        page = client.get(f"/conversation/{conversation}").text
        one = client.get(f"/api/v1/conversations/{conversation}").json()

    blocks = {b["persona"]: b for b in api["blocks"]}
    q = blocks["default"]["speech_quality"]
    assert q == {"mos": rounded(mean, "fraction"), "n": n, "interval": rounded([low, high], "fraction"),
                 "instruments": [INSTRUMENT_ID]}
    assert blocks["noisy-cafe"]["speech_quality"] == {"mos": None, "n": few_n, "interval": None,
                                                      "instruments": [INSTRUMENT_ID]}

    shown = {r["persona"]: r for r in table if r["statistic"] == "quality_mos"}
    assert float(shown["default"]["value"]) == pytest.approx(mean, abs=1e-12)
    assert [float(shown["default"]["ci_low"]), float(shown["default"]["ci_high"])] == pytest.approx([low, high], abs=1e-9)
    assert (shown["default"]["n"], shown["default"]["instrument"]) == (str(n), INSTRUMENT_ID)
    assert (shown["noisy-cafe"]["value"], shown["noisy-cafe"]["n"]) == ("", str(few_n))

    sections = {m.group(1): m.group(0) for m in re.finditer(
        r'<section class="conversation-block"[^>]*data-persona="([^"]+)".*?</section>', board, re.S)}
    line = re.search(r'<tr data-stat="quality_mos">.*?</tr>', sections["default"], re.S).group(0)
    assert f'<td data-field="value">{mean:.2f}</td>' in line and f"[{low:.2f}, {high:.2f}]" in line
    assert f'<small data-field="instrument">{INSTRUMENT_ID}</small>' in line and f'<td data-field="n">{n}</td>' in line
    assert "speech quality (MOS)" in _text(line)
    few_line = re.search(r'<tr data-stat="quality_mos">.*?</tr>', sections["noisy-cafe"], re.S).group(0)
    assert "n/a: n &lt; 5 turns scored" in few_line

    turns = block[0][1]
    marks = re.findall(r'data-field="quality_mos"(?: data-value="([^"]+)")?>([^<]+)</span>', page)
    assert [(float(v) if v else None, s) for v, s in marks] == \
        [(t.quality_mos, "n/a" if t.quality_mos is None else f"{t.quality_mos:.2f}") for t in turns]
    assert page.count(f'<small data-field="quality_instrument">{INSTRUMENT_ID}</small>') == \
        sum(t.quality_instrument is not None for t in turns)
    assert [t["quality_mos"] for t in one["turns"]] == [rounded(t.quality_mos, "fraction") for t in turns]
    assert [t["quality_instrument"] for t in one["turns"]] == [t.quality_instrument for t in turns]

    # the in-memory board (`voxwatch scenarios run`) prints the same line from the same definition
    card = scorecard([score_of(row, t) for row, t in block])
    assert f"speech quality (MOS)    {mean:.2f} [{low:.2f}, {high:.2f}]" in scorecard_text(MODEL, "clinic-desk", card)
    assert asdict(card.speech_quality)["mos"] == pytest.approx(mean, abs=1e-12)
