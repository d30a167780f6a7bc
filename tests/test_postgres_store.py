"""The Postgres store against a real server: same contract as SQLite, and the same leaderboard.

One throwaway database per session (voxwatch_test_<random>, dropped at the end); every test starts
from an empty schema. Set VOXWATCH_TEST_POSTGRES to an admin URL other than the local default;
without a reachable server these tests are skipped.
"""

from __future__ import annotations

import math
import os
import secrets
import socket
import time
from dataclasses import asdict, fields, replace
from pathlib import Path

import pytest

from voxwatch.boards import leaderboard
from voxwatch.boards.leaderboard import MetricRow
from voxwatch.foundation.observation import Observation, RunRecord
from voxwatch.providers.registry import Registry
from voxwatch.foundation.store_url import StoreError
from voxwatch.store import open_store
from voxwatch.store.connection import connect
from voxwatch.store.migrations import MIGRATIONS
from voxwatch.store.spool import SpoolingWriter, read_rows
from voxwatch.foundation.store_url import parse_store_url

from support.processes import run_cli

pytestmark = pytest.mark.e2e

ADMIN_URL = os.environ.get("VOXWATCH_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")
NOW = time.time()
HOUR, DAY = 3600.0, 86400.0


@pytest.fixture(scope="session")
def database() -> str:
    try:
        admin = connect(ADMIN_URL, timeout_s=5)
    except StoreError as exc:
        pytest.skip(f"no Postgres at {ADMIN_URL}: {exc}")
    name = f"voxwatch_test_{secrets.token_hex(4)}"
    admin.execute(f"CREATE DATABASE {name}")
    url = ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    try:
        yield url
    finally:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.close()


@pytest.fixture
def pg_url(database: str) -> str:
    """The session's database with an empty schema: each test migrates it from nothing."""
    with connect(database) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")
    return database


def obs(clip: str, status: str = "ok", value: float | None = 100.0, age_s: float = HOUR, **kw) -> Observation:
    ok = status == "ok"
    base = Observation(run_id="r1", model_id="pocketsphinx/en-us@5.1.1", dataset="stt-starter-clean", clip_id=clip,
                       attempt=1, board="stt", vendor="pocketsphinx", protocol="stt-stream", region="local",
                       started_at=NOW - age_s, status=status, reason=None if ok else f"{status} happened",
                       ttfs_ms=value if ok else None, first_partial_ms=value / 2 if ok and value else None,
                       substitutions=1 if ok else None, deletions=0 if ok else None, insertions=0 if ok else None,
                       ref_words=10 if ok else None, method_version="3", hypothesis="some words",
                       reference="some words", connection_reused=None)
    return replace(base, **kw)


def test_rows_round_trip_and_duplicates_are_not_counted_twice(pg_url: str):
    store = open_store(pg_url)
    rows = [obs("a"), obs("b", connection_reused=True, vad_params='{"mode": 3}'),
            obs("c", status="timeout"), obs("d", emulator=True, reference="tab\tand\nnewline 'quoted' ✓")]
    assert store.add(rows) == 4
    assert store.add(rows[:2]) == 0  # a redelivered write changes nothing
    assert store.add([replace(rows[0], attempt=2)]) == 1  # a retry is a new attempt row
    big = [obs(f"big{i}", value=float(i)) for i in range(200)]  # the COPY path
    assert store.add(big + rows) == 200
    assert store.add(big) == 0
    back = list(store.observations())
    assert len(back) == 205
    assert [asdict(r) for r in back if r.clip_id in "abcd" and r.attempt == 1] == [asdict(r) for r in rows]
    assert [r.clip_id for r in store.observations(since=NOW - HOUR / 2)] == []
    store.close()


def test_runs_are_upserted(pg_url: str):
    store = open_store(pg_url)
    run = RunRecord(run_id="r1", started_at=1.0, region="local", seed=2**40)
    store.start_run(run)
    run.status, run.rows, run.finished_at = "succeeded", 4, 2.0
    store.finish_run(run)
    assert [asdict(r) for r in store.runs()] == [asdict(run)]
    store.close()


