"""Running a dashboard's panels as Grafana would: variables resolved, SQL expanded, run on Postgres."""

from __future__ import annotations

import json
from typing import Iterator

import psycopg

from voxwatch.grafana.panel_sql import panels

from support.processes import REPO
from support.dashboard_seed import RANGE
from support.grafana_query import TimeRange, Variables, expand, parse_interval, resolve

DASHBOARDS = REPO / "dashboards"
FILES = sorted(DASHBOARDS.glob("*.json"))


def load(name: str) -> dict:
    return json.loads((DASHBOARDS / name).read_text())


def query(conn: psycopg.Connection, sql: str) -> tuple[list[str], list[int], list[tuple]]:
    """Column names, type OIDs and rows; a failing query fails the test with its SQL."""
    try:
        cur = conn.execute(sql)
    except psycopg.Error as exc:
        raise AssertionError(f"the panel SQL failed: {exc}\n{sql}") from None
    return [d.name for d in cur.description], [d.type_code for d in cur.description], cur.fetchall()


def range_of(panel: dict, tr: TimeRange = RANGE) -> TimeRange:
    """The time range as the panel's queries see it: Grafana raises `$__interval` to the panel's
    min interval (its `interval`), when it sets one."""
    floor_ms = int(parse_interval(panel["interval"]) * 1000) if panel.get("interval") else 0
    return TimeRange(tr.start, tr.end, max(tr.interval_ms, floor_ms))


def targets(dashboard: dict, variables: Variables) -> Iterator[tuple[dict, dict, Variables]]:
    """(panel, target, variables as that panel instance sees them): a repeated panel once per value."""
    for panel in panels(dashboard):
        instances = ([variables.scoped(panel["repeat"], v) for v in variables.values[panel["repeat"]]]
                     if panel.get("repeat") else [variables])
        for scoped in instances:
            for target in panel.get("targets", []):
                yield panel, target, scoped


def run_panel(conn: psycopg.Connection, dashboard: dict, title: str, variables: Variables,
              ref: str = "A") -> list[dict]:
    """One target of the panel with this title, as a list of {column: value}."""
    panel = next(p for p in panels(dashboard) if p["title"] == title)
    target = next(t for t in panel["targets"] if t["refId"] == ref)
    names, _, rows = query(conn, expand(target["rawSql"], variables, range_of(panel)))
    return [dict(zip(names, r)) for r in rows]


def variables_of(conn: psycopg.Connection, dashboard: dict, **pinned: list[str]) -> Variables:
    return resolve(dashboard, lambda sql: query(conn, sql)[2], RANGE, pinned)
