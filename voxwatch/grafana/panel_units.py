"""The Grafana unit of every statistic a dashboard panel shows, taken from each metric's one unit (voxwatch/metrics/specs.py).

A metric's statistics (mean, percentiles, max, standard deviation and their intervals) are in the
metric's own unit: `ms` for latencies, `x` (times real time) for rtf. Grafana formats a field by one
unit, so no panel field may mix metrics of two units: a leaderboard table shows the metrics of one
unit (`{{metrics_in_unit(ms)}}` in its SQL, and `voxwatch dashboards render` sets its statistic
columns' unit from that), and a time series repeated over metrics names each series after its
metric and gets one override per unit, matching the metrics of that unit. Rates and WER are shares
(percentunit); counts have no unit. Nothing here is written by hand in the JSON.
"""

from __future__ import annotations

import re

from voxwatch.metrics.specs import METRICS

GRAFANA_UNITS = {"ms": "ms", "x": "suffix:x real time"}
"""Each unit of voxwatch/metrics/specs.py as Grafana's unit id (a custom suffix where Grafana has none)."""
SHARE = "percentunit"
"""Rates (voxwatch/metrics/series.py RATES, availability) and WER: a share of 1, shown as a percentage."""
STATISTICS = ("mean", "mean_ci_low", "mean_ci_high", "p50", "p50_ci_low", "p50_ci_high", "p95", "p95_ci_low",
              "p95_ci_high", "p99", "max", "std")
"""A leaderboard row's columns in its metric's own unit."""
_IN_UNIT = re.compile(r"\{\{\s*metrics_in_unit\((\w+)\)\s*\}\}")


def grafana_unit(metric: str) -> str:
    """Grafana's unit for a metric's statistics."""
    (spec,) = [m for m in METRICS if m.name == metric]
    return GRAFANA_UNITS[spec.unit]


def metrics_in_unit(unit: str) -> list[str]:
    if unit not in GRAFANA_UNITS:
        raise ValueError(f"no metric has unit {unit!r} (voxwatch/metrics/specs.py units: {sorted(GRAFANA_UNITS)})")
    return [m.name for m in METRICS if m.unit == unit]


def series_matcher(unit: str) -> str:
    """A regular expression for the series labels of the metrics of one unit: `... <metric> <statistic>`
    (Grafana's byRegexp matcher anchors a pattern without slashes at both ends)."""
    return f".* ({'|'.join(metrics_in_unit(unit))}) \\S+"


def apply(panel: dict, templates: list[str]) -> None:
    """Set the panel's units from the metrics its SQL shows (see the module docstring)."""
    units = {u for t in templates for u in _IN_UNIT.findall(t)}
    if len(units) > 1:
        raise ValueError(f"panel {panel['title']!r} mixes metrics of units {sorted(units)} in one panel")
    config = panel.setdefault("fieldConfig", {"defaults": {}, "overrides": []})
    if units:
        (unit,) = units
        for override in config.get("overrides", []):
            if override["matcher"]["id"] == "byName" and override["matcher"]["options"] in STATISTICS:
                for prop in override["properties"]:
                    if prop["id"] == "unit":
                        prop["value"] = GRAFANA_UNITS[unit]
    if panel.get("repeat") == "metric":
        config["defaults"].pop("unit", None)
        config["overrides"] = [{"matcher": {"id": "byRegexp", "options": series_matcher(unit)},
                                "properties": [{"id": "unit", "value": GRAFANA_UNITS[unit]}]}
                               for unit in sorted({m.unit for m in METRICS})]