def test_migrations_run_once_in_order_and_new_fields_are_added(pg_url: str):
    store = open_store(pg_url)
    assert store.migrated == [v for v, _ in MIGRATIONS] == sorted(v for v, _ in MIGRATIONS)
    store.close()
    with connect(pg_url) as conn:  # a store made before two fields: a row's own, a context's
        conn.execute("DROP VIEW observations CASCADE")
        conn.execute("ALTER TABLE obs_facts DROP COLUMN instrument_error")
        conn.execute("ALTER TABLE obs_contexts DROP COLUMN onset_version")
    again = open_store(pg_url)
    assert again.migrated == []
    assert again.add([obs("a", onset_version="2", instrument_error="instrument timed out")]) == 1
    back = next(again.observations())
    assert (back.onset_version, back.instrument_error) == ("2", "instrument timed out")
    assert [f.name for f in fields(Observation)] == [d.name for d in again.connection().execute(
        "SELECT * FROM observations_during(0, 'Infinity')").description]
    again.close()
    with connect(pg_url, autocommit=False) as conn:
        assert [v for (v,) in conn.execute("SELECT version FROM schema_migrations ORDER BY version")] == \
            [v for v, _ in MIGRATIONS]
    proc = run_cli("db", "upgrade", "--store", pg_url)
    assert "schema up to date" in proc.stdout


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_store_that_is_down_is_a_store_error_that_hides_the_password():
    port = _dead_port()
    for url in (f"postgresql://voxwatch:s3cret-pw@127.0.0.1:{port}/voxwatch",
                f"postgres://voxwatch@127.0.0.1:{port}/voxwatch?password=s3cret-pw&connect_timeout=2"):
        with pytest.raises(StoreError) as err:
            open_store(url)
        assert "s3cret-pw" not in str(err.value) and "***" in str(err.value)
        assert f"127.0.0.1:{port}" in str(err.value)
    proc = run_cli("leaderboard", "--store", f"postgresql://voxwatch:s3cret-pw@127.0.0.1:{port}/voxwatch", check=False)
    assert proc.returncode == 2 and "s3cret-pw" not in proc.stderr + proc.stdout and "Traceback" not in proc.stderr


def test_rows_refused_while_the_store_is_down_are_spooled_and_ingested_once_it_is_back(pg_url: str, tmp_path: Path):
    store = open_store(pg_url)
    writer = SpoolingWriter(store, tmp_path / "spool", "r1")
    writer.write(obs("a"))
    store._store = parse_store_url(f"postgresql://postgres@127.0.0.1:{_dead_port()}/x")  # the server goes away
    store._db.close()
    for clip in "bcdef":
        writer.write(obs(clip))
    spooled = writer.flush()
    assert spooled is not None and isinstance(writer.last_error, StoreError)
    assert [r.clip_id for r in read_rows(spooled)] == list("bcdef")
    store.close()
    for expect in ("5 were new", "0 were new"):
        assert expect in run_cli("ingest", str(spooled), "--store", pg_url).stdout
    back = open_store(pg_url)
    assert sorted(r.clip_id for r in back.observations()) == list("abcdef")
    [ttfs] = [r for r in leaderboard.from_store(back, "24h") if r.metric == "ttfs_ms"]
    assert ttfs.n == 6 and ttfs.attempts == 6  # the ingest refreshed the series' aggregates
    back.close()


