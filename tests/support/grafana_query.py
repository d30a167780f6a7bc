"""What Grafana does to a Postgres panel's SQL before it runs it, for tests without a Grafana.

Three steps, in Grafana's order:
1. the frontend replaces template variables (`$name`, `${name}`, `${name:format}`, `[[name]]`);
   only the format these dashboards use is implemented (`sqlstring`: every value in single
   quotes, `'` doubled and `"` backslashed, joined by commas), and a variable without a format
   is refused, since the datasource's default quoting differs between single- and multi-valued
   variables;
2. the SQL engine replaces `$__interval_ms`, `$__interval`, `$__unixEpochFrom()` and
   `$__unixEpochTo()` (pkg/tsdb/grafana-postgresql-datasource/sqleng/sql_engine.go, Interpolate);
3. the Postgres macro engine expands `$__name(args)` (.../macros.go, evaluateMacro): here
   `$__timeFilter`, `$__timeFrom()`, `$__timeTo()`, `$__unixEpochFilter` and
   `$__unixEpochGroup(Alias)`; any other macro fails, as an unknown one fails in Grafana.
A dashboard's variables are resolved in order: a query variable runs its (expanded) query and, with
"All" selected, stands for every value it returned; a custom variable stands for its current value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal
from typing import Callable

_VARIABLE = re.compile(r"\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)(?:\.([^:^}]+))?(?::([^}]+))?\}")
_MACRO = re.compile(r"\$([_a-zA-Z0-9]+)\(([^)]*)\)")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d)$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


class ExpansionError(ValueError):
    """SQL that Grafana would refuse (an unknown macro) or that these tests do not model."""


@dataclass
class TimeRange:
    start: datetime  # aware, UTC
    end: datetime
    interval_ms: int  # what Grafana computed as $__interval for the panel

    def from_unix(self) -> int:
        return int(self.start.timestamp() // 1)  # Go's time.Unix(): whole seconds, rounded down

    def to_unix(self) -> int:
        return int(self.end.timestamp() // 1)


@dataclass
class Variables:
    """Current values of a dashboard's template variables, and the options each offered."""

    values: dict[str, list[str]] = field(default_factory=dict)
    options: dict[str, list[str]] = field(default_factory=dict)

    def scoped(self, name: str, value: str) -> "Variables":
        """The variables as a repeated panel sees them: `name` bound to one of its values."""
        return Variables({**self.values, name: [value]}, self.options)


def sqlstring(values: list[str]) -> str:
    """Grafana's `sqlstring` format (sqlStringFormatter in the template formats registry)."""
    return ",".join("'" + v.replace("'", "''").replace('"', '\\"') + "'" for v in values)


def replace_variables(sql: str, variables: Variables) -> str:
    def sub(m: re.Match) -> str:
        name = m.group(1) or m.group(2) or m.group(4)
        fmt = m.group(3) or m.group(6)
        if name not in variables.values:
            return m.group(0)  # not a template variable (a macro, or a builtin the backend expands)
        if m.group(5):
            raise ExpansionError(f"variable field paths are not used here: {m.group(0)}")
        values = variables.values[name]
        if fmt == "sqlstring":
            return sqlstring(values)
        raise ExpansionError(f"{m.group(0)}: give a variable in SQL an explicit format (${{{name}:sqlstring}})")

    return _VARIABLE.sub(sub, sql)


def format_interval(ms: int) -> str:
    """gtime.FormatInterval: the largest whole unit (y, d, h, m, s, ms), rounded down."""
    for unit, size in (("y", 365 * 86400_000), ("d", 86400_000), ("h", 3600_000), ("m", 60_000), ("s", 1000),
                       ("ms", 1)):
        if ms >= size:
            return f"{ms // size}{unit}"
    return "1ms"


def parse_interval(text: str) -> float:
    """gtime.ParseInterval for the units FormatInterval writes below a year (ms, s, m, h, d: fixed lengths in UTC)."""
    m = _DURATION.match(text.strip("'"))
    if not m:
        raise ExpansionError(f"error parsing interval {text}")
    return float(m.group(1)) * _UNIT_SECONDS[m.group(2)]


