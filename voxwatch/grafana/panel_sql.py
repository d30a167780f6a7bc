"""The dashboards' panel SQL, rendered from templates with every floor and status set taken from
voxwatch/metrics/series.py (`voxwatch dashboards render`).

A panel's SQL is written once, in dashboards/sql/<dashboard>.sql, one section per query target
(a line `-- target: <panel id> <refId>` starts it). A statistic is not spelled out there: it is a
placeholder, `{{percentile(95, m.value)}}` or `{{rate(error_rate, o.status)}}`, that renders to the
SQL of the Python definition (its floor, its status set, sum/sum for pooled WER). The dashboard
JSON files hold the rendered SQL, since Grafana reads them as they are; tests/test_dashboards.py
fails when a file differs from what its template renders, so no copy can drift from the definition.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Callable, Iterator

from voxwatch.grafana import panel_interval, panel_units
from voxwatch.foundation.scenario import DIMENSIONS
from voxwatch.metrics.conversation_aggregate import TIMING_ONLY
from voxwatch.metrics.conversation_timing import SILENCE_GAP_MIN_S
from voxwatch.metrics.series import MIN_ATTEMPTS, MIN_N, NOT_AN_ATTEMPT, RATES, SUCCEEDED, WINDOWS, percentile_floor
from voxwatch.metrics.specs import METRICS

_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)(?:\((.*?)\))?\s*\}\}")
_HEADER = re.compile(r"^-- (?:target|annotation):.*$", re.M)
_ANNOTATION = re.compile(r"-- annotation: (\w[\w ]*)")
_TARGET = re.compile(r"-- target: (\d+) (\w+)")
_SAME_AS = re.compile(r"-- target: (\d+) (\w+) = (\d+) (\w+) with (\{\{metrics_in_unit\(\w+\)\}\})")
_IN_UNIT = re.compile(r"\{\{metrics_in_unit\(\w+\)\}\}")


def _quoted(values) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in sorted(values))


def percentile(q: str, expr: str) -> str:
    """Linear interpolation (percentile_cont), NULL below the percentile's floor (p95: 100 values)."""
    return (f"CASE WHEN count({expr}) >= {percentile_floor(float(q))} "
            f"THEN percentile_cont({float(q) / 100:g}) WITHIN GROUP (ORDER BY {expr}) END")


def has_percentile(q: str, expr: str) -> str:
    """A time bucket's condition for a point: as many values as the percentile's floor."""
    return f"count({expr}) >= {percentile_floor(float(q))}"


def floor_of(q: str) -> str:
    """The fewest values at which percentile q is shown (for a note saying why it is n/a)."""
    return str(percentile_floor(float(q)))


def mean(expr: str) -> str:
    return f"CASE WHEN count({expr}) >= {MIN_N} THEN avg({expr}) END"


def maximum(expr: str) -> str:
    return f"CASE WHEN count({expr}) >= {MIN_N} THEN max({expr}) END"


def has_n(expr: str) -> str:
    return f"count({expr}) >= {MIN_N}"


def share(condition: str) -> str:
    """The mean of a yes/no over the group's rows (a mean: MIN_N of them)."""
    return f"CASE WHEN count(*) >= {MIN_N} THEN count(*) FILTER (WHERE {condition})::float8 / count(*) END"


def attempts(status: str) -> str:
    """Rows that are attempts: every status but those of NOT_AN_ATTEMPT."""
    return f"count(*) FILTER (WHERE {status} NOT IN ({_quoted(NOT_AN_ATTEMPT)}))"


def _over_attempts(statuses: frozenset[str], status: str) -> str:
    return (f"CASE WHEN {attempts(status)} >= {MIN_ATTEMPTS} THEN count(*) FILTER (WHERE {status} IN "
            f"({_quoted(statuses)}))::float8 / {attempts(status)} END")


def rate(name: str, status: str) -> str:
    """RATES[name]: its statuses over attempts, NULL below MIN_ATTEMPTS attempts."""
    return _over_attempts(RATES[name], status)