def dataset() -> list[Observation]:
    """Several models, boards, datasets, regions and method versions; every kind of failure; rows
    measured against an emulator; WER parts; ages spread over (and past) every window."""
    rows: list[Observation] = []
    ages = [0.3 * HOUR, 5 * HOUR, 20 * HOUR, 2 * DAY, 5 * DAY, 6.5 * DAY, 9 * DAY, 20 * DAY, 29 * DAY, 40 * DAY]
    failures = ["timeout", "error", "rate_limited", "server_error", "malformed", "disconnected", "inaudible",
                "excluded", "auth_error"]
    series = [("pocketsphinx/en-us@5.1.1", "stt", "stt-stream", None),
              ("openai/gpt-4o-transcribe:realtime", "stt", "stt-stream", None),  # has registry exclusions
              ("faster-whisper/tiny.en@1.2.1", "stt", "stt-batch", None),
              ("espeak-ng/en-us@1.52.0", "tts", "tts-stream", "faster-whisper/tiny.en@1.2.1"),
              ("espeak-ng/en-us@1.52.0", "tts", "tts-stream", "other-stt@1"),  # never pooled across instruments
              ("openai/gpt-realtime-2025-08-28", "s2s", "s2s", None),
              ("unregistered/model@1", "stt", "stt-stream", None)]
    k = 0
    for m, (model_id, board, protocol, instrument) in enumerate(series):
        for dataset_name in ("stt-starter-clean", "stt-starter-noise"):
            for region in ("us-east", "eu-west"):
                for method in ("2", "3"):
                    if (m + len(dataset_name) + len(region) + int(method)) % 5 == 0:
                        continue  # not every series exists
                    for i in range(3 + (m * 7 + k) % 19):
                        k += 1
                        age = ages[(i + m) % len(ages)] + 37.0 * i
                        status = failures[(k // 6) % len(failures)] if k % 6 == 0 else "ok"
                        ok = status == "ok"
                        v = 50.0 + (k * 7919 % 1000) / 3.0
                        row = Observation(
                            run_id=f"run{i % 4}-{region}-{method}", model_id=model_id, dataset=dataset_name, clip_id=f"clip{i}",
                            attempt=1 + (k % 13 == 0), board=board, vendor=model_id.split("/")[0], protocol=protocol,
                            region=region, started_at=NOW - age, status=status, method_version=method,
                            emulator=k % 17 == 0, instrument_id=instrument,
                            substitutions=k % 3 if ok and k % 11 else None, deletions=k % 2 if ok and k % 11 else None,
                            insertions=0 if ok and k % 11 else None, ref_words=5 + k % 9 if ok and k % 11 else None)
                        if ok:
                            row = replace(row, ttfs_ms=v, first_partial_ms=v / 3, latency_ms=v * 2, rtf=v / 900,
                                          ttfa_ms=v + 10, ttfb_ms=v, leading_silence_ms=10.0 + k % 5, v2v_ms=v * 3,
                                          connect_ms=v / 10)
                        rows.append(row)
    for i in range(130):  # one long series (13 ticks of 10 clips): enough values for a p95 and its interval
        status = "timeout" if i % 23 == 7 else "ok"
        v = 120.0 + (i * 7919 % 1000) / 4.0 if status == "ok" else None
        rows.append(Observation(run_id=f"long{i // 10}", model_id="pocketsphinx/en-us@5.1.1", dataset="stt-starter-clean",
                                clip_id=f"clip{(i * 7) % 40}", attempt=1, board="stt", vendor="pocketsphinx",
                                protocol="stt-stream", region="ap-south", started_at=NOW - 3 * HOUR - 60.0 * i,
                                status=status, method_version="3", ttfs_ms=v, first_partial_ms=v and v / 3,
                                substitutions=i % 3 if v else None, deletions=0 if v else None,
                                insertions=0 if v else None, ref_words=9 if v else None))
    return rows


def _assert_same(a: list[MetricRow], b: list[MetricRow]) -> None:
    assert len(a) == len(b) and len(a) > 0
    for x, y in zip(a, b):
        for f in fields(MetricRow):
            u, v = getattr(x, f.name), getattr(y, f.name)
            if isinstance(u, float) or isinstance(u, tuple):
                pairs = zip(u, v) if isinstance(u, tuple) else [(u, v)]
                assert all(math.isclose(p, q, rel_tol=1e-9, abs_tol=1e-9) for p, q in pairs), (f.name, x, y)
            else:
                assert u == v, (f.name, x, y)


def test_the_leaderboard_is_the_same_from_sqlite_and_postgres(pg_url: str, tmp_path: Path):
    rows = dataset()
    sqlite = open_store(f"sqlite:///{tmp_path}/s.sqlite")
    sqlite.add(rows)
    pg = open_store(pg_url)
    for start in range(0, len(rows), 37):  # incremental writes, small and COPY-sized, refreshing as they go
        pg.add(rows[start:start + (1 if start % 2 else 37)])
        pg.add(rows[start + 1:start + 37])
    registry = Registry.default()
    statuses = {r.status for r in rows}
    assert len(statuses) >= 9 and any(r.emulator for r in rows) and len({r.method_version for r in rows}) == 2
    for window in leaderboard.WINDOWS:
        expected = leaderboard.from_store(sqlite, window, registry)
        _assert_same(expected, leaderboard.from_store(pg, window, registry))
        assert {r.board for r in expected} == {"stt", "tts", "s2s"}
        assert any(r.note for r in expected) and any(r.p50_ci for r in expected) and any(r.wer_ci for r in expected)
        assert any(r.p95 is not None and r.p95_ci and r.std is not None and r.mean_ci for r in expected)
        assert len({r.instrument for r in expected if r.board == "tts"}) == 2
    assert pg.refresh() > 0  # a full rebuild gives the same numbers again
    _assert_same(leaderboard.from_store(sqlite, "30d", registry), leaderboard.from_store(pg, "30d", registry))
    assert leaderboard.from_store(pg, "24h") != leaderboard.from_store(pg, "30d")
    sqlite.close()
    pg.close()


def test_a_write_refreshes_only_the_series_it_touched(pg_url: str):
    store = open_store(pg_url)
    store.add([obs(f"c{i}", value=100.0 + i) for i in range(6)] + [obs(f"n{i}", dataset="stt-starter-noise") for i in range(6)])
    with connect(pg_url, autocommit=False) as conn:
        before = dict(conn.execute("SELECT dataset, max(computed_at) FROM aggregates GROUP BY dataset").fetchall())
        store.add([obs("c7", value=1000.0)])
        after = dict(conn.execute("SELECT dataset, max(computed_at) FROM aggregates GROUP BY dataset").fetchall())
    assert after["stt-starter-noise"] == before["stt-starter-noise"]
    assert after["stt-starter-clean"] > before["stt-starter-clean"]
    [clean] = [r for r in leaderboard.from_store(store, "24h") if r.metric == "ttfs_ms" and r.dataset == "stt-starter-clean"]
    assert clean.n == 7 and clean.max == 1000.0
    store.close()


def test_a_series_whose_rows_left_the_window_leaves_that_window(pg_url: str):
    store = open_store(pg_url)
    store.add([obs(f"c{i}", age_s=2 * DAY) for i in range(5)])
    assert leaderboard.from_store(store, "24h") == []
    assert {r.n for r in leaderboard.from_store(store, "7d") if r.metric == "ttfs_ms"} == {5}
    store.close()


def test_a_refresh_reads_its_series_by_key_run_by_run(pg_url: str):
    """The refresh finds a series' rows through the runs of its window and the fact table's key
    (run, model, dataset, ...): one index range per run, never a pass over the table."""
    from voxwatch.store import aggregates

    store = open_store(pg_url)
    store.add([obs(f"c{i}", run_id=f"r{i % 4}") for i in range(40)], refresh=False)
    with connect(pg_url, autocommit=False) as conn:
        conn.execute("SET enable_seqscan = off")
        conn.execute("SET enable_bitmapscan = off")
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + aggregates.FETCH_SQL, {
            "model_id": "pocketsphinx/en-us@5.1.1", "dataset": "stt-starter-clean", "region": "local",
            "method_version": "3", "since": 0.0}))
    lines = plan.splitlines()
    scans = [i for i, line in enumerate(lines) if " on obs_facts_" in line]  # one per month's partition
    assert scans, plan
    for at in scans:
        assert "Index Scan using obs_facts_" in lines[at] and "_pkey" in lines[at], plan
        cond = lines[at + 1]
        assert "run_id_ref = ANY" in cond and "model_id_ref =" in cond and "dataset_ref =" in cond, plan
    store.close()


