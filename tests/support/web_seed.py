"""The seeded leaderboard the web tests read: rows with known figures, the figures computed from them
with numpy and the method's clustered intervals, a Postgres store holding them, `voxwatch serve` on it,
and Chromium's reading of the pages. Shared by tests/test_web*.py and the tests that serve a board."""

from __future__ import annotations

import contextlib
import re
import socket
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Iterator

import httpx
import numpy as np
import pytest

from voxwatch.boards import leaderboard
from voxwatch.foundation.series_key import SeriesKey
from voxwatch.metrics import METHOD_VERSION
from voxwatch.metrics.paired import compare
from voxwatch.metrics.ranking import comparable, ranks
from voxwatch.metrics.series import series_rows
from voxwatch.store.series_data import group
from voxwatch.metrics.specs import for_protocol
from voxwatch.metrics.clustered import count_rate_interval, design, quantile_interval, rate_interval, ratio_variance, t_interval
from voxwatch.metrics.series import RATES
from voxwatch.foundation.observation import Observation
from voxwatch.providers.registry import Registry
from voxwatch.store import open_store

from support.processes import REPO, run_cli
from support.postgres import fresh_postgres
from support.processes import kept_env

NOW = time.time()
DAY = 86400.0
WINDOWS = {"24h": DAY, "7d": 7 * DAY, "30d": 30 * DAY}
INSTRUMENT = "faster-whisper/tiny.en@1.2.1"
EMULATED_ONLY = "speechmatics/enhanced-en"  # measured only against its loopback emulator: must never show
EMULATOR_MS = 98765.4  # the latency of every emulator row: a page showing it has let one through
EXCLUDED_MODEL = "openai/gpt-4o-transcribe:realtime"  # the registry excludes its first_partial_ms
SCREENSHOT = REPO / "var" / "test-artifacts" / "leaderboard.png"


def _spread(n: int, first: float = 0.3, last: float = 28.5) -> list[float]:
    """n ages (days) across the month, none within an hour or two of a window's edge (1, 7, 30 days)."""
    ages = np.linspace(first, last, n)
    return [a + 0.2 if any(abs(a - edge) < 0.1 for edge in (1, 7)) else float(a) for a in ages]


def _clusters(days: list[float], per_day: int) -> list[float]:
    """per_day rows 15 minutes apart at each age: days with enough rows for a daily p50."""
    return [d + j * 0.01 for d in days for j in range(per_day)]


CURRENT, OLD = METHOD_VERSION, str(int(METHOD_VERSION) - 1)  # the current method and the one it superseded

# model, board, protocol, dataset, region, method version, ages in days
SERIES = [
    ("deepgram/nova-3", "stt", "stt-stream", "stt-starter-clean", "us-east", OLD, _clusters([20.3, 22.4, 25.6], 5)),
    ("deepgram/nova-3", "stt", "stt-stream", "stt-starter-clean", "us-east", CURRENT, _clusters([0.2, 2.3, 4.4, 9.5, 14.6], 7)),
    ("deepgram/nova-3", "stt", "stt-stream", "stt-starter-clean", "eu-west", CURRENT, _spread(18)),
    ("deepgram/nova-3", "stt", "stt-stream", "stt-starter-noise", "us-east", CURRENT, _spread(16)),
    (EXCLUDED_MODEL, "stt", "stt-stream", "stt-starter-clean", "us-east", CURRENT, _spread(12)),
    ("openai/whisper-1", "stt", "stt-batch", "stt-starter-clean", "eu-west", CURRENT, [0.5, 3.2, 8.1]),  # n < 5
    ("openai/whisper-1", "stt", "stt-batch", "stt-starter-noise", "eu-west", CURRENT, _spread(14)),
    ("openai/whisper-1", "stt", "stt-batch", "stt-starter-clean", "us-east", CURRENT,  # enough rows for a p95
     _clusters([1.5, 2.5, 3.5, 4.5, 5.5, 8.5, 10.5, 11.5, 12.5, 15.5, 17.5, 19.5, 21.5, 23.5, 24.5, 26.5], 10)),
    ("cartesia/sonic-3.5", "tts", "tts-stream", "tts-prompts", "us-east", CURRENT, _spread(15)),
    ("openai/gpt-realtime-2025-08-28", "s2s", "s2s", "stt-starter-clean", "us-east", CURRENT, _spread(12)),
]
BASE_MS = {"ttfs_ms": 420.0, "first_partial_ms": 180.0, "latency_ms": 900.0, "ttfa_ms": 260.0, "ttfb_ms": 190.0,
           "leading_silence_ms": 70.0, "v2v_ms": 780.0}


