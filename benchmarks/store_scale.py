"""The Postgres store at scale: ingest rate, write-to-current-aggregates latency, full rebuild,
leaderboard and family page query times, and storage per row with the growth it implies.

    python -m benchmarks.store_scale [--rows 200000] [--writers 2] [--url postgresql://postgres@127.0.0.1:5432/postgres]
    python -m benchmarks.store_scale --year --rows 100000000     # a year of 50 models x 20 datasets x 5 regions
    python -m benchmarks.store_scale --models 40                 # one ranking of 40 STT models, 30 days
    python -m benchmarks.store_scale --quick                     # seconds: 2,000 rows of a small shape

Works in a fresh database (voxwatch_bench_<random>, dropped at the end unless --keep). Synthetic
rows look like real ones (by default 20 models x 8 datasets x 3 regions over the last 30 days; with
--year 50 x 20 x 5 over the last 365 days, one partition a month; 10 clips per series a tick, the
ticks spread evenly over the span, the clean and degraded datasets of the stt-starter family drawing
the same utterances in a tick; texts, versions and a few failures of every kind), ingested by
--writers processes at once (each its share of the ticks, as the workers of several regions write),
generated a round at a time outside the timed part (a writer holds one round, ROUND_ROWS rows, at a
time, whatever --rows is). Prints a table; the last line is one JSON object, with a boolean
`<figure>_target_met` for each target of issue #30 (judged on the median where a figure has one).

`--models N` is one ranking instead (issue #42, "Scale that follows breadth"): N streaming STT models
on one dataset in one region over 30 days of the default schedule (every 30 minutes, 10 clips), and
what a tick's end and a reader cost at that size: the refresh of the ranking's paired comparisons
(seconds and peak memory of the process that runs it, as a worker does), the comparison views'
refresh, and the render of the STT board page and the streaming STT comparison page after a write.

`--quick` is the default run's code path on small data (a few seconds; tests/test_benchmarks_quick.py):
2,000 rows of a shape of 4 models x 2 datasets x 1 region, one writer, each read timed 3 times.
Its figures say nothing about scale.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import tempfile
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from voxwatch.boards import compare_refresh, leaderboard
from voxwatch.boards.compare_lines import from_rows
from voxwatch.boards.use_cases import COMPARE_BOARDS
from voxwatch.foundation.observation import Observation
from voxwatch.foundation.series_key import RowsKey
from voxwatch.metrics import METHOD_VERSION
from voxwatch.providers.registry import Registry
from voxwatch.store import aggregates, redact
from voxwatch.store.connection import connect
from voxwatch.store.postgres import PostgresStore
from voxwatch.store.row_filter import RowFilter
from voxwatch.foundation.store_url import parse_store_url
from voxwatch.store.family_reads import family_rows
from voxwatch.web.compare_views import comparison_document
from voxwatch.web.family_views import family_view, lines
from voxwatch.web.source import PostgresSource

DAY = 86400.0
SCHEDULE_MIN = 30  # the default schedule: every 30 minutes ...
ITEMS = 10  # ... 10 items per dataset
DEFAULT_STT_DATASETS = 2  # stt-starter-clean and stt-starter-phonecodec
FAMILY = "stt-starter"
"""The family whose clean and degraded datasets the family page compares."""
TARGETS = {"ingest": ("ingest_rows_per_s", ">=", 250_000), "write_to_current": ("write_to_current_ms", "<=", 100),
           "leaderboard_30d": ("leaderboard_30d_ms", "<=", 30), "family_page_30d": ("family_page_30d_ms", "<=", 200)}
"""Issue #30's targets for --year --rows 100000000."""


def _models(stream: int, batch: int, tts: int) -> list[tuple[str, str, str]]:
    return ([(f"vendor{i}/stream-model-{i}@2025-0{1 + i % 9}", "stt", "stt-stream") for i in range(stream)]
            + [(f"vendor{i}/batch-model-{i}@v{i}", "stt", "stt-batch") for i in range(stream, stream + batch)]
            + [(f"vendor{i}/tts-voice-{i}@v{i}", "tts", "tts-stream") for i in range(stream + batch, stream + batch + tts)])


_STARTER = tuple(f"{FAMILY}-{c}" for c in ("clean", "phonecodec", "noise", "farfield", "clipping", "noisegap"))
SHAPES = {  # (models, datasets, regions, days)
    "month": (_models(10, 4, 6), _STARTER + ("librispeech-test-clean", "callcenter-8k"),
              ("us-east", "eu-west", "ap-south"), 30),
    "year": (_models(25, 10, 15), _STARTER + tuple(f"set-{k:02d}" for k in range(14)),
             ("us-east", "eu-west", "ap-south", "us-west", "eu-north"), 365),
    "quick": (_models(2, 1, 1), _STARTER[:2], ("us-east",), 30),  # --quick: the same path, 8 series
}
MODELS, DATASETS, REGIONS, _ = SHAPES["month"]
RANKING_DATASET = f"{FAMILY}-clean"
RANKING_TARGETS = {"refresh_one_ranking": ("refresh_one_ranking_s", 30.0), "refresh_peak_rss": ("refresh_peak_rss_mb", 1024),
                   "board_page": ("board_page_ms", 200.0), "compare_page": ("compare_page_ms", 200.0)}
"""Issue #42's targets for one ranking of 40 models (at most; medians of the pages' renders after a write)."""


RANKING = "ranking-"
"""A shape named "ranking-<N>": one ranking of N streaming STT models (one dataset, one region, 30 days);
named, not registered, so the writers' fresh interpreters know it too."""
RANKING_VENDOR = "bench"
"""The ranking's models' vendor, registered by `ranking_registry` so that the pages see registered
models (an unknown id costs a page a did-you-mean search per line, which no real board pays)."""


def shape_of(name: str) -> tuple[list[tuple[str, str, str]], tuple[str, ...], tuple[str, ...], int]:
    """A shape's (models, datasets, regions, days): SHAPES', or a ranking's."""
    if name.startswith(RANKING):
        models = [(f"{RANKING_VENDOR}/stt-stream-{i:02d}", "stt", "stt-stream") for i in range(int(name[len(RANKING):]))]
        return models, (RANKING_DATASET,), ("us-east",), 30
    return SHAPES[name]


def ranking_registry(shape: str, folder: Path) -> Registry:
    """The package's registry with a user file registering the ranking's models (every other one priced,
    as a real board's are: some with a list price, some without)."""
    models, _, _, _ = shape_of(shape)
    text = [f'[[vendor]]\nname = "{RANKING_VENDOR}"\nsnapshots = "none"\nchecked = 2026-12-07\n'
            'source = "benchmarks/store_scale.py"\n']
    for i, (model_id, board, protocol) in enumerate(models):
        price = ('price_usd = 0.0065\nprice_unit = "audio_minute"\nprice_source = "benchmarks/store_scale.py"\n'
                 "price_checked = 2026-12-07\n") if i % 2 else ""
        text.append(f'[[model]]\nid = "{model_id}"\nboard = "{board}"\nvendor = "{RANKING_VENDOR}"\n'
                    f'protocol = "{protocol}"\nadapter = "voxwatch.providers.stt.deepgram:DeepgramSTT"\n'
                    'status = "active"\nregion = "vendor"\nneeds_key = true\nexclusions = []\n'
                    f'checked = 2026-12-07\nsource = "benchmarks/store_scale.py"\n{price}')
    path = folder / "ranking-models.toml"
    path.write_text("\n".join(text))
    return Registry.default(files=[path])


def ranking_rows(shape: str) -> int:
    """The rows of 30 days of the default schedule for a shape: every SCHEDULE_MIN minutes, ITEMS clips a series."""
    models, datasets, regions, days = shape_of(shape)
    return len(models) * len(datasets) * len(regions) * ITEMS * days * 24 * 60 // SCHEDULE_MIN
WORDS = ("the quick brown fox jumps over lazy dog please call me back tomorrow at nine about "
         "invoice number seven two four shipping address change order status refund").split()
FAILURES = (("timeout", "no final transcript within 30 s"), ("error", "unexpected close 1011"),
            ("rate_limited", "429 Too Many Requests"), ("server_error", "HTTP 503"),
            ("disconnected", "socket closed mid-stream"), ("malformed", "unparseable JSON message"))


def tick_plan(total: int, shape: str) -> tuple[int, float, int]:
    """The ticks `total` rows of a shape make, the seconds between two, and the rows of one tick."""
    models, datasets, regions, days = shape_of(shape)
    per_tick = len(models) * len(datasets) * len(regions) * ITEMS
    ticks = max(1, total // per_tick)
    return ticks, days * DAY / (ticks + 1), per_tick


def synthetic(total: int, now: float, seed: int = 7, part: int = 0, parts: int = 1,
              shape: str = "month", ticks_from: int = 0, ticks_to: int | None = None) -> Iterator[list[Observation]]:
    """Rows in time order, one list per tick (every series measured once per tick, 10 clips each, the
    ticks spread evenly over the shape's days); with parts > 1, only the ticks of this part
    (tick % parts == part), as one of several writers; only the ticks in [ticks_from, ticks_to) when
    given (the others are the SQL fill's). One tick's rows at a time: memory is bounded."""
    models, datasets, regions, days = shape_of(shape)
    rng = np.random.default_rng(seed)
    ticks, step, per_tick = tick_plan(total, shape)
    series = per_tick // ITEMS
    texts = [" ".join(rng.choice(WORDS, int(rng.integers(6, 30)))) for _ in range(200)]  # utterance k's text
    made = 0
    for tick in range(ticks + 1):
        if tick % parts != part or tick < ticks_from or (ticks_to is not None and tick >= ticks_to):  # not this writer's
            made += min(series * ITEMS, total - made)
            if made >= total:
                return
            continue
        base = now - days * DAY + (tick + 0.5) * step
        out: list[Observation] = []
        for region in regions:
            run_id = uuid.UUID(int=int(rng.integers(0, 2**63)) << 64 | tick).hex
            for m, (model_id, board, protocol) in enumerate(models):
                picks = rng.choice(len(texts), ITEMS, replace=False)  # a family's datasets draw the same utterances
                for d, dataset in enumerate(datasets):
                    n = min(ITEMS, total - made - len(out))
                    if n <= 0:
                        break
                    lat = rng.lognormal(np.log(200 + 20 * (m % 20) + 15 * (d % 6)), 0.35, n)
                    fail = rng.random(n)
                    for i in range(n):
                        out.append(_row(run_id, model_id, board, protocol, region, dataset, int(picks[i]),
                                        texts[picks[i]], base + i * 2.5 + d * 25, float(lat[i]), float(fail[i]), rng))
        made += len(out)
        if out:
            yield out
        if made >= total:
            return


def _row(run_id: str, model_id: str, board: str, protocol: str, region: str, dataset: str, utterance: int, text: str,
         started_at: float, lat: float, fail: float, rng: np.random.Generator) -> Observation:
    clip_id = f"{dataset}-{utterance:04d}"
    family, condition = (FAMILY, dataset[len(FAMILY) + 1:]) if dataset.startswith(FAMILY + "-") else (dataset, "clean")
    status, reason = ("ok", None) if fail >= 0.03 else FAILURES[int(fail / 0.005) % len(FAILURES)]
    ok = status == "ok"
    words = len(text.split())
    errors = int(rng.binomial(words, 0.08 if condition == "clean" else 0.12)) if ok else 0
    row = Observation(
        run_id=run_id, model_id=model_id, dataset=dataset, clip_id=clip_id, attempt=1, board=board,
        vendor=model_id.split("/")[0], protocol=protocol, region=region, started_at=started_at, status=status,
        reason=reason, condition=condition, family=family, utterance_id=f"{family}-{utterance:04d}",
        voice="alloy" if board == "tts" else None,
        dataset_manifest_sha256="9f2c" * 16, seed=1234, emulator=False, connect_ms=round(lat / 3, 3),
        audio_duration_s=3.2, http_version="HTTP/2" if protocol == "stt-batch" else None,
        connection_reused=protocol == "stt-batch", reference=text,
        hypothesis=text if ok else None, substitutions=errors if ok else None, deletions=0 if ok else None,
        insertions=0 if ok else None, ref_words=words if ok else None,
        instrument_id="faster-whisper/tiny.en@1.2.1" if board == "tts" else None, method_version=METHOD_VERSION,
        runner_version="0.1.0", normalizer="whisper_normalizer.english.EnglishTextNormalizer",
        normalizer_version="0.1.15", vad="webrtcvad", vad_version="2.0.14", vad_params='{"mode": 3, "frame_ms": 30}',
        onset_version="2")
    if not ok:
        return row
    if protocol == "stt-stream":
        return replace(row, ttfs_ms=lat, first_partial_ms=lat * 0.6, first_partial_from_t0_ms=lat * 0.6 + 400,
                       pacing_error_ms=0.2)
    if protocol == "stt-batch":
        return replace(row, latency_ms=lat * 3, rtf=lat * 3 / 3200)
    return replace(row, ttfa_ms=lat, ttfb_ms=lat * 0.9, leading_silence_ms=lat * 0.1, synthesis_ms=lat * 4)


_EMPTY = "TRUNCATE obs_facts, obs_spans"  # the dictionaries stay: their entries are never deleted
_TABLES = ("obs_spans", "obs_names", "obs_clips", "obs_contexts", "obs_runs")
_PARTS = "pg_inherits WHERE inhparent = 'obs_facts'::regclass"  # obs_facts's months (it holds no rows itself)


def _fresh_database(url: str) -> tuple[str, str]:
    name = f"voxwatch_bench_{secrets.token_hex(4)}"
    with connect(url) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    return name, urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def calibration_ms() -> float:
    """A fixed pure-Python workload: this machine's speed when the figures were taken (a VM's varies
    by half between runs; every figure here scales with it)."""
    start = time.perf_counter()
    total = 0
    for i in range(3_000_000):
        total += i * i % 7
    return round(1000 * (time.perf_counter() - start), 1)


def _ms(seconds: list[float]) -> dict:
    return {"median_ms": round(1000 * statistics.median(seconds), 1), "max_ms": round(1000 * max(seconds), 1)}


def ingest_methods(url: str, rows: list[Observation], least: int = 2000) -> dict[str, float]:
    """Rows/s of executemany vs COPY by batch size (store.add with the threshold forced), each size over
    at least `least` rows (as many as `rows` holds)."""
    from voxwatch.store import postgres

    out: dict[str, float] = {}
    for size in (1, 4, 16, 64, 1000, 10000):
        for method, threshold in (("executemany", 10**9), ("copy", 0)):
            if method == "executemany" and size > 1000:
                continue
            store = PostgresStore(url)
            store._connect().execute(_EMPTY)
            postgres.SMALL_BATCH, saved = threshold, postgres.SMALL_BATCH
            try:
                batch = rows[: max(size * 20, least)] if size < 1000 else rows[: size * 5]  # distinct rows
                start = time.perf_counter()
                for i in range(0, len(batch), size):
                    store.add(batch[i:i + size], refresh=False)
                out[f"{method}@{size}"] = len(batch) / (time.perf_counter() - start)
            finally:
                postgres.SMALL_BATCH = saved
                store._connect().execute(_EMPTY)
                store.close()
    return out


ROUND_ROWS = 500_000
"""Rows each writer generates before a round of ingest: generation (pure Python) never runs while
the ingest is timed, so the two never compete for the cores."""


def _writer(url: str, total: int, now: float, part: int, parts: int, batch: int, rounds: int, shape: str,
            ticks: tuple[int, int | None], barrier, report) -> None:
    """One writer process: generates its ticks a round at a time and, between two barriers (the timed
    part), adds them in batches, as one worker of a region would. Holds one round's rows at a time."""
    import resource

    try:
        store = PostgresStore(url)
        made = synthetic(total, now, part=part, parts=parts, shape=shape, ticks_from=ticks[0], ticks_to=ticks[1])
        gen_s, counts = 0.0, []
        for _ in range(rounds):
            start, rows = time.perf_counter(), []
            for tick in made:
                rows.extend(tick)
                if len(rows) >= ROUND_ROWS:
                    break
            gen_s += time.perf_counter() - start
            barrier.wait()
            for i in range(0, len(rows), batch):
                store.add(rows[i:i + batch], refresh=False)
            counts.append(len(rows))
            barrier.wait()
        store.close()
    except BaseException:
        barrier.abort()  # the lead and the other writers stop waiting for this one
        raise
    report.put((counts, gen_s, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


def ingest(url: str, total: int, now: float, writers: int, batch: int, shape: str = "month",
           ticks: tuple[int, int | None] = (0, None)) -> tuple[int, float, float, list[int], float]:
    """Ingest `total` synthetic rows (only those of the ticks in the range, when given) with `writers`
    processes writing at once (each its share of the ticks); returns the rows, the seconds of ingest
    (barrier to barrier, all writers), the longest writer's generation seconds, each round's rows/s and
    the largest writer's peak memory (MB)."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: no connection crosses the fork
    count, _, per_tick = tick_plan(total, shape)
    wanted = min(total, per_tick * ((count + 1 if ticks[1] is None else ticks[1]) - ticks[0]))
    per_writer = -(-wanted // writers)
    rounds = -(-per_writer // ROUND_ROWS) + 1  # one spare: a writer's share may run over by a tick
    barrier, report = ctx.Barrier(writers + 1), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(url, total, now, k, writers, batch, rounds, shape, ticks, barrier, report))
             for k in range(writers)]
    for p in procs:
        p.start()
    per_round = []
    try:
        for _ in range(rounds):
            barrier.wait()  # every writer has its round's rows
            start = time.perf_counter()
            barrier.wait()  # every writer has added them
            per_round.append(time.perf_counter() - start)
    except threading.BrokenBarrierError:
        for p in procs:
            p.join(timeout=30)
        raise SystemExit(f"a writer failed (exit codes {[p.exitcode for p in procs]}): its traceback is above") from None
    results = [report.get() for _ in procs]
    for p in procs:
        p.join()
        if p.exitcode:
            raise SystemExit(f"a writer failed (exit code {p.exitcode})")
    sizes = [sum(counts[i] for counts, _, _ in results) for i in range(rounds)]
    return (sum(sizes), sum(per_round), max(g for _, g, _ in results),
            [round(n / t) for n, t in zip(sizes, per_round) if n], max(m for _, _, m in results))


TEMPLATE_TICKS = 20
"""With --fill: the oldest ticks, ingested by the writers, that the server copies to make the year's middle."""


def fill(url: str, total: int, now: float, shape: str, first: int, last: int, chunk_ticks: int = 50) -> tuple[int, float]:
    """The rows of ticks [first, last), made by the server in SQL: tick t is a copy of template tick
    t % first's rows (every series, its clips, statuses and clocks) under new runs, moved t - (t % first)
    ticks later, each run in its month's partition, written in key order. What ingest would write, at
    the server's speed rather than Python's (generating a row costs ~70 us; the COPY path ~5).
    Returns the rows made and the seconds."""
    from voxwatch.store.layout import FACT_COLUMNS
    from voxwatch.store.partitions import ensure, month_of

    _, step, _ = tick_plan(total, shape)
    start = time.perf_counter()
    with connect(url) as conn:
        conn.execute("SET synchronous_commit = off")
        runs = conn.execute("SELECT s.run_id_ref, n.name, min(s.first_at), r.month FROM obs_spans s "
                            "JOIN obs_names n ON n.ref = s.run_id_ref JOIN obs_runs r ON r.run_ref = s.run_id_ref "
                            "GROUP BY 1, 2, 4").fetchall()
        by_tick: dict[int, list[tuple[int, str, float, int]]] = {}
        for ref, name, first_at, month in runs:  # a run id's low 64 bits are its tick (synthetic)
            by_tick.setdefault(int(name, 16) & (2**64 - 1), []).append((ref, name, first_at, month))
        assert sorted(by_tick) == list(range(first)), f"the template is ticks 0..{first - 1}, found {sorted(by_tick)}"
        plan = []
        for t in range(first, last):
            template = t % first
            shift = (t - template) * step
            for ref, name, first_at, month in sorted(by_tick[template], key=lambda r: r[1]):
                plan.append((len(plan), t, ref, month, f"{t:08x}{name[8:]}", shift, month_of(first_at + shift)))
        with conn.transaction():
            conn.execute("CREATE TEMP TABLE fill_map (ord integer, tick integer, template_ref integer, template_month "
                         "integer, name text, shift double precision, month integer, new_ref integer) ON COMMIT PRESERVE ROWS")
            with conn.cursor().copy("COPY fill_map (ord, tick, template_ref, template_month, name, shift, month) "
                                    "FROM STDIN") as copy:
                for row in plan:
                    copy.write_row(row)
            conn.execute("INSERT INTO obs_names (digest, name) SELECT voxwatch_digest(ARRAY[name]), name FROM fill_map "
                         "ORDER BY ord")  # refs handed out in time order, as runs appearing would get them
            conn.execute("UPDATE fill_map m SET new_ref = n.ref FROM obs_names n WHERE n.digest = voxwatch_digest(ARRAY[m.name])")
            with conn.cursor() as cur:
                ensure(cur, {row[-1] for row in plan})
            conn.execute("INSERT INTO obs_runs (run_ref, month) SELECT new_ref, month FROM fill_map")
            conn.execute("INSERT INTO obs_spans SELECT m.new_ref, s.context_ref, s.first_at + m.shift, s.last_at + m.shift "
                         "FROM obs_spans s JOIN fill_map m ON m.template_ref = s.run_id_ref")
        columns = ", ".join(FACT_COLUMNS)
        chosen = ", ".join({"run_id_ref": "m.new_ref", "run_month": "m.month", "started_at": "f.started_at + m.shift"}
                           .get(c, f"f.{c}") for c in FACT_COLUMNS)
        made = 0
        runs_per_tick = len(plan) // max(1, last - first)
        for low in range(0, len(plan), chunk_ticks * runs_per_tick):
            made += conn.execute(
                f"INSERT INTO obs_facts ({columns}) SELECT {chosen} FROM fill_map m JOIN obs_facts f "
                "ON f.run_id_ref = m.template_ref AND f.run_month = m.template_month WHERE m.ord >= %s AND m.ord < %s "
                "ORDER BY m.new_ref, f.model_id_ref, f.dataset_ref, f.clip_id_ref, f.attempt",
                (low, low + chunk_ticks * runs_per_tick)).rowcount
    return made, time.perf_counter() - start


def _refresh_ranking(url: str, dataset: str, report) -> None:
    """In a process of its own, as a worker runs it at a tick's end: the paired comparisons of one
    dataset's rankings; reports the seconds, the comparisons written, the process's peak memory (MB)
    before and after, and the CPU seconds it spent (on a shared machine, what the seconds would be alone
    but for the database's share)."""
    import resource

    store = PostgresStore(url)
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    written = store.refresh_comparisons([dataset])
    seconds = time.perf_counter() - start
    store.close()
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    report.put((seconds, written, before.ru_maxrss / 1024, after.ru_maxrss / 1024, cpu))


def refresh_ranking(url: str, dataset: str) -> tuple[float, int, float, float, float]:
    """`_refresh_ranking` in a fresh interpreter, so its peak memory is the refresh's and not the benchmark's."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    report = ctx.Queue()
    proc = ctx.Process(target=_refresh_ranking, args=(url, dataset, report))
    proc.start()
    got = report.get()
    proc.join()
    if proc.exitcode:
        raise SystemExit(f"the refresh failed (exit code {proc.exitcode})")
    return got


def fresh_renders(url: str, registry: Registry, shape: str, paths: tuple[str, ...], times: int = 5) -> dict:
    """Each page rendered `times` times by one running app, each time after a new row was written (the
    store's version changed, so neither its page cache nor its memo holds the page: what the first
    reader after a tick's end waits for); a first render of each page, which compiles its templates
    once per process, is not timed."""
    from starlette.testclient import TestClient

    from voxwatch.web.app import create_app
    from voxwatch.web.limits import Limits

    models, datasets, regions, _ = shape_of(shape)
    store, rng = PostgresStore(url), np.random.default_rng(5)
    seconds: dict[str, list[float]] = {path: [] for path in paths}
    sizes: dict[str, int] = {}
    with TestClient(create_app(url, registry, Limits(fresh_within_s=0.0))) as client:
        for path in paths:
            assert client.get(path).status_code == 200, path
        for k in range(times):
            model_id, board, protocol = models[k % len(models)]
            store.add([_row(f"fresh{k}", model_id, board, protocol, regions[0], datasets[0], 1, "call me back",
                            time.time(), 250.0, 0.5, rng)])  # a write: the version every page is kept under moves
            for path in paths:
                start = time.perf_counter()
                response = client.get(path)
                seconds[path].append(time.perf_counter() - start)
                assert response.status_code == 200, f"{path}: {response.status_code}"
                sizes[path] = len(response.content)
    store.close()
    return {path: {**_ms(seconds[path]), "bytes": sizes[path]} for path in paths}


def ranking(args: argparse.Namespace) -> int:
    """--models N: one ranking of N streaming STT models over 30 days of the default schedule (module doc)."""
    now = time.time()
    shape = f"{RANKING}{args.models}"
    total = ranking_rows(shape)
    name, url = _fresh_database(args.url)
    models, _, _, _ = shape_of(shape)
    result: dict = {"rows": total, "shape": f"{len(models)} streaming STT models x 1 dataset ({RANKING_DATASET}) x 1 "
                    f"region over 30 days, every {SCHEDULE_MIN} min x {ITEMS} clips", "database": name,
                    "pairs": len(models) * (len(models) - 1) // 2, "calibration_ms_before": calibration_ms()}
    try:
        done, ingest_s, gen_s, _, _ = ingest(url, total, now, args.writers, args.batch, shape)
        store = PostgresStore(url)
        db = store._connect()
        db.execute("VACUUM ANALYZE obs_facts")
        start = time.perf_counter()
        series = store.refresh()
        result.update(ingested=done, ingest_s=round(ingest_s, 1), generate_s=round(gen_s, 1), series=series,
                      aggregates_s=round(time.perf_counter() - start, 2))
        seconds, written, before, peak, cpu = refresh_ranking(url, RANKING_DATASET)
        result["refresh_one_ranking"] = {"s": round(seconds, 2), "cpu_s": round(cpu, 2), "comparisons": written,
                                         "rss_before_mb": round(before), "peak_rss_mb": round(peak)}
        with tempfile.TemporaryDirectory() as folder:
            registry = ranking_registry(shape, Path(folder))
        start = time.perf_counter()
        viewed = compare_refresh.refresh(store, registry)
        result["compare_views_refresh"] = {"s": round(time.perf_counter() - start, 2), "views": viewed}
        store.close()
        pages = fresh_renders(url, registry, shape, ("/board/stt", "/compare/stt-stream"))
        result["board_page"], result["compare_page"] = pages["/board/stt"], pages["/compare/stt-stream"]
        result["calibration_ms_after"] = calibration_ms()
        figures = {"refresh_one_ranking_s": seconds, "refresh_peak_rss_mb": peak,
                   "board_page_ms": result["board_page"]["median_ms"], "compare_page_ms": result["compare_page"]["median_ms"]}
        for target_name, (figure, target) in RANKING_TARGETS.items():
            result[f"{target_name}_target_met"] = figures[figure] <= target
    finally:
        if not args.keep:
            with connect(args.url) as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    r = result
    lines = [("database", redact(url)),
             ("machine speed (fixed Python loop, before / after)", f"{r['calibration_ms_before']} / {r['calibration_ms_after']} ms"),
             ("rows", f"{r['ingested']:,} ({r['shape']}; {r['pairs']} pairs)"),
             ("ingest / aggregates", f"{r['ingest_s']} s / {r['aggregates_s']} s ({r['series']} series)"),
             ("refresh of the ranking's paired comparisons (own process)",
              f"{r['refresh_one_ranking']['s']} s ({r['refresh_one_ranking']['cpu_s']} s of its CPU), "
              f"peak {r['refresh_one_ranking']['peak_rss_mb']} MB "
              f"({r['refresh_one_ranking']['rss_before_mb']} MB before; {r['refresh_one_ranking']['comparisons']:,} comparisons)"),
             ("comparison views at a tick's end (every board, window)", f"{r['compare_views_refresh']['s']} s "
                                                                         f"({r['compare_views_refresh']['views']} views)"),
             ("STT board page, after a write", f"median {r['board_page']['median_ms']} ms, max {r['board_page']['max_ms']} ms "
                                             f"({r['board_page']['bytes']:,} B)"),
             ("streaming STT comparison page, after a write", f"median {r['compare_page']['median_ms']} ms, "
                                                           f"max {r['compare_page']['max_ms']} ms ({r['compare_page']['bytes']:,} B)")]
    lines += [(f"target: {t}", f"{'met' if r[t + '_target_met'] else 'NOT met'} ({figure} <= {target:,})")
              for t, (figure, target) in RANKING_TARGETS.items()]
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        print(f"{k.ljust(width)}  {v}")
    print(json.dumps(r, sort_keys=True))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--year", action="store_true",
                   help="a year of 50 models x 20 datasets x 5 regions (default: a month of 20 x 8 x 3)")
    p.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/postgres", help="a database to create the scratch database from")
    p.add_argument("--batch", type=int, default=50_000, help="rows per add() during the ingest")
    p.add_argument("--writers", type=int, default=2, help="processes writing at once during the ingest, as workers do")
    p.add_argument("--keep", action="store_true", help="keep the scratch database")
    p.add_argument("--quick", action="store_true",
                   help="seconds, small data: 2,000 rows of 4 models x 2 datasets x 1 region, one writer, 3 reads each")
    p.add_argument("--fill", action="store_true",
                   help=f"write only the oldest {TEMPLATE_TICKS} ticks and the newest --timed-rows through the writers; "
                        "the server copies the oldest to make the rest (for --rows 100000000: minutes, not hours)")
    p.add_argument("--timed-rows", type=int, default=4_000_000,
                   help="with --fill: the newest rows, ingested by the writers on top of the rest (the ingest figure's)")
    p.add_argument("--models", type=int,
                   help="one ranking of this many streaming STT models on one dataset over 30 days of the default "
                        "schedule (--rows is then that schedule's; issue #42): the refresh of its paired comparisons, "
                        "the board and comparison pages")
    args = p.parse_args(argv)
    if args.models is not None:
        if args.models < 2:
            p.error("--models: a ranking needs at least 2 models")
        return ranking(args)
    if args.quick:
        args.rows, args.writers, args.batch = 2_000, 1, 500
    repeats = 3 if args.quick else 20  # each timed read and write
    now = time.time()
    name, url = _fresh_database(args.url)
    shape = "quick" if args.quick else "year" if args.year else "month"
    models, datasets, regions, days = SHAPES[shape]
    result: dict = {"rows": args.rows, "shape": f"{len(models)} models x {len(datasets)} datasets x {len(regions)} "
                    f"regions over {days} days", "database": name, "calibration_ms_before": calibration_ms()}
    try:
        store = PostgresStore(url)
        db = store._connect()
        sample = [r for tick in synthetic(2_000 if args.quick else 50_000, now, seed=99) for r in tick]
        result["ingest_methods_rows_per_s"] = {k: round(v) for k, v in
                                               ingest_methods(url, sample, 40 if args.quick else 2000).items()}

        ticks = (0, None)
        if args.fill:  # the oldest ticks by the writers, the middle by the server, the newest timed on top
            count, _, per_tick = tick_plan(args.rows, shape)
            timed_ticks = max(1, args.timed_rows // per_tick)
            template, template_s, _, _, _ = ingest(url, args.rows, now, args.writers, args.batch, shape, (0, TEMPLATE_TICKS))
            filled, fill_s = fill(url, args.rows, now, shape, TEMPLATE_TICKS, count + 1 - timed_ticks)
            result["fill"] = {"template_rows": template, "template_rows_per_s": round(template / template_s),
                              "sql_rows": filled, "sql_s": round(fill_s, 1), "sql_rows_per_s": round(filled / fill_s)}
            ticks = (count + 1 - timed_ticks, None)
        done, ingest_s, gen_s, rounds, rss = ingest(url, args.rows, now, args.writers, args.batch, shape, ticks)
        if args.fill:
            result["fill"]["timed_on_top_of"] = result["fill"]["template_rows"] + result["fill"]["sql_rows"]
        timed = done  # the ingest figure is the writers' rows over their seconds, not the fill's
        done += result.get("fill", {}).get("timed_on_top_of", 0)
        result.update(ingested=done, ingest_rows_per_s=round(timed / ingest_s), writers=args.writers,
                      ingest_rounds_rows_per_s=rounds, generate_s=round(gen_s, 1), writer_peak_rss_mb=round(rss),
                      partitions=db.execute("SELECT count(*) FROM pg_inherits WHERE inhparent = 'obs_facts'::regclass"
                                            ).fetchone()[0])

        again = next(synthetic(args.batch, now, shape=shape))  # rows stored before: the COPY aborts, the staging path skips them
        start = time.perf_counter()
        assert store.add(again, refresh=False) == 0
        result["repeated_write_rows_per_s"] = round(len(again) / (time.perf_counter() - start))

        start = time.perf_counter()
        db.execute("VACUUM ANALYZE obs_facts")  # what autovacuum does for an insert-mostly table
        result["vacuum_analyze_s"] = round(time.perf_counter() - start, 2)

        start = time.perf_counter()
        series = store.refresh()
        result.update(full_rebuild_s=round(time.perf_counter() - start, 2), series=series,
                      aggregate_rows=db.execute("SELECT count(*) FROM aggregates").fetchone()[0])

        rng = np.random.default_rng(3)
        fresh, only_refresh = [], []
        for k in range(repeats):
            model_id, board, protocol = models[int(rng.integers(len(models)))]
            dataset, region = datasets[int(rng.integers(len(datasets)))], regions[int(rng.integers(len(regions)))]
            row = _row(f"live{k}", model_id, board, protocol, region, dataset, 1, "call me back tomorrow",
                       time.time(), 250.0, 0.5, rng)
            start = time.perf_counter()
            store.add([row])  # one measure task's write: insert, then its series' aggregates are current
            fresh.append(time.perf_counter() - start)
            start = time.perf_counter()
            store.refresh([RowsKey(model_id, dataset, region, "3")])
            only_refresh.append(time.perf_counter() - start)
        result["write_to_current"] = _ms(fresh)
        result["refresh_one_series"] = _ms(only_refresh)
        plan = [line for (line,) in db.execute("EXPLAIN (ANALYZE) " + aggregates.FETCH_SQL, {
            "model_id": models[0][0], "dataset": datasets[0], "region": regions[0], "method_version": METHOD_VERSION,
            "since": time.time() - 30 * DAY})]
        result["series_read"] = {"by_key": any("Index Scan using obs_facts_" in line and "_pkey" in line for line in plan),
                                 "execution_ms": float(plan[-1].split()[-2])}

        registry = Registry.default()
        reads = []
        for _ in range(repeats):
            start = time.perf_counter()
            board = leaderboard.from_store(store, "30d", registry)
            reads.append(time.perf_counter() - start)
        result["leaderboard_30d"] = {**_ms(reads), "rows": len(board)}
        one, reads = RowFilter(boards=("stt",), datasets=(f"{FAMILY}-clean",)), []
        for _ in range(repeats):
            start = time.perf_counter()
            board = leaderboard.from_store(store, "30d", registry, one)  # what a board page's dataset table reads
            reads.append(time.perf_counter() - start)
        result["leaderboard_30d_one_dataset"] = {**_ms(reads), "rows": len(board)}

        start = time.perf_counter()
        kept = store.refresh_families([FAMILY])  # what a finished STT tick of the family costs its worker
        result["family_refresh"] = {"s": round(time.perf_counter() - start, 2), "views": kept,
                                    "rows": len(family_rows(db, FAMILY, time.time() - 30 * DAY))}
        source, pages = PostgresSource(parse_store_url(url), registry), []
        for _ in range(repeats):
            start = time.perf_counter()
            view = family_view(source, FAMILY, "30d")  # the family page's (and /api/v1/families') whole read
            pages.append(time.perf_counter() - start)
        source.close()
        assert view.computed_at is not None, "the family page computed its lines instead of reading the kept ones"
        result["family_page_30d"] = {**_ms(pages), "lines": len(lines(view))}

        start = time.perf_counter()
        viewed = compare_refresh.refresh(store, registry)  # what the runs finishing together cost one worker
        result["compare_refresh"] = {"s": round(time.perf_counter() - start, 2), "views": viewed}
        source, pages = PostgresSource(parse_store_url(url), registry), []
        for _ in range(repeats):
            start = time.perf_counter()
            doc = comparison_document(source, registry, "stt-stream", "30d", None)  # the page's (and its API's) read
            pages.append(time.perf_counter() - start)
        assert source.compare_view("stt-stream", "30d") is not None, "the comparison page read the rows, not its view"
        start = time.perf_counter()  # the same page computed from whole rows, as it was before views were kept
        from_rows(source.observations(RowFilter(since=time.time() - 30 * DAY, boards=("stt",))),
                  COMPARE_BOARDS["stt-stream"], "30d", registry, time.time(), only=None)
        result["compare_from_rows_s"] = round(time.perf_counter() - start, 2)
        source.close()
        result["compare_page_30d"] = {**_ms(pages), "lines": len(doc["rows"])}

        table_bytes = sum(db.execute(f"SELECT pg_total_relation_size('{t}')").fetchone()[0] for t in _TABLES)
        table_bytes += db.execute(f"SELECT sum(pg_total_relation_size(inhrelid))::bigint FROM {_PARTS}").fetchone()[0]
        heap_bytes = db.execute(f"SELECT sum(pg_relation_size(inhrelid))::bigint FROM {_PARTS}").fetchone()[0]
        per_row = table_bytes / done
        month_rows = (24 * 60 // SCHEDULE_MIN) * 30 * ITEMS  # per model, dataset and region
        result.update(bytes_per_row=round(per_row), heap_bytes_per_row=round(heap_bytes / done),
                      aggregates_bytes=db.execute("SELECT pg_total_relation_size('aggregates')").fetchone()[0],
                      growth_per_model_dataset_region_month_mb=round(month_rows * per_row / 1e6, 1),
                      growth_per_stt_model_month_default_config_mb=round(DEFAULT_STT_DATASETS * month_rows * per_row / 1e6, 1))
        store.close()
        result["calibration_ms_after"] = calibration_ms()
        figures = {"ingest_rows_per_s": result["ingest_rows_per_s"],
                   "write_to_current_ms": result["write_to_current"]["median_ms"],
                   "leaderboard_30d_ms": result["leaderboard_30d"]["median_ms"],
                   "family_page_30d_ms": result["family_page_30d"]["median_ms"]}
        for target_name, (figure, op, target) in TARGETS.items():  # not `name`: the scratch database's, dropped below
            result[f"{target_name}_target_met"] = figures[figure] >= target if op == ">=" else figures[figure] <= target
    finally:
        if not args.keep:
            with connect(args.url) as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    _print(result, redact(url))
    return 0


def _print(r: dict, url: str) -> None:
    lines = [
        ("database", url),
        ("machine speed (fixed Python loop, before / after)", f"{r['calibration_ms_before']} / {r['calibration_ms_after']} ms"),
        ("rows ingested", f"{r['ingested']:,} ({r['shape']}; {r['partitions']} monthly partitions)"),
        *([("how the rows were made (--fill)", f"{r['fill']['template_rows']:,} oldest by the writers "
                                                f"({r['fill']['template_rows_per_s']:,} rows/s into an empty table), "
                                                f"{r['fill']['sql_rows']:,} copied by the server in SQL "
                                                f"({r['fill']['sql_s']} s, {r['fill']['sql_rows_per_s']:,} rows/s), the newest "
                                                f"{r['ingested'] - r['fill']['timed_on_top_of']:,} timed below")]
          if "fill" in r else []),
        ("writer peak memory (one round of rows at a time)", f"{r['writer_peak_rss_mb']} MB"),
        ("ingest (COPY in key order)", f"{r['ingest_rows_per_s']:,} rows/s, {r['writers']} writer(s) at once "
                                       f"(rounds from {min(r['ingest_rounds_rows_per_s']):,} to {max(r['ingest_rounds_rows_per_s']):,})"),
        ("a batch written again by a fresh writer (staging, keys skipped)", f"{r['repeated_write_rows_per_s']:,} rows/s"),
        ("ingest by method@batch (rows/s)", ", ".join(f"{k} {v:,}" for k, v in r["ingest_methods_rows_per_s"].items())),
        ("VACUUM ANALYZE after ingest", f"{r['vacuum_analyze_s']} s"),
        ("full rebuild of all aggregates", f"{r['full_rebuild_s']} s ({r['series']} series, {r['aggregate_rows']} rows)"),
        ("one-row write until its series is current", f"median {r['write_to_current']['median_ms']} ms, max {r['write_to_current']['max_ms']} ms"),
        ("refresh of one series alone", f"median {r['refresh_one_series']['median_ms']} ms, max {r['refresh_one_series']['max_ms']} ms"),
        ("its read of the series' 30 days", f"{r['series_read']['execution_ms']} ms (by key, run by run: {r['series_read']['by_key']})"),
        ("family lines at a tick's end (every window, region)", f"{r['family_refresh']['s']} s "
                                                                f"({r['family_refresh']['rows']:,} rows of 30 d, {r['family_refresh']['views']} views)"),
        ("family page 30d (its kept lines)", f"median {r['family_page_30d']['median_ms']} ms, max {r['family_page_30d']['max_ms']} ms "
                                             f"({r['family_page_30d']['lines']} lines)"),
        ("comparison views at a tick's end (every board, window, use case)", f"{r['compare_refresh']['s']} s "
                                                                             f"({r['compare_refresh']['views']} views)"),
        ("comparison page 30d, streaming STT (its kept view)", f"median {r['compare_page_30d']['median_ms']} ms, "
                                                               f"max {r['compare_page_30d']['max_ms']} ms "
                                                               f"({r['compare_page_30d']['lines']} lines)"),
        ("... computed from its 30 days of whole rows instead", f"{r['compare_from_rows_s']} s"),
        ("leaderboard 30d from aggregates", f"median {r['leaderboard_30d']['median_ms']} ms, max {r['leaderboard_30d']['max_ms']} ms ({r['leaderboard_30d']['rows']} rows)"),
        ("... of one board's dataset (stt, the family's clean)", f"median {r['leaderboard_30d_one_dataset']['median_ms']} ms, "
                                                                 f"max {r['leaderboard_30d_one_dataset']['max_ms']} ms "
                                                                 f"({r['leaderboard_30d_one_dataset']['rows']} rows)"),
        ("storage per row (tables + indexes)", f"{r['bytes_per_row']} B (fact heap {r['heap_bytes_per_row']} B)"),
        ("growth per model x dataset x region / month", f"{r['growth_per_model_dataset_region_month_mb']} MB at every {SCHEDULE_MIN} min x {ITEMS} items"),
        ("growth per STT model / month, default config", f"{r['growth_per_stt_model_month_default_config_mb']} MB per region ({DEFAULT_STT_DATASETS} datasets)"),
    ]
    lines += [(f"target: {name}", f"{'met' if r[name + '_target_met'] else 'NOT met'} ({figure} {op} {target:,})")
              for name, (figure, op, target) in TARGETS.items()]
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        print(f"{k.ljust(width)}  {v}")
    print(json.dumps(r, sort_keys=True))


if __name__ == "__main__":
    raise SystemExit(main())
