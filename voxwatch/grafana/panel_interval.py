"""The smallest time bucket of a panel on observations, so a zoomed-in panel never goes blank.

Every statistic needs MIN_N values (voxwatch/metrics/series.py) and a series gets its values at ticks,
every [schedule] every_minutes (default.toml: 30). Grafana makes `$__interval` the time range over
the panel's width (20 s for 6 h on a wide panel), so zoomed in, each bucket held one tick's values
or fewer and every bucket under the floor was dropped. A panel's `interval` is Grafana's lower
bound on `$__interval`: MIN_N ticks' span, rounded up to whole hours (3 h), holds MIN_N values of
a series even when a tick measures one utterance of it. Zoomed out, Grafana's own interval is the
larger and wins. `voxwatch dashboards render` writes it on every panel that buckets observations.
"""

from __future__ import annotations

import math
import tomllib
from importlib.resources import files

from voxwatch.metrics.series import MIN_N


def tick_minutes() -> int:
    """The default schedule's period ([schedule] every_minutes of default.toml, the one definition)."""
    return int(tomllib.loads(files("voxwatch").joinpath("default.toml").read_text(encoding="utf-8"))
               ["schedule"]["every_minutes"])


def min_interval() -> str:
    """Grafana's min interval for a panel on observations: MIN_N ticks, in whole hours."""
    return f"{math.ceil(MIN_N * tick_minutes() / 60)}h"


def apply(panel: dict, templates: list[str]) -> None:
    """Set the min interval of a panel whose SQL buckets observations by $__interval."""
    if any("$__interval" in t and "observations_during" in t for t in templates):
        panel["interval"] = min_interval()