def availability(status: str) -> str:
    """metrics.series.availability: SUCCEEDED over attempts, NULL below MIN_ATTEMPTS attempts."""
    return _over_attempts(SUCCEEDED, status)


def has_rate(status: str) -> str:
    return f"{attempts(status)} >= {MIN_ATTEMPTS}"


def pooled_wer(errors: str, words: str) -> str:
    """sum(S + D + I) / sum(N) over scored clips, NULL below MIN_N clips or with no words."""
    return f"CASE WHEN count({words}) >= {MIN_N} AND sum({words}) > 0 THEN sum({errors})::float8 / sum({words}) END"


def has_pooled_wer(words: str) -> str:
    return f"count({words}) >= {MIN_N} AND sum({words}) > 0"


def wer_at_deadline(errors: str, words: str) -> str:
    """metrics.series.wer_at_deadlines: pooled WER of the transcript at a deadline (its S + D + I in
    `errors`, NULL where the row was not scored at the deadlines) over the rows scored there."""
    return pooled_wer(errors, f"CASE WHEN {errors} IS NOT NULL THEN {words} END")


def clip_wer(errors: str, words: str) -> str:
    """One clip's own WER (none for a clip without reference words): distributions only."""
    return f"({errors})::float8 / NULLIF({words}, 0)"


def decided_rate(passed: str) -> str:
    """A share of decided yes/no items (voxwatch/metrics/conversation_aggregate.py clustered_rate: NULL, an
    undecided or out-of-scope verdict, is not counted), NULL below MIN_ATTEMPTS decided items."""
    return (f"CASE WHEN count({passed}) >= {MIN_ATTEMPTS} "
            f"THEN count(*) FILTER (WHERE {passed})::float8 / count({passed}) END")


def has_decided_rate(passed: str) -> str:
    return f"count({passed}) >= {MIN_ATTEMPTS}"


def adherence_rate(passed: str, dimension: str) -> str:
    """Instruction adherence over (dimension, passed) rows (conversation_aggregate.adherence_items): a decided
    rate, NULL when turn-taking is the only dimension decided (never a pass on turn-taking alone)."""
    return (f"CASE WHEN {has_adherence_rate(passed, dimension)} "
            f"THEN count(*) FILTER (WHERE {passed})::float8 / count({passed}) END")


def has_adherence_rate(passed: str, dimension: str) -> str:
    return (f"count({passed}) >= {MIN_ATTEMPTS} AND "
            f"count({passed}) FILTER (WHERE {dimension} <> '{TIMING_ONLY}') > 0")


def silence_gap(gap: str) -> str:
    """Coval's silence-gap latency (voxwatch/metrics/conversation_timing.py silence_gap_latency): the mean of
    the gaps of at least SILENCE_GAP_MIN_S seconds, NULL when there is none."""
    return f"avg({gap}) FILTER (WHERE {gap} >= {SILENCE_GAP_MIN_S:g})"


def has_silence_gap(gap: str) -> str:
    return f"count({gap}) FILTER (WHERE {gap} >= {SILENCE_GAP_MIN_S:g}) > 0"


def dimension_values(turn: str) -> str:
    """(dimension, passed) of every scored dimension of a turn, for a lateral VALUES list."""
    return ", ".join(f"('{d}', {turn}.{d})" for d in DIMENSIONS)


def dimension_rates(d: str) -> str:
    """Each dimension's pass rate as its own column, over the (dimension, passed) rows of `d`."""
    columns = []
    for x in DIMENSIONS:
        passed = f"CASE WHEN {d}.dimension = '{x}' THEN {d}.passed END"
        columns.append(f"{decided_rate(passed)} AS {x}")
    return ", ".join(columns)


def dimension_columns(table: str) -> str:
    """The columns dimension_rates makes, read from `table`."""
    return ", ".join(f"{table}.{x}" for x in DIMENSIONS)