def _wide_store(url: str, rows: list[Observation]) -> None:
    """A store as migrations 1-5 left it: the wide observations table, holding these rows."""
    with connect(url) as conn:
        conn.execute("CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        for version, sql in MIGRATIONS[:5]:
            for statement in sql.split(";\n"):
                conn.execute(statement)
            conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
        names = [f.name for f in fields(Observation)]
        with conn.cursor() as cur:
            cur.executemany(f"INSERT INTO observations ({', '.join(names)}) VALUES ({', '.join(['%s'] * len(names))})",
                            [tuple(asdict(r).values()) for r in rows])


def test_a_store_made_before_the_narrow_layout_keeps_every_row(pg_url: str, tmp_path: Path):
    rows = dataset() + [obs("odd", reference="tab\tand\nnewline 'quoted' ✓", vad_params='{"mode": 3}', voice=None,
                            connection_reused=True)]
    _wide_store(pg_url, rows)
    store = open_store(pg_url)
    assert store.migrated == [v for v, _ in MIGRATIONS[5:]]  # 6 and every later one
    key = lambda r: (r.run_id, r.model_id, r.dataset, r.clip_id, r.attempt)
    assert sorted(map(asdict, store.observations()), key=lambda d: key(Observation(**d))) == \
        sorted(map(asdict, rows), key=lambda d: key(Observation(**d)))
    assert store.add(rows) == 0  # the moved rows keep their keys
    sqlite = open_store(f"sqlite:///{tmp_path / 'same.sqlite'}")
    sqlite.add(rows)
    registry = Registry.default()
    _assert_same(leaderboard.from_store(sqlite, "30d", registry), leaderboard.from_store(store, "30d", registry))
    sqlite.close()
    store.close()


def test_writers_that_meet_the_same_new_names_at_once_share_one_entry(pg_url: str):
    """Workers of one run write its first rows together: each name and context is interned once,
    every row is kept, and a key both write is counted once."""
    import threading

    open_store(pg_url).close()
    stores = [open_store(pg_url) for _ in range(4)]
    start = threading.Barrier(len(stores))
    added: list[int] = []

    def write(k: int) -> None:
        start.wait()
        rows = [obs(f"w{k}-{i}", run_id="r-new", model_id="new/model@1", region="eu-new") for i in range(30)]
        added.append(stores[k].add(rows + [obs("shared", run_id="r-new", model_id="new/model@1", region="eu-new")]))

    threads = [threading.Thread(target=write, args=(k,)) for k in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(added) == 4 * 30 + 1
    with connect(pg_url, autocommit=False) as conn:
        assert conn.execute("SELECT count(*) FROM obs_names WHERE name IN ('r-new', 'new/model@1')").fetchone()[0] == 2
        assert conn.execute("SELECT count(*) FROM obs_contexts WHERE region = 'eu-new'").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM observations WHERE run_id = 'r-new'").fetchone()[0] == 121
    [ttfs] = [r for r in leaderboard.from_store(stores[0], "24h") if r.metric == "ttfs_ms"]
    assert ttfs.n == 121
    for s in stores:
        s.close()


def test_a_batch_that_holds_a_key_twice_stores_it_once(pg_url: str):
    store = open_store(pg_url)
    rows = [obs(f"b{i}") for i in range(40)]
    assert store.add(rows + [replace(rows[3], ttfs_ms=1.0)]) == 40
    assert store.add(rows[:5]) == 0 and store.add(rows[:30] + [obs("b40")]) == 1
    assert len(list(store.observations())) == 41
    store.close()


def test_observations_during_a_time_range_are_the_rows_measured_in_it(pg_url: str):
    store = open_store(pg_url)
    rows = dataset()
    store.add(rows)
    low, high = NOW - 6 * DAY, NOW - 4 * HOUR
    with connect(pg_url, autocommit=False) as conn:
        got = conn.execute("SELECT run_id, model_id, dataset, clip_id, attempt FROM observations_during(%s, %s)",
                           (low, high)).fetchall()
    want = [(r.run_id, r.model_id, r.dataset, r.clip_id, r.attempt) for r in rows if low <= r.started_at <= high]
    assert sorted(got) == sorted(want) and 0 < len(want) < len(rows)
    store.close()


def test_a_batch_goes_to_the_server_in_key_order_whatever_order_it_came_in(pg_url: str):
    """Key order lets every row extend the key's index at its right edge; the rows stored are the same."""
    import random

    from voxwatch.store.interning import Spans
    from voxwatch.store.layout import FACT_COLUMNS

    store = open_store(pg_url)
    rows = [obs(f"k{i:03d}", run_id=f"run-{i % 7}", dataset=("stt-starter-clean", "stt-starter-noise")[i % 2],
                age_s=HOUR + i) for i in range(300)]
    random.Random(5).shuffle(rows)
    facts = list(store._dictionaries.facts(rows, Spans()))
    keys = [f[:5] for f in facts]
    at = FACT_COLUMNS.index("started_at")
    assert keys == sorted(keys) and len(set(keys)) == 300 and keys != [f[:5] for f in sorted(facts, key=lambda f: f[at])]
    assert store.add(rows, refresh=False) == 300
    stored = {(r.run_id, r.clip_id, r.dataset, r.started_at) for r in store.observations()}
    assert stored == {(r.run_id, r.clip_id, r.dataset, r.started_at) for r in rows}
    store.close()


def test_rows_of_one_series_from_several_contexts_are_pooled_as_sqlite_pools_them(pg_url: str, tmp_path: Path):
    """A series' rows measured over HTTP/1.1 and HTTP/2, by two runner versions, are one group (the
    refresh labels each context by board, protocol and instrument), exactly as SQLite groups them."""
    rows = [obs(f"h{i}", model_id="faster-whisper/tiny.en@1.2.1", protocol="stt-batch", ttfs_ms=None,
                latency_ms=100.0 + 7 * i, http_version=("HTTP/1.1", "HTTP/2")[i % 2],
                runner_version=("0.1.0", "0.2.0")[i % 3 == 0], age_s=HOUR + 60 * i) for i in range(30)]
    sqlite, pg = open_store(f"sqlite:///{tmp_path}/s.sqlite"), open_store(pg_url)
    sqlite.add(rows)
    pg.add(rows)
    with connect(pg_url, autocommit=False) as conn:
        assert conn.execute("SELECT count(DISTINCT context_ref) FROM obs_facts").fetchone()[0] == 4
    got = leaderboard.from_store(pg, "24h")
    [latency] = [r for r in got if r.metric == "latency_ms"]
    assert latency.n == 30
    _assert_same(leaderboard.from_store(sqlite, "24h"), got)
    sqlite.close()
    pg.close()


def test_measured_models_are_those_with_a_row_not_measured_against_an_emulator(pg_url: str):
    """What the alert-history dashboard keeps an alert by, found by key (runs of real contexts, then
    each model in each run), not by a pass over every row."""
    from voxwatch.store.layout import MEASURED_MODELS

    store = open_store(pg_url)
    store.add([obs("a", model_id="real/a@1"), obs("b", model_id="mixed/b@1", emulator=True),
               obs("c", model_id="mixed/b@1", run_id="r2"), obs("d", model_id="emulated/c@1", emulator=True),
               obs("e", model_id="emulated/c@1", run_id="r3", emulator=True)], refresh=False)
    asked = ["real/a@1", "mixed/b@1", "emulated/c@1", "never/seen@1"]
    body = MEASURED_MODELS.split("$$")[1].replace("unnest(models)", "unnest(%s::text[])")
    with connect(pg_url, autocommit=False) as conn:
        got = [m for (m,) in conn.execute("SELECT measured_models(%s) ORDER BY 1", (asked,))]
        assert got == sorted([m for (m,) in conn.execute(body, (asked,))]) == ["mixed/b@1", "real/a@1"]
        conn.execute("SET enable_seqscan = off")
        conn.execute("SET enable_bitmapscan = off")
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + body, (asked,)))
    lines = plan.splitlines()
    scans = [i for i, line in enumerate(lines) if " on obs_facts_" in line]  # one per month's partition
    assert scans and all("Index Scan using obs_facts_" in lines[at] and "run_id_ref = ANY" in lines[at + 1]
                         for at in scans), plan
    store.close()
