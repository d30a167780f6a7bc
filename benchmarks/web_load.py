"""The web app under load on both stores: requests/s and p50/p99 latency at 1, 16 and 64 clients.

    python -m benchmarks.web_load [--quick] [--rows 50000] [--seconds 5] [--stores sqlite,postgres]
                                  [--url postgresql://postgres@127.0.0.1:5432/postgres]

Seeds each store with the same 30 days of synthetic rows (benchmarks/store_scale.py: 20 models x 8
datasets x 3 regions, measured under the current method), serves it with a real `voxwatch serve`
subprocess, and loads `/`, a board page and `/api/v1/leaderboard` in turn from a client in its own
process (uvloop, keep-alive connections, one request at a time each, accepting gzip as a browser
or curl --compressed does). Every run also probes `/api/v1/health` on a new connection four times a second, as a load
balancer would. The first request of each page (its render, before the cache has it) is timed
apart. Postgres works in a database of its own (voxwatch_bench_web_<random>), dropped at the end.

Last, an overload: 64 clients each asking for a model page nobody asked for before, so that every
request needs a render; renders pass the admission (--renders 4, --queue-wait 2), the rest are
answered 503 with Retry-After. Then how long until a new page is rendered again.

Targets (2 cores, each page at 64 clients): Postgres >= 1,000 requests/s with p99 < 100 ms;
SQLite >= 200 requests/s with p99 < 500 ms; no request fails; every health probe answers 200
within its 2 s, through the overload too; under the overload every request is answered (200, or
503 with Retry-After) and a new page renders within 30 s of the clients leaving. The client shares the machine's cores with the server, and on a shared machine
with whatever else runs: the load average is printed with the figures. Prints a table; the last
line is one JSON object whose `*_target_met` keys are the targets.

`--quick` is the same code path on small data (seconds; tests/test_benchmarks_quick.py): 2,000 rows,
0.5 s a run, 1 and 8 clients (so the 64-client targets read false).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from multiprocessing import get_context
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import uvloop

from benchmarks.store_scale import MODELS, calibration_ms, synthetic
from voxwatch.metrics import METHOD_VERSION
from voxwatch.foundation.observation import Observation
from voxwatch.store import open_store
from voxwatch.store.connection import connect

REPO = Path(__file__).resolve().parents[1]
PATHS = ("/", "/board/stt", "/api/v1/leaderboard")
CLIENTS = (1, 16, 64)
TARGETS = {"postgres": (1000.0, 100.0), "sqlite": (200.0, 500.0)}  # requests/s at least, p99 ms under (64 clients)
REQUEST_TIMEOUT_S = 30.0
FIRST_RENDER_TIMEOUT_S = 600.0  # SQLite computes the boards from every row of the window: minutes on a busy machine
HEALTH_EVERY_S, HEALTH_TIMEOUT_S = 0.25, 2.0
OVERLOAD_PATH = f"/model/{MODELS[0][0]}?dataset=overload-{{n}}"  # a new page each time: each needs a render
RECOVERY_S = 30.0  # the operator's server had stayed unresponsive ~4.5 min after its clients left


# --- the load client (runs in its own process) -----------------------------------------------------


class _Connection(asyncio.Protocol):
    """One kept-alive HTTP/1.1 connection, one request at a time. The body is counted, not kept: the
    client must cost less than the server, or it measures itself (a StreamReader spent twice the
    server's CPU on a 200 KB response)."""

    def __init__(self) -> None:
        self._head = bytearray()
        self._answer: asyncio.Future[tuple[int, int]] | None = None
        self._status = self._length = self._got = 0
        self._retry_after = False
        self._transport: asyncio.Transport | None = None

    @classmethod
    async def open(cls, port: int) -> _Connection:
        _, conn = await asyncio.get_running_loop().create_connection(cls, "127.0.0.1", port)
        return conn

    def connection_made(self, transport) -> None:
        self._transport = transport

    async def get(self, request: bytes) -> tuple[int, int, bool]:
        """The status, body length and whether it says Retry-After, of one response."""
        self._answer = asyncio.get_running_loop().create_future()
        self._head.clear()
        self._length = -1
        self._transport.write(request)
        return await self._answer

    def data_received(self, data: bytes) -> None:
        if self._length < 0:
            self._head += data
            end = self._head.find(b"\r\n\r\n")
            if end < 0:
                return
            lines = bytes(self._head[:end]).split(b"\r\n")
            self._status = int(lines[0].split()[1])
            self._length = next(int(line.split(b":", 1)[1]) for line in lines if line.lower().startswith(b"content-length:"))
            self._retry_after = any(line.lower().startswith(b"retry-after:") for line in lines)
            self._got = len(self._head) - end - 4
        else:
            self._got += len(data)
        if self._got >= self._length and not self._answer.done():
            self._answer.set_result((self._status, self._length, self._retry_after))

    def connection_lost(self, exc: Exception | None) -> None:
        if self._answer is not None and not self._answer.done():
            self._answer.set_exception(ConnectionError("the server closed the connection"))

    def close(self) -> None:
        self._transport.close()


@dataclass
class _Tally:
    latencies: list[float] = field(default_factory=list)  # of the 200s
    sizes: list[int] = field(default_factory=list)
    turned_away: list[float] = field(default_factory=list)  # latencies of the 503s with Retry-After, when allowed
    failures: list[str] = field(default_factory=list)


_unique = itertools.count()


async def _client(port: int, path: str, until: float, tally: _Tally, overload: bool) -> None:
    """Requests back to back on one connection. With `overload`, each asks for a page nobody asked
    for before (`path` has {n}), so each needs a render, and a 503 with Retry-After is an answer."""
    conn = None
    while time.perf_counter() < until:
        target = path.format(n=next(_unique)) if overload else path
        request = f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept-Encoding: gzip\r\n\r\n".encode()
        start = time.perf_counter()
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT_S):
                if conn is None:
                    conn = await _Connection.open(port)
                status, size, retry_after = await conn.get(request)
        except (OSError, TimeoutError, StopIteration, ValueError) as exc:
            tally.failures.append(type(exc).__name__)
            if conn is not None:
                conn.close()
            conn = None
            continue
        if status == 200:
            tally.latencies.append(time.perf_counter() - start)
            tally.sizes.append(size)
        elif overload and status == 503 and retry_after:
            tally.turned_away.append(time.perf_counter() - start)
        else:
            tally.failures.append(str(status))
    if conn is not None:
        conn.close()