def conversation_series(c: str) -> str:
    """A conversation's board block as one label (voxwatch/conversations/scorecards.py ScorecardKey): model,
    scenario version and pin, a trial's length, persona, region and method version, never pooled."""
    return (f"concat_ws(' ', {c}.model_id, {c}.scenario || '@v' || {c}.scenario_version, "
            f"'#' || left({c}.scenario_pin, 12), CASE WHEN NOT {c}.whole THEN 'first ' || {c}.turns || ' turns' END, "
            f"'persona ' || {c}.persona, {c}.region, 'method ' || {c}.method_version)")


def chosen_conversations(c: str) -> str:
    """The conversations a panel may show: none against an emulator, the time range, the drop-downs."""
    return (f"{c}.emulator IS NOT TRUE AND $__unixEpochFilter({c}.started_at) AND "
            + _in_variables(c, ("model_id", "model"), ("scenario", "scenario"), ("persona", "persona"),
                            ("region", "region")))


def _in_variables(row: str, *pairs: tuple[str, str]) -> str:
    """`row.column IN (${variable:sqlstring})` for each (column, variable), joined by AND."""
    return " AND ".join(f"{row}.{column} IN (${{{variable}:sqlstring}})" for column, variable in pairs)


def chosen(row: str, board: str) -> str:
    """The rows a panel on observations may show: no emulator row, the time range, the drop-downs."""
    return (f"{row}.emulator IS NOT TRUE AND $__unixEpochFilter({row}.started_at) AND "
            + _in_variables(row, ("model_id", "model"), ("dataset", "dataset"), ("region", "region"))
            + f" AND {row}.board IN ({board})")


def chosen_alerts(alert: str) -> str:
    """The alerts a panel may show: the drop-downs, and never one raised for a model known only from emulators."""
    return (f"{alert}.board IN (${{board:sqlstring}}) AND {alert}.model_id IN (${{model:sqlstring}}) "
            f"AND {alert}.dataset IN (${{dataset:sqlstring}}) AND {alert}.region IN (${{region:sqlstring}}) "
            f"AND {alert}.model_id IN (SELECT measured_models(ARRAY(SELECT DISTINCT model_id FROM alerts)))")


def metric_values(row: str) -> str:
    """(name, value) of every headline metric of a row, for a lateral VALUES list."""
    return ", ".join(f"('{m.name}', {row}.{m.name})" for m in METRICS if m.headline)


def metrics_in_unit(unit: str) -> str:
    """The metrics whose unit (voxwatch/metrics/specs.py) is `unit`, quoted: a panel's field has one unit."""
    return _quoted(panel_units.metrics_in_unit(unit))


def window_seconds(window: str) -> str:
    return f"CASE {window} " + " ".join(f"WHEN '{w}' THEN {s}" for w, s in WINDOWS.items()) + " END"


FRAGMENTS: dict[str, Callable[..., str]] = {f.__name__: f for f in (
    percentile, has_percentile, floor_of, mean, maximum, has_n, share, attempts, rate, availability, has_rate, pooled_wer,
    has_pooled_wer, wer_at_deadline, clip_wer, chosen, chosen_alerts, metric_values, metrics_in_unit, window_seconds,
    decided_rate, has_decided_rate, adherence_rate, has_adherence_rate, silence_gap, has_silence_gap, dimension_values, dimension_rates, dimension_columns,
    conversation_series, chosen_conversations)}
CONSTANTS = {"MIN_N": str(MIN_N), "MIN_ATTEMPTS": str(MIN_ATTEMPTS)}


def _arguments(text: str) -> list[str]:
    """Split on the commas outside parentheses."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    return [a for a in out + [text[start:].strip()] if a]


def render(template: str) -> str:
    """A template's SQL with every placeholder replaced by its fragment."""
    def sub(m: re.Match) -> str:
        name, args = m.group(1), m.group(2)
        if args is None and name in CONSTANTS:
            return CONSTANTS[name]
        if name not in FRAGMENTS:
            raise ValueError(f"unknown placeholder {m.group(0)}")
        return FRAGMENTS[name](*_arguments(args or ""))
    return _PLACEHOLDER.sub(sub, template)