def seeded_rows() -> list[Observation]:
    rng = np.random.default_rng(20261201)
    rows, k = [], 0
    for model_id, board, protocol, dataset, region, method, ages in SERIES:
        for i, age in enumerate(ages):
            k += 1
            status = "error" if k % 9 == 4 else "timeout" if k % 13 == 6 else "server_error" if k % 17 == 3 else "ok"
            row = Observation(run_id=f"run-{region}-{method}-{i // 5}", model_id=model_id, dataset=dataset,
                              clip_id=f"clip{i}", attempt=1, board=board, vendor=model_id.split("/")[0],
                              protocol=protocol, region=region, started_at=NOW - age * DAY, status=status,
                              condition="clean" if dataset.endswith("clean") else "noise", method_version=method,
                              instrument_id=INSTRUMENT if board == "tts" else None, emulator=False)
            if status == "ok":
                shift = 100.0 if method == OLD else 0.0
                values = {m.name: max(1.0, BASE_MS.get(m.name, 0.0) + shift + 60.0 * rng.standard_normal())
                          for m in for_protocol(protocol, headline_only=True)}
                if "rtf" in values:
                    values["rtf"] = float(rng.uniform(0.05, 0.3))
                row = replace(row, **values)
                if board != "s2s" and k % 11:
                    row = replace(row, substitutions=int(rng.integers(0, 3)), deletions=int(rng.integers(0, 2)),
                                  insertions=int(rng.integers(0, 2)), ref_words=int(rng.integers(5, 15)))
            rows.append(row)
    for i in range(8):  # emulator rows: on a real series, and a model that only ever ran against its emulator
        for model_id in ("deepgram/nova-3", EMULATED_ONLY):
            rows.append(Observation(run_id="emulated", model_id=model_id, dataset="stt-starter-clean",
                                    clip_id=f"emu{i}", attempt=1, board="stt", vendor=model_id.split("/")[0],
                                    protocol="stt-stream", region="us-east", started_at=NOW - (0.1 + i) * DAY,
                                    status="ok", method_version=CURRENT, emulator=True, ttfs_ms=EMULATOR_MS,
                                    first_partial_ms=EMULATOR_MS, substitutions=9, deletions=0, insertions=0,
                                    ref_words=10))
    return rows


ROWS = seeded_rows()


def expected_board(window: str) -> dict[tuple, dict]:
    """Per series (board, model, dataset, region, method, instrument): its figures, from the rows alone."""
    groups: dict[tuple, list[Observation]] = defaultdict(list)
    for r in ROWS:
        if not r.emulator and r.started_at >= NOW - WINDOWS[window]:
            groups[(r.board, r.model_id, r.dataset, r.region, r.method_version, r.instrument_id)].append(r)
    out = {}
    for key, members in groups.items():
        ok = [r for r in members if r.status == "ok"]
        scored = [r for r in ok if r.ref_words is not None]
        errors = [r.substitutions + r.deletions + r.insertions for r in scored]
        words = [r.ref_words for r in scored]
        metrics = {}
        for spec in for_protocol(members[0].protocol, headline_only=True):
            measured = [r for r in ok if getattr(r, spec.name) is not None]
            v = np.array([getattr(r, spec.name) for r in measured])
            d = design(utterance=[r.clip_id for r in measured], tick=[r.run_id for r in measured])
            metrics[spec.name] = {"values": v, "n": v.size} | ({
                "mean": v.mean(), "p50": np.percentile(v, 50), "max": v.max(),
                "p95": np.percentile(v, 95) if v.size >= 100 else None,  # a p95 needs 100 values
                "mean_ci": t_interval(v.mean(), ratio_variance(d, v, np.ones(v.size)),
                                      low=min(0.0, v.min()) if spec.signed else 0.0),  # no lower than measured
                "p50_ci": quantile_interval(v, 50, d), "p95_ci": quantile_interval(v, 95, d) if v.size >= 100 else None,
            } if v.size >= 5 else {})
        failed = np.array([r.status in RATES["error_rate"] for r in members], dtype=float)
        attempts = len(members)
        wer = sum(errors) / sum(words) if len(words) >= 5 and sum(words) else None
        wer_design = design(utterance=[r.clip_id for r in scored], tick=[r.run_id for r in scored])
        out[key] = {
            "attempts": attempts,
            "error_rate": failed.mean() if attempts >= 5 else None,
            "error_rate_ci": rate_interval(failed, design(utterance=[r.clip_id for r in members],
                                                          tick=[r.run_id for r in members])) if attempts >= 5 else None,
            "timeout_rate": sum(r.status == "timeout" for r in members) / attempts if attempts >= 5 else None,
            "pooled_wer": wer, "wer_words": sum(words), "wer_clips": len(words),
            "wer_ci": count_rate_interval(wer, ratio_variance(wer_design, np.array(errors), np.array(words)), sum(words))
            if wer is not None else None, "metrics": metrics,
        }
    return out


def expected_ranks(expected: dict[tuple, dict], window: str = "30d") -> dict[tuple, int | None]:
    """Each series' rank as metrics defines it, from the window's rows alone: the paired comparisons of
    metrics.paired.compare over every ranking, then metrics.ranking.ranks (1 + the series shown
    faster); None under a superseded method or without an interval."""
    kept = [r for r in ROWS if not r.emulator and r.started_at >= NOW - WINDOWS[window]]
    series = group(kept)
    board = leaderboard.exclude([m for key, data in series.items() for m in series_rows(key, data)], Registry.default())
    ranked = ranks(board, METHOD_VERSION, compare(series, comparable(board, METHOD_VERSION)))
    return {k: ranked[SeriesKey(k[0], k[1], k[2], k[3], k[4], next(r.protocol for r in ROWS if r.model_id == k[1]),
                                k[5] or "")] for k in expected}


def exclusion_reason() -> str:
    return Registry.default().resolve(EXCLUDED_MODEL).excluded("first_partial_ms").reason


# --- fixtures: the seeded store, the server, the browser -------------------------------------------


@contextlib.contextmanager
def seeded_store(rows: list[Observation] = ROWS) -> Iterator[str]:
    """A fresh, migrated Postgres store holding `rows` (the module's seed unless told)."""
    with fresh_postgres() as url:
        run_cli("db", "upgrade", "--store", url)
        s = open_store(url)
        s.add(rows)  # refreshes the rolling aggregates the boards read
        s.refresh_comparisons()  # what a finished tick does: the paired comparisons the ranks come from
        s.close()
        yield url


@pytest.fixture(scope="module")
def store() -> Iterator[str]:
    with seeded_store() as url:
        yield url


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(store_url: str, log: Path, today: str | None = None, *options: str,
            env: dict[str, str] | None = None) -> Iterator[str]:
    """`voxwatch serve` in a subprocess on a free port, until the block ends; its log goes to `log`.
    `today` pins the day model statuses are read on (VOXWATCH_TODAY); `options` go to `serve`, `env`
    (VOXWATCH_* settings) to its environment. Pages show every write on the next request
    (--fresh-within 0): the tests write, then read."""
    port = _free_port()
    env = kept_env() | (
        {"VOXWATCH_TODAY": today} if today else {}) | (env or {})
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "voxwatch.cli", "serve", "--store", store_url, "--port",
                                 str(port), "--fresh-within", "0", *options], cwd=REPO, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90  # a busy 2-core machine: uvicorn up, the first health answer late
        while True:
            try:
                httpx.get(base + "/api/v1/health", timeout=5)
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"voxwatch serve did not start:\n{log.read_text()}") from None
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def server(store: str, tmp_path_factory) -> Iterator[str]:
    with serving(store, tmp_path_factory.mktemp("web") / "serve.log") as base:
        yield base


_READ_TABLES = """
return Array.from(document.querySelectorAll('table.board')).map(t => ({
  dataset: t.dataset.dataset,
  series: Array.from(t.querySelectorAll('tbody.series')).map(b => ({
    model: b.dataset.model, region: b.dataset.region, method: b.dataset.method, instrument: b.dataset.instrument,
    rows: Array.from(b.querySelectorAll('tr')).map(tr => ({
      metric: tr.dataset.metric,
      cells: Object.fromEntries(Array.from(tr.querySelectorAll('td[data-field]')).map(td => [td.dataset.field, td.innerText.trim()]))
    }))
  }))
}));
"""


_READ_OVERVIEW = """
return Array.from(document.querySelectorAll('table.overview tbody tr[data-model]')).map(tr => ({
  board: tr.closest('table').dataset.board, model: tr.dataset.model, dataset: tr.dataset.dataset,
  ranking: tr.closest('tbody').dataset.protocol,
  region: tr.dataset.region, method: tr.dataset.method, metric: tr.dataset.metric,
  cells: Object.fromEntries(Array.from(tr.querySelectorAll('td[data-field]')).map(td => [td.dataset.field, td.innerText.trim()]))
}));
"""


@pytest.fixture(scope="module")
def rendered(server: str, browser) -> dict[str, list]:
    """Each board's tables as Chromium renders them (the 30-day window), and the screenshot."""
    browser.get(f"{server}/")
    out = {"overview": browser.execute_script(_READ_OVERVIEW),  # the stylesheet applies under the page's CSP
           "header_colour": browser.execute_script("return getComputedStyle(document.querySelector('header')).backgroundColor")}
    for board in ("tts", "s2s", "stt"):
        browser.get(f"{server}/board/{board}")
        assert browser.title.startswith(f"{board.upper()} board")
        out[board] = browser.execute_script(_READ_TABLES)
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",  # the whole page in one screenshot
                            {"width": 1500, "height": min(height, 8000), "deviceScaleFactor": 1, "mobile": False})
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(SCREENSHOT))
    out["stt_notes"] = browser.execute_script(
        "return Array.from(document.querySelectorAll('p.method-note')).map(p => p.innerText.trim())")
    return out


# --- checks -----------------------------------------------------------------------------------------


def _number(text: str) -> float:
    return float(re.match(r"-?[\d.]+", text.replace(",", "")).group())


def _close(text: str, expected: float | None, scale: float = 1.0, decimals: int = 1) -> None:
    """The cell shows `expected` (times scale) rounded to `decimals` places, or n/a for None."""
    if expected is None:
        assert text == "n/a"
        return
    assert abs(_number(text) - expected * scale) <= 0.5 * 10 ** -decimals + 1e-9, (text, expected * scale)


def _close_interval(text: str, expected: tuple[float, float] | None, scale: float = 1.0, decimals: int = 1) -> None:
    if expected is None:
        assert text == "n/a"
        return
    low, high = re.match(r"\[(.+), (.+)\]", text).groups()
    _close(low, expected[0], scale, decimals)
    _close(high, expected[1], scale, decimals)


def sqlite_store(folder: Path, rows: list[Observation]) -> str:
    """The URL of a new SQLite store in `folder` holding `rows`."""
    url = f"sqlite:///{folder / 'voxwatch.sqlite'}"
    s = open_store(url)
    s.add(rows)
    s.close()
    return url