async def _health(port: int, until: float, probes: list[tuple[int, float]]) -> None:
    """(status, seconds) of each probe, on a new connection each; status 0: no answer within HEALTH_TIMEOUT_S."""
    request = f"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()
    while time.perf_counter() < until:
        start = time.perf_counter()
        conn = None
        try:
            async with asyncio.timeout(HEALTH_TIMEOUT_S):
                conn = await _Connection.open(port)
                status, _, _ = await conn.get(request)
        except (OSError, TimeoutError, StopIteration, ValueError):
            status = 0
        finally:
            if conn is not None:
                conn.close()
        probes.append((status, time.perf_counter() - start))
        await asyncio.sleep(max(0.0, HEALTH_EVERY_S - (time.perf_counter() - start)))


async def _load(port: int, path: str, clients: int, seconds: float, overload: bool) -> dict:
    tally = _Tally()
    probes: list[tuple[int, float]] = []
    start = time.perf_counter()
    until = start + seconds
    await asyncio.gather(_health(port, until, probes),
                         *(_client(port, path, until, tally, overload) for _ in range(clients)))
    elapsed = time.perf_counter() - start
    lat = np.array(tally.latencies) * 1000
    away = np.array(tally.turned_away) * 1000
    return {"requests": len(tally.latencies), "rps": round(len(tally.latencies) / elapsed, 1),
            "p50_ms": round(float(np.percentile(lat, 50)), 1) if lat.size else None,
            "p99_ms": round(float(np.percentile(lat, 99)), 1) if lat.size else None,
            "kb_per_response": round(float(np.mean(tally.sizes)) / 1024, 1) if tally.sizes else None,
            "turned_away": away.size, "turned_away_p99_ms": round(float(np.percentile(away, 99)), 1) if away.size else None,
            "failures": len(tally.failures), "failure_kinds": sorted(set(tally.failures)),
            "health_probes": len(probes), "health_failed": sum(1 for s, _ in probes if s != 200),
            "health_max_ms": round(max(t for _, t in probes) * 1000, 1) if probes else None}


def load(port: int, path: str, clients: int, seconds: float, overload: bool = False) -> dict:
    """`clients` connections requesting `path` back to back for `seconds`, health probed alongside."""
    return uvloop.run(_load(port, path, clients, seconds, overload))


# --- the stores and the server ----------------------------------------------------------------------


def seed_rows(total: int, now: float) -> list[Observation]:
    """30 days of rows of every series, under the current method (so the boards rank them)."""
    return [replace(r, method_version=METHOD_VERSION) for tick in synthetic(total, now) for r in tick]


@contextmanager
def sqlite_store(rows: list[Observation], folder: Path) -> Iterator[str]:
    url = f"sqlite:///{folder / 'voxwatch.sqlite'}"
    store = open_store(url)
    store.add(rows)
    store.close()
    yield url


@contextmanager
def postgres_store(rows: list[Observation], admin_url: str) -> Iterator[str]:
    name = f"voxwatch_bench_web_{secrets.token_hex(4)}"
    with connect(admin_url) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        url = urlunsplit(urlsplit(admin_url)._replace(path=f"/{name}"))
        store = open_store(url)  # migrates
        store.add(rows, refresh=False)
        store.refresh()  # every series' aggregates at once, as `voxwatch db refresh` does
        store.close()
        yield url
    finally:
        with connect(admin_url) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(store_url: str, log: Path) -> Iterator[int]:
    """`voxwatch serve` on a free port until the block ends; its port."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOXWATCH_")}
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "voxwatch.cli", "serve", "--store", store_url, "--port", str(port)],
                                cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while _status(port, "/api/v1/health") != 200:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"voxwatch serve did not start:\n{log.read_text()}")
            time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _status(port: int, path: str, timeout: float = REQUEST_TIMEOUT_S) -> int | None:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        return int(data.split(b" ", 2)[1])
    except (OSError, IndexError, ValueError):
        return None


def bench_store(kind: str, url: str, clients: tuple[int, ...], seconds: float, pool: ProcessPoolExecutor,
                folder: Path) -> dict:
    out: dict = {"load_average_before": [round(x, 2) for x in os.getloadavg()], "first_render_s": {}, "runs": {}}
    with serving(url, folder / f"serve-{kind}.log") as port:
        for path in PATHS:  # the cold render, before the cache has the page
            start = time.perf_counter()
            status = _status(port, path, FIRST_RENDER_TIMEOUT_S)
            out["first_render_s"][path] = round(time.perf_counter() - start, 3)
            if status != 200:
                raise RuntimeError(f"{path} answered {status} on {kind}")
        for n in clients:
            for path in PATHS:
                out["runs"][f"{path} @{n}"] = {"path": path, "clients": n,
                                               **pool.submit(load, port, path, n, seconds).result()}
        start = time.perf_counter()  # straight after the heaviest load: answers at once
        out["after_load"] = {"health": _status(port, "/api/v1/health"), "page": _status(port, "/board/tts"),
                             "seconds": 0.0}
        out["after_load"]["seconds"] = round(time.perf_counter() - start, 3)
        out["overload"] = {"path": OVERLOAD_PATH, "clients": max(clients),
                           **pool.submit(load, port, OVERLOAD_PATH, max(clients), seconds, True).result()}
        out["overload"]["recovered_s"] = _recovery(port)
    out["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    return out


def _recovery(port: int) -> float | None:
    """Seconds until a page that needs a render is served again once the overload's clients have gone
    (what is left of their requests must not keep the server busy); None: not within RECOVERY_S x 4."""
    start = time.perf_counter()
    while time.perf_counter() - start < RECOVERY_S * 4:
        if _status(port, OVERLOAD_PATH.format(n="after"), FIRST_RENDER_TIMEOUT_S) == 200:
            return round(time.perf_counter() - start, 2)
        time.sleep(0.5)
    return None


def targets(results: dict, clients: tuple[int, ...]) -> dict[str, bool]:
    met: dict[str, bool] = {}
    top = max(clients)
    for kind, r in results.items():
        rps, p99 = TARGETS[kind]
        heavy = [run for run in r["runs"].values() if run["clients"] == top]
        met[f"{kind}_requests_per_s_target_met"] = top == 64 and all(run["rps"] >= rps for run in heavy)
        met[f"{kind}_p99_target_met"] = top == 64 and all(run["p99_ms"] is not None and run["p99_ms"] < p99 for run in heavy)
    runs = [run for r in results.values() for run in r["runs"].values()]
    met["no_failures_target_met"] = bool(runs) and all(run["failures"] == 0 for run in runs)
    met["health_always_answers_target_met"] = bool(runs) and all(
        run["health_probes"] > 0 and run["health_failed"] == 0 for run in runs + [r["overload"] for r in results.values()]) and all(
        r["after_load"]["health"] == 200 and r["after_load"]["page"] == 200 for r in results.values())
    met["overload_turned_away_target_met"] = bool(results) and all(
        r["overload"]["failures"] == 0 and r["overload"]["turned_away"] > 0 and r["overload"]["recovered_s"] is not None
        and r["overload"]["recovered_s"] <= RECOVERY_S for r in results.values())
    return met


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="2,000 rows, 0.5 s a run, 1 and 8 clients (seconds)")
    p.add_argument("--rows", type=int, help="rows seeded over the last 30 days (default 50,000)")
    p.add_argument("--seconds", type=float, help="length of each run (default 5)")
    p.add_argument("--stores", default="sqlite,postgres")
    p.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/postgres",
                   help="a database to create the scratch database from")
    args = p.parse_args(argv)
    rows_n = args.rows or (2_000 if args.quick else 50_000)
    seconds = args.seconds or (0.5 if args.quick else 5.0)
    clients = (1, 8) if args.quick else CLIENTS
    kinds = [k.strip() for k in args.stores.split(",") if k.strip()]
    if not kinds or set(kinds) - set(TARGETS):
        p.error(f"--stores takes a comma-separated subset of {', '.join(TARGETS)}")
    now = time.time()
    rows = seed_rows(rows_n, now)
    summary: dict = {"rows": len(rows), "seconds_per_run": seconds, "cpus": os.cpu_count(),
                     "calibration_ms": calibration_ms(), "stores": {}}
    with tempfile.TemporaryDirectory(prefix="voxwatch-web-load-") as tmp, \
            ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        pool.submit(time.time).result()  # the client process is up before the first run
        for kind in kinds:
            store = sqlite_store(rows, Path(tmp)) if kind == "sqlite" else postgres_store(rows, args.url)
            with store as url:
                summary["stores"][kind] = bench_store(kind, url, clients, seconds, pool, Path(tmp))
    summary["targets"] = targets(summary["stores"], clients)
    _print(summary)
    print(json.dumps({**{k: v for k, v in summary.items() if k != "targets"}, **summary["targets"]}, sort_keys=True))
    return 0


def _print(s: dict) -> None:
    print(f"{s['rows']:,} rows over 30 days; {s['seconds_per_run']:g} s a run; {s['cpus']} CPUs; "
          f"machine speed {s['calibration_ms']} ms (benchmarks/store_scale.py's fixed loop)")
    header = ("store", "page", "clients", "requests/s", "p50 ms", "p99 ms", "KB (gzip)", "failed", "health probes",
              "health max ms")
    table = [header]
    for kind, r in s["stores"].items():
        for run in r["runs"].values():
            table.append((kind, run["path"], str(run["clients"]), f"{run['rps']:,.0f}", str(run["p50_ms"]),
                          str(run["p99_ms"]), str(run["kb_per_response"]), str(run["failures"]), f"{run['health_probes'] - run['health_failed']}"
                          f"/{run['health_probes']} ok", str(run["health_max_ms"])))
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for k, row in enumerate(table):
        print("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
        if k == 0:
            print("  ".join("-" * w for w in widths))
    for kind, r in s["stores"].items():
        o = r["overload"]
        print(f"{kind} overload: {o['clients']} clients each asking for a page nobody asked for before "
              f"({o['path']}): {o['rps']:,.0f} rendered/s (p99 {o['p99_ms']} ms), {o['turned_away']:,} answered 503 + "
              f"Retry-After (p99 {o['turned_away_p99_ms']} ms), {o['failures']} failed, health {o['health_probes'] - o['health_failed']}"
              f"/{o['health_probes']} ok (max {o['health_max_ms']} ms); a new page rendered {o['recovered_s']} s after "
              "the clients left")
    for kind, r in s["stores"].items():
        first = ", ".join(f"{path} {t} s" for path, t in r["first_render_s"].items())
        after = r["after_load"]
        print(f"{kind}: first render (uncached) {first}; right after the load: health {after['health']}, "
              f"a page {after['page']}, in {after['seconds']} s; load average {r['load_average_before']} before, "
              f"{r['load_average_after']} after")
    for key, met in s["targets"].items():
        print(f"{key}: {met}")


if __name__ == "__main__":
    sys.exit(main())