ANNOTATION = 0  # the "panel id" of an annotation's template key: (ANNOTATION, its name)
SHARED = "annotations.sql"  # the annotations' templates for every dashboard that has no own one


def templates(path: Path) -> dict[tuple[int, str], str]:
    """(panel id, refId) -> template, from one dashboard's .sql file, and (ANNOTATION, name) -> the
    template of the dashboard's annotation of that name (`-- annotation: <name>`). A line
    `-- target: 3 A = 1 A with {{metrics_in_unit(x)}}` makes 3 A the template of 1 A with every
    `{{metrics_in_unit(...)}}` replaced (the same table for the metrics of another unit)."""
    text = path.read_text(encoding="utf-8")
    marks = list(_HEADER.finditer(text))
    found, copies = {}, []
    for i, m in enumerate(marks):
        own, same = _TARGET.fullmatch(m.group(0)), _SAME_AS.fullmatch(m.group(0))
        annotation = _ANNOTATION.fullmatch(m.group(0))
        body = text[m.end() + 1:(marks[i + 1].start() if i + 1 < len(marks) else None)].rstrip("\n")
        if same:
            copies.append(same)
        elif own:
            found[(int(own.group(1)), own.group(2))] = body
        elif annotation:
            found[(ANNOTATION, annotation.group(1))] = body
        else:
            raise ValueError(f"{path}: {m.group(0)!r} is not `-- target: <panel id> <refId>`")
    for same in copies:
        source = (int(same.group(3)), same.group(4))
        if source not in found:
            raise ValueError(f"{path}: target {same.group(1)} {same.group(2)} copies {source}, which has no template")
        found[(int(same.group(1)), same.group(2))] = _IN_UNIT.sub(same.group(5), found[source])
    return found


def rendered(folder: Path) -> dict[Path, str]:
    """Each dashboard file's text with every target's rawSql rendered from its template."""
    out = {}
    for path in sorted(folder.glob("*.json")):  # sql/annotations.sql belongs to no one dashboard
        dashboard = json.loads(path.read_text(encoding="utf-8"))
        source = folder / "sql" / f"{path.stem}.sql"
        found = templates(source) if source.exists() else {}
        shared = templates(folder / "sql" / SHARED) if (folder / "sql" / SHARED).exists() else {}
        used = set()
        for panel in panels(dashboard):
            for target in panel.get("targets", []):
                key = (panel["id"], target["refId"])
                if key not in found:
                    raise ValueError(f"{source}: no template for panel {key[0]} ({panel['title']!r}) target {key[1]}")
                target["rawSql"] = render(found[key])
                used.add(key)
            own = [found[(panel["id"], t["refId"])] for t in panel.get("targets", [])]
            panel_units.apply(panel, own)
            panel_interval.apply(panel, own)
        for annotation in dashboard.get("annotations", {}).get("list", []):
            if annotation.get("builtIn"):
                continue
            key = (ANNOTATION, annotation["name"])
            if key not in found and key not in shared:
                raise ValueError(f"{source}: no template for annotation {annotation['name']!r} (nor in {SHARED})")
            annotation["target"]["rawSql"] = render(found.get(key, shared.get(key, "")))
            used.add(key)
        if set(found) - used:
            raise ValueError(f"{source}: templates for targets {sorted(set(found) - used)} that {path.name} lacks")
        out[path] = json.dumps(dashboard, indent=2, ensure_ascii=False) + "\n"
    return out


def panels(dashboard: dict) -> Iterator[dict]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])  # a collapsed row keeps its panels inside


def write(folder: Path) -> list[Path]:
    """Render every dashboard in place; returns the files that changed."""
    changed = []
    for path, text in rendered(folder).items():
        if path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed
