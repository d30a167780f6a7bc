"""Zoomed in or out, every panel that buckets observations by time still shows points.

The store holds what the default schedule makes at its thinnest: a tick every 30 minutes
([schedule] every_minutes) for 30 days, each measuring ONE utterance per series (stream and batch
STT, TTS, S2S). Every statistic needs MIN_N (5) values, so a bucket must span 5 ticks. Each panel
runs as Grafana runs it at 6 h, 24 h and 30 d ranges ending now: `$__interval` is the range over
the panel's width (1000 points), raised to the panel's min interval. Without that min interval a
6 h panel buckets by 21 s and shows nothing, which the test checks too, so it can fail.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Iterator

import psycopg
import pytest

from voxwatch.grafana import panel_interval
from voxwatch.foundation.observation import Observation
from voxwatch.grafana.panel_sql import panels
from voxwatch.store import open_store
from voxwatch.store.connection import connect

from support.grafana_panels import load, query
from support.grafana_query import TimeRange, expand, parse_interval, resolve

NOW = time.time()
HOUR, DAY = 3600.0, 86400.0
WIDTH = 1000  # Grafana's max data points: about a wide panel's width in pixels
SERIES = (("stt", "pocketsphinx/en-us@5.1.1", "stt-stream", "stt-starter-clean"),
          ("stt", "openai/whisper-1", "stt-batch", "stt-starter-clean"),
          ("tts", "espeak-ng/en-us@1.52.0", "tts-stream", "tts-prompts"),
          ("s2s", "openai/gpt-realtime-2025-08-28", "s2s", "stt-starter-clean"))
ZOOMS = {"6h": 6 * HOUR, "24h": DAY, "30d": 30 * DAY}
BUCKETED = ("provider-detail.json", "ttfa-components.json", "wer-per-dataset.json")


def _rows() -> list[Observation]:
    period = panel_interval.tick_minutes() * 60
    first = (NOW - 30 * DAY) // period * period
    rows = []
    for k in range(int((NOW - first) // period) + 1):
        at = first + k * period
        for board, model, protocol, dataset in SERIES:
            ok = k % 10 != 3  # now and then a failed attempt
            value = 100.0 + (k * 37) % 400
            rows.append(Observation(
                run_id=f"zoom-{k}", model_id=model, dataset=dataset, clip_id=f"{dataset}/u{k % 64:02d}", attempt=1,
                board=board, vendor=model.split("/")[0], protocol=protocol, region="eu-west", started_at=at + 5,
                status="ok" if ok else "timeout", reason=None if ok else "timeout here",
                condition="text" if board == "tts" else "clean",
                family="tts-prompts" if board == "tts" else "stt-starter", utterance_id=f"u{k % 64:02d}",
                connect_ms=40.0, ttfs_ms=value if ok and protocol == "stt-stream" else None,
                ttfs_peer_ms=value - 134 if ok and protocol == "stt-stream" else None,
                first_partial_ms=value / 2 if ok and protocol == "stt-stream" else None,
                latency_ms=value if ok and protocol == "stt-batch" else None,
                rtf=value / 3000 if ok and protocol == "stt-batch" else None,
                ttfb_ms=value / 4 if ok and board == "tts" else None,
                leading_silence_ms=value / 8 if ok and board == "tts" else None,
                ttfa_ms=value / 2 if ok and board == "tts" else None, v2v_ms=value * 2 if ok and board == "s2s" else None,
                substitutions=1 if ok and board != "s2s" else None, deletions=0 if ok and board != "s2s" else None,
                insertions=0 if ok and board != "s2s" else None, ref_words=9 if ok and board != "s2s" else None,
                instrument_id="faster-whisper/tiny.en@1.2.1" if board == "tts" else None, method_version="3"))
    return rows


@pytest.fixture(scope="module")
def thin(postgres_store_url: str) -> Iterator[str]:
    store = open_store(postgres_store_url)
    try:
        rows = _rows()
        assert store.add(rows) == len(rows)
    finally:
        store.close()
    yield postgres_store_url


def _zoom(span: float, floor: str | None) -> TimeRange:
    """The range ending now, with Grafana's `$__interval`: range / width, raised to the panel's floor."""
    interval_ms = int(span * 1000 / WIDTH)
    if floor:
        interval_ms = max(interval_ms, int(parse_interval(floor) * 1000))
    end = datetime.fromtimestamp(NOW, timezone.utc)
    return TimeRange(datetime.fromtimestamp(NOW - span, timezone.utc), end, interval_ms)


def _points(conn: psycopg.Connection, dashboard: dict, panel: dict, tr: TimeRange) -> dict[str, int]:
    """Points per panel instance (a panel repeated over a variable: one per value)."""
    variables = resolve(dashboard, lambda sql: query(conn, sql)[2], tr)
    instances = ({v: variables.scoped(panel["repeat"], v) for v in variables.values[panel["repeat"]]}
                 if panel.get("repeat") else {"": variables})
    return {name: sum(len(query(conn, expand(t["rawSql"], scoped, tr))[2]) for t in panel["targets"])
            for name, scoped in instances.items()}


def _bucketed() -> list[tuple[str, dict]]:
    return [(name, p) for name in BUCKETED for p in panels(load(name)) if "$__interval" in str(p.get("targets"))]


def test_every_panel_on_observations_has_the_min_interval_of_five_ticks():
    assert panel_interval.tick_minutes() == 30 and panel_interval.min_interval() == "3h"
    found = _bucketed()
    assert len(found) >= 5
    assert all(p.get("interval") == panel_interval.min_interval() for _, p in found), \
        [(n, p["title"], p.get("interval")) for n, p in found]


@pytest.mark.parametrize("zoom", sorted(ZOOMS))
def test_every_bucketed_panel_shows_points_at_every_zoom(zoom: str, thin: str):
    with connect(thin) as conn:
        for name, panel in _bucketed():
            dashboard = load(name)
            shown = _points(conn, dashboard, panel, _zoom(ZOOMS[zoom], panel["interval"]))
            blank = [instance for instance, n in shown.items() if n == 0]
            assert shown and not blank, f"{name} {panel['title']!r} at {zoom}: no points for {blank}"


def test_without_the_min_interval_a_zoomed_in_panel_goes_blank(thin: str):
    """The failure the min interval prevents: 21 s buckets hold one tick's value, under every floor."""
    with connect(thin) as conn:
        for name, panel in _bucketed():
            shown = _points(conn, load(name), panel, _zoom(ZOOMS["6h"], None))
            assert not any(shown.values()), (name, panel["title"], shown)