def go_float(x: float) -> str:
    """Go's %v of a float64 (strconv 'g', shortest digits: exponent form when the exponent is < -4 or >= 6)."""
    if x == 0:
        return "0"
    sign, digits, exponent = Decimal(repr(x)).normalize().as_tuple()
    ds = "".join(map(str, digits))
    point = len(ds) + exponent  # position of the decimal point
    exp = point - 1
    if exp < -4 or exp >= 6:
        mantissa = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
        text = f"{mantissa}e{'+' if exp >= 0 else '-'}{abs(exp):02d}"
    elif point <= 0:
        text = "0." + "0" * -point + ds
    elif point >= len(ds):
        text = ds + "0" * (point - len(ds))
    else:
        text = ds[:point] + "." + ds[point:]
    return ("-" if sign else "") + text


def _rfc3339(t: datetime) -> str:
    """Go's time.RFC3339Nano in UTC: no trailing zeros in the fraction, Z for UTC."""
    text = t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f"{t.microsecond:06d}".rstrip("0")
    return text + (f".{fraction}" if fraction else "") + "Z"


def _macro(name: str, args: list[str], tr: TimeRange) -> str:
    if name in ("__timeFrom", "__timeTo"):
        return f"'{_rfc3339(tr.start if name == '__timeFrom' else tr.end)}'"
    if not args or not args[0]:
        raise ExpansionError(f"missing time column argument for macro {name}")
    col = args[0]
    if name == "__timeFilter":
        return f"{col} BETWEEN '{_rfc3339(tr.start)}' AND '{_rfc3339(tr.end)}'"
    if name == "__unixEpochFilter":
        return f"{col} >= {tr.from_unix()} AND {col} <= {tr.to_unix()}"
    if name in ("__unixEpochGroup", "__unixEpochGroupAlias"):
        if len(args) != 2:  # a third argument would be a fill mode, which these dashboards never use
            raise ExpansionError(f"macro {name} needs a time column and an interval")
        seconds = go_float(parse_interval(args[1]))
        return f"floor(({col})/{seconds})*{seconds}" + (' AS "time"' if name.endswith("Alias") else "")
    raise ExpansionError(f"unknown macro {name!r} (or one these tests do not model)")


def expand(sql: str, variables: Variables, tr: TimeRange) -> str:
    """The SQL Grafana sends to Postgres for this panel target."""
    sql = replace_variables(sql, variables)
    sql = sql.replace("$__interval_ms", str(tr.interval_ms))
    sql = sql.replace("$__interval", format_interval(tr.interval_ms))
    sql = sql.replace("$__unixEpochFrom()", str(tr.from_unix()))
    sql = sql.replace("$__unixEpochTo()", str(tr.to_unix()))
    sql = _MACRO.sub(lambda m: _macro(m.group(1), [a.strip(" ") for a in m.group(2).split(",")], tr), sql)
    if "$" in sql:
        raise ExpansionError(f"unexpanded $ left in the SQL:\n{sql}")
    return sql


def resolve(dashboard: dict, run: Callable[[str], list[tuple]], tr: TimeRange,
            pinned: dict[str, list[str]] | None = None) -> Variables:
    """Every variable's value, in dashboard order, with "All" selected where offered.

    `run` executes SQL and returns its rows; `pinned` sets a variable to given values instead
    (as a user can through the URL), after its query has still been run.
    """
    variables = Variables()
    for v in dashboard["templating"]["list"]:
        kind, name = v["type"], v["name"]
        if kind == "datasource":
            continue  # chooses the datasource; never part of the SQL
        if kind == "query":
            rows = run(expand(v["query"], variables, tr))
            options = [str(r[0]) for r in rows]
        elif kind == "constant":  # hidden, one value (a dashboard about one board)
            options = [v["query"]]
        elif kind == "custom":
            options = [o.split(" : ")[-1].strip() for o in v["query"].split(",")]
        else:
            raise ExpansionError(f"variable type {kind!r} is not modelled")
        if pinned and name in pinned:
            chosen = pinned[name]
        elif v.get("includeAll") and v["current"].get("value") in ("$__all", ["$__all"]):
            chosen = options
        else:
            current = v["current"]["value"]
            chosen = current if isinstance(current, list) else [current]
        variables.values[name], variables.options[name] = chosen, options
    return variables
