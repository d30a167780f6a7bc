"""The Postgres fact table partitioned by month (voxwatch.store.partitions): a store made before it
keeps every row and board, writes make the months they need, a run's key stays one key, and an old
month detached for archiving leaves the boards of newer windows as they were."""

from __future__ import annotations

import time
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from voxwatch.boards import leaderboard
from voxwatch.providers.registry import Registry
from voxwatch.store import migrations, open_store
from voxwatch.store.connection import connect
from voxwatch.store.layout import derived_objects
from voxwatch.store.partitions import month_of, next_month, table_of

from support.processes import run_cli
from test_postgres_store import DAY, HOUR, NOW, _assert_same, _wide_store, database, dataset, obs, pg_url  # noqa: F401

pytestmark = pytest.mark.e2e

PARTITIONED = 15
"""The migration that partitions obs_facts by month."""
KEY = lambda d: (d["run_id"], d["model_id"], d["dataset"], d["clip_id"], d["attempt"])  # noqa: E731


def _attached(url: str) -> dict[str, int]:
    with connect(url) as conn:
        return dict(conn.execute("SELECT c.relname, (SELECT count(*) FROM obs_facts f WHERE f.tableoid = c.oid) "
                                 "FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                                 "WHERE i.inhparent = 'obs_facts'::regclass").fetchall())


def _months_apart() -> list:
    """dataset() (ages up to 40 days) and rows of runs 70 and 100 days old: three months or more."""
    old = [obs(f"old{i}", run_id=f"old-{i % 2}", age_s=(70 + 30 * (i % 2)) * DAY + i) for i in range(12)]
    return dataset() + old


def _unpartitioned_store(url: str, rows: list) -> None:
    """A store as the migrations before partitioning left it (1-14; 6 moved the rows into the narrow
    layout's one fact table), with its view, holding these rows."""
    _wide_store(url, rows)
    with connect(url) as conn, conn.transaction(), conn.cursor() as cur:
        for version, step in migrations.MIGRATIONS:
            if 5 < version < PARTITIONED:
                step(cur) if callable(step) else [cur.execute(sql) for sql in step.split(";\n")]
                cur.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
        cur.execute(derived_objects()[0])  # the view (observations_during came with it, and goes with it)


def test_a_store_made_before_partitioning_keeps_every_row_and_board(pg_url: str, tmp_path: Path):
    rows = _months_apart()
    _unpartitioned_store(pg_url, rows)
    with connect(pg_url) as conn:
        assert conn.execute("SELECT relkind FROM pg_class WHERE relname = 'obs_facts'").fetchone()[0] == "r"
        stored = conn.execute("SELECT count(*) FROM obs_facts").fetchone()[0]
    assert stored == len(rows)
    store = open_store(pg_url)
    assert store.migrated[0] == PARTITIONED  # and any migration after it
    assert sorted(map(asdict, store.observations()), key=KEY) == sorted(map(asdict, rows), key=KEY)
    by_month = _attached(pg_url)
    months = {month_of(NOW), next_month(month_of(NOW)), month_of(NOW - 100 * DAY), month_of(NOW - 70 * DAY)}
    assert {table_of(m) for m in months} <= set(by_month) and sum(by_month.values()) == len(rows)
    assert store.add(rows) == 0  # every moved row keeps its key
    sqlite = open_store(f"sqlite:///{tmp_path / 'same.sqlite'}")
    sqlite.add(rows)
    registry = Registry.default()
    store.refresh()
    for window in leaderboard.WINDOWS:
        _assert_same(leaderboard.from_store(sqlite, window, registry), leaderboard.from_store(store, window, registry))
    assert store.connection().execute("SELECT count(*) FROM measured_models(ARRAY['pocketsphinx/en-us@5.1.1'])"
                                      ).fetchone()[0] == 1
    sqlite.close()
    store.close()


def test_a_write_makes_the_month_it_needs_and_a_key_stays_one_key(pg_url: str):
    store = open_store(pg_url)
    far = month_of(NOW - 400 * DAY)
    assert table_of(far) not in _attached(pg_url)
    first = [obs(f"c{i}", run_id="backfill", age_s=400 * DAY - i) for i in range(20)]  # a COPY
    assert store.add(first) == 20
    assert _attached(pg_url)[table_of(far)] == 20
    # the same keys measured again later (a redelivered task measures anew): the run's month holds them, once
    again = open_store(pg_url)  # a writer that has not seen the run
    later = [replace(r, started_at=r.started_at + 40 * DAY, ttfs_ms=1.0) for r in first]
    assert again.add(later) == 0 and again.add(later[:1]) == 0
    assert sum(_attached(pg_url).values()) == 20
    again.close()
    store.close()


def test_an_old_month_detached_leaves_the_boards_of_newer_windows_unchanged(pg_url: str):
    rows = [r for r in _months_apart() if r.started_at > NOW - 29 * DAY or r.clip_id.startswith("old")]
    store = open_store(pg_url)
    store.add(rows)
    registry = Registry.default()
    boards = {w: leaderboard.from_store(store, w, registry) for w in leaderboard.WINDOWS}
    exported = [asdict(r) for r in store.observations(since=NOW - 30 * DAY)]
    cut = next_month(month_of(NOW - 70 * DAY))
    text = f"{cut // 100}-{cut % 100:02d}"
    proc = run_cli("db", "detach-before", text, "--store", pg_url)
    assert proc.returncode == 0, proc.stderr
    gone = {table_of(month_of(NOW - 70 * DAY)), table_of(month_of(NOW - 100 * DAY))}
    assert all(name in proc.stdout for name in gone)
    assert gone.isdisjoint(_attached(pg_url))
    with connect(pg_url) as conn:  # archived, not lost
        assert sum(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in gone) == 12
    assert not [r for r in store.observations() if r.clip_id.startswith("old")]
    store.refresh()
    for window, board in boards.items():
        _assert_same(board, leaderboard.from_store(store, window, registry))
    assert [asdict(r) for r in store.observations(since=NOW - 30 * DAY)] == exported
    # a write into a detached month is refused with its reason, and nothing else is lost
    late = obs("late", run_id="another-old-run", age_s=100 * DAY)
    with pytest.raises(Exception, match="detached"):
        open_store(pg_url).add([late])
    assert store.add([obs("new", run_id="today")]) == 1


@pytest.mark.parametrize("month", ["2026-13", "26-01", "January", ""])
def test_a_bad_month_to_detach_before_is_one_line_and_exit_2(pg_url: str, month: str):
    proc = run_cli("db", "detach-before", month, "--store", pg_url, check=False)
    assert proc.returncode == 2 and "YYYY-MM" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_detach_before_on_sqlite_is_refused_in_one_line(tmp_path: Path):
    proc = run_cli("db", "detach-before", "2026-01", "--store", f"sqlite:///{tmp_path / 's.sqlite'}", check=False)
    assert proc.returncode == 2 and "only the Postgres store" in proc.stderr and "Traceback" not in proc.stderr


def test_a_role_that_may_not_make_partitions_still_opens_the_store(pg_url: str):
    """The web's role (docker/postgres-roles.sh: reads, and adds ratings) opens the store; in a month
    whose next partition no writer has made yet, it opens without making it."""
    import secrets

    open_store(pg_url).close()
    nxt = table_of(next_month(month_of(time.time())))
    role = f"voxwatch_test_reader_{secrets.token_hex(4)}"
    with connect(pg_url) as conn:
        conn.execute(f"DROP TABLE {nxt}")
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT pg_read_all_data TO {role}")
        conn.execute(f"GRANT CREATE ON SCHEMA public TO {role}")  # may create tables, is not the owner of obs_facts
    try:
        reader = open_store(pg_url.replace("postgresql://postgres@", f"postgresql://{role}@"))
        assert reader.migrated == [] and nxt not in _attached(pg_url)
        reader.close()
        writer = open_store(pg_url)
        assert nxt in _attached(pg_url)  # the next writer's open makes it
        writer.close()
    finally:
        with connect(pg_url) as conn:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")


def test_a_series_read_opens_only_its_runs_months(pg_url: str):
    """A series' window is found through its runs; their months' span prunes the other partitions as
    the query starts, so a year of months costs a recent window nothing."""
    from voxwatch.store import aggregates

    store = open_store(pg_url)
    store.add([obs(f"c{i}", run_id=f"r{i % 4}", age_s=HOUR + (i % 4) * 40 * DAY) for i in range(40)], refresh=False)
    with connect(pg_url) as conn:
        plan = [r[0] for r in conn.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + aggregates.FETCH_SQL, {
            "model_id": "pocketsphinx/en-us@5.1.1", "dataset": "stt-starter-clean", "region": "local",
            "method_version": "3", "since": NOW - DAY})]
    scans = {line.split(" on ")[1].split()[0]: "never executed" in line for line in plan if " on obs_facts_" in line}
    assert len(scans) >= 4, plan  # this month's and the next's, and those of the runs 40, 80 and 120 days old
    assert [t for t, skipped in scans.items() if not skipped] == [table_of(month_of(NOW - HOUR))], plan
    store.close()
