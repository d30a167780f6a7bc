"""The Grafana dashboards without a Grafana: their structure.

Every panel's SQL (and every template variable's query) is expanded as Grafana expands it
(tests/support/grafana_query.py) and run against a real Postgres store seeded through the store's own
write path (tests/support/dashboard_seed.py); each result must have the columns and types its panel reads,
no emulator row may show, and each file must be what `voxwatch dashboards render` makes of its SQL
templates. The numbers are checked in tests/test_dashboard_numbers.py. `voxwatch dashboards push`
runs as a user runs it against a stand-in of the Grafana API it calls (tests/support/grafana_api.py).
"""

from __future__ import annotations

import json
import re
import secrets
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from voxwatch.grafana import dashboards, panel_sql, panel_units
from voxwatch.metrics.specs import METRICS
from voxwatch.grafana.panel_sql import panels
from voxwatch.providers.registry import Registry
from voxwatch.store import exclusions
from voxwatch.store.connection import connect

from support.processes import REPO, run_cli
from support.dashboard_seed import EMULATED_ONLY, EMULATOR_LATENCY, POCKET, RANGE, SEEDED_CONVERSATIONS, seeded  # noqa: F401 (a fixture)
from support.grafana_api import GrafanaAPI
from support.grafana_panels import DASHBOARDS, FILES, load, query, range_of, run_panel, targets, variables_of
from support.grafana_query import ExpansionError, TimeRange, Variables, expand, go_float

pytestmark = pytest.mark.e2e

STABLE_UIDS = {"voxwatch-overview", "voxwatch-provider", "voxwatch-ttfa", "voxwatch-wer", "voxwatch-alerts",
               "voxwatch-conversations"}
"""Links and pushes address dashboards by uid: renaming one would orphan bookmarks and duplicate it on push."""

NUMERIC = {20, 21, 23, 700, 701, 1700}  # Postgres type OIDs: int8, int2, int4, float4, float8, numeric
TEXT = {25, 1043, 19}  # text, varchar, name
TIMESTAMP = {1114, 1184}
TIME_UNITS = {"dateTimeAsIso", "dateTimeFromNow", "dateTimeAsSystem"}


# ---------------------------------------------------------------- running panels as Grafana would

def _referenced_columns(panel: dict) -> dict[str, str | None]:
    """Each column the panel's field config names, with the unit it gives it (None: no unit)."""
    out: dict[str, str | None] = {}
    for t in panel.get("transformations", []):
        if t["id"] == "organize":
            for key in ("indexByName", "renameByName", "excludeByName"):
                out.update({name: None for name in t["options"].get(key, {})})
    for o in panel.get("fieldConfig", {}).get("overrides", []):
        if o["matcher"]["id"] == "byName":
            unit = next((p["value"] for p in o["properties"] if p["id"] == "unit"), None)
            out[o["matcher"]["options"]] = unit
    return out


def _check_shape(panel: dict, target: dict, names: list[str], types: list[int], rows: list[tuple]) -> None:
    where = f"{panel['title']!r} {target['refId']}"
    assert rows, f"{where}: no rows from the seeded store"
    col_type = dict(zip(names, types))
    if target["format"] == "time_series":
        assert names[0] == "time" and types[0] in NUMERIC | TIMESTAMP, f"{where}: the first column must be time"
        values = [n for n, t in zip(names, types) if t in NUMERIC and n != "time"]
        labels = [n for n, t in zip(names, types) if t in TEXT]
        assert values and set(labels) <= {"metric"} and len(values) + len(labels) == len(names) - 1, (where, names)
        times = [r[0] for r in rows]
        assert times == sorted(times), f"{where}: Grafana needs a long series in time order"
        step = range_of(panel).interval_ms / 1000
        assert all(RANGE.from_unix() - step <= t <= RANGE.to_unix() for t in times), where
        return
    assert target["format"] == "table", where
    for name, unit in _referenced_columns(panel).items():
        assert name in col_type, f"{where}: the panel names column {name!r}, the query returns {names}"
        if unit in TIME_UNITS:
            assert col_type[name] in TIMESTAMP, f"{where}: {name} is shown as a time"
        elif unit is not None:
            assert col_type[name] in NUMERIC, f"{where}: {name} has unit {unit} but type {col_type[name]}"
    if panel["type"] == "stat":
        assert set(types) <= NUMERIC, where
    if panel["type"] == "barchart":
        x = panel["options"]["xField"]
        assert col_type[x] in TEXT and all(t in NUMERIC for n, t in col_type.items() if n != x), where


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_panel_query_returns_rows_of_the_columns_and_types_its_panel_reads(path: Path, seeded):
    url, _ = seeded
    dashboard = json.loads(path.read_text())
    with connect(url) as conn:
        variables = variables_of(conn, dashboard)
        for v in dashboard["templating"]["list"]:
            if v["type"] == "query":
                assert variables.options[v["name"]], f"variable {v['name']} offered nothing"
        ran = 0
        for panel, target, scoped in targets(dashboard, variables):
            names, types, rows = query(conn, expand(target["rawSql"], scoped, range_of(panel)))
            _check_shape(panel, target, names, types, rows)
            ran += 1
    assert ran >= len(dashboard["panels"])


def test_no_panel_or_variable_shows_emulator_rows_even_when_asked_for_them(seeded):
    """Variables pinned (as a URL can) to every value in the store, emulator-only ones included."""
    url, rows = seeded
    conversations = [c for c, _ in SEEDED_CONVERSATIONS]
    everything = {"board": sorted({r.board for r in rows}),
                  "model": sorted({r.model_id for r in rows} | {c.model_id for c in conversations}),
                  "dataset": sorted({r.dataset for r in rows}),
                  "region": sorted({r.region for r in rows} | {c.region for c in conversations}),
                  "scenario": sorted({c.scenario for c in conversations}),
                  "persona": sorted({c.persona for c in conversations})}
    assert any(c.emulator and c.model_id == EMULATED_ONLY for c in conversations)
    with connect(url) as conn:
        for path in FILES:
            dashboard = json.loads(path.read_text())
            variables = variables_of(conn, dashboard, **everything)
            assert all(EMULATED_ONLY not in options for options in variables.options.values()), path.name
            annotations = [({"title": a["name"]}, a["target"], variables) for a in dashboard["annotations"]["list"]]
            for panel, target, scoped in [*targets(dashboard, variables), *annotations]:
                names, types, result = query(conn, expand(target["rawSql"], scoped, range_of(panel)))
                for row in result:
                    for name, type_code, value in zip(names, types, row):
                        assert not (isinstance(value, str) and EMULATED_ONLY in value), (path.name, panel["title"])
                        if type_code in NUMERIC and name != "time" and value is not None:
                            assert float(value) < EMULATOR_LATENCY, (path.name, panel["title"], name, value)


def test_the_expansion_is_the_one_grafanas_own_tests_expect():
    """The helper against Grafana's tests (postgres macros_test.go, the template format registry)."""
    tr = TimeRange(datetime(2018, 4, 12, 18, 0, tzinfo=timezone.utc), datetime(2018, 4, 12, 18, 5, tzinfo=timezone.utc),
                   interval_ms=600_000)
    none = Variables()
    start = int(tr.start.timestamp())
    assert expand("select $__unixEpochFilter(time)", none, tr) == f"select time >= {start} AND time <= {start + 300}"
    assert expand("SELECT $__unixEpochGroupAlias(time_column+time_adjustment,'5m')", none, tr) == \
        'SELECT floor((time_column+time_adjustment)/300)*300 AS "time"'
    assert expand("select $__timeFrom(), $__interval", none, tr) == "select '2018-04-12T18:00:00Z', 10m"
    assert expand("WHERE $__timeFilter(time_column)", none, tr) == \
        "WHERE time_column BETWEEN '2018-04-12T18:00:00Z' AND '2018-04-12T18:05:00Z'"
    assert expand("x IN (${m:sqlstring})", Variables({"m": ["test", "test'value2", 'test"value3']}), tr) == \
        "x IN ('test','test''value2','test\\\"value3')"
    assert go_float(2_592_000.0) == "2.592e+06" and go_float(3600.0) == "3600"  # Go's %v of 30 days and of 1 h
    for unsupported in ("x = $m", "x = ${m}", "$__timeGroup(t, 5m)"):
        with pytest.raises(ExpansionError):
            expand(unsupported, Variables({"m": ["a"]}), tr)


# ---------------------------------------------------------------- files and provisioning

def test_dashboard_files_are_valid_with_unique_stable_uids():
    loaded = dashboards.load(DASHBOARDS)  # what push checks before sending anything
    assert {d["uid"] for d in loaded} == STABLE_UIDS and len(loaded) == len(FILES)
    for d in loaded:
        every = list(panels(d))
        assert len({p["id"] for p in every}) == len(every) and len({p["title"] for p in every}) == len(every)
        for p in every:
            for t in p.get("targets", []):
                assert t["datasource"] == {"type": dashboards.DATASOURCE_TYPE, "uid": "${datasource}"}
                assert t["format"] in ("table", "time_series") and t["rawQuery"] and t["editorMode"] == "code"
        names = [v["name"] for v in d["templating"]["list"]]
        series = {"scenario", "persona"} if d["uid"] == "voxwatch-conversations" else {"dataset"}  # what a series is
        assert {"datasource", "model", "region"} | series <= set(names), d["uid"]


def test_no_exclusion_is_copied_into_the_sql_and_metric_columns_follow_the_metric_specs():
    """Exclusions are read from the store's registry_exclusions table, never spelled in a panel's SQL."""
    registry = {(m.id, e.metric) for m in Registry.default().models.values() for e in m.exclusions}
    assert registry, "the registry has no exclusion: this check would pass on anything"
    metric_names = {m.name for m in METRICS}
    for path in FILES:
        for panel in panels(load(path.name)):
            for t in panel.get("targets", []):
                pairs = {(a, b) for a, b in re.findall(r"\('([^']+)', '([^']+)'", t["rawSql"]) if b in metric_names}
                assert not pairs & registry, (path.name, panel["title"])
                assert not any(m in t["rawSql"] for m, _ in registry), (path.name, panel["title"])
    for t in next(p for p in panels(load("provider-detail.json")) if p.get("repeat") == "metric")["targets"]:
        assert "registry_exclusions" in t["rawSql"]
        columns = re.findall(r"\('(\w+)', o\.(\w+)\)", t["rawSql"])
        headline = {m.name for m in METRICS if m.headline}
        assert all(a == b for a, b in columns) and {a for a, _ in columns} == headline


def _with_exclusion(model_id: str, metric: str, reason: str) -> Registry:
    """The packaged registry with one more exclusion, as an operator would add it to registry.toml."""
    text = (REPO / "voxwatch/providers/registry.toml").read_text()
    at = text.index(f'id = "{model_id}"')
    end = text.index("exclusions = []", at)
    return Registry.from_toml(text[:end] + f'exclusions = [{{metric = "{metric}", reason = "{reason}"}}]'
                              + text[end + len("exclusions = []"):])


def test_an_exclusion_changed_in_the_registry_changes_the_panels_without_touching_their_sql(seeded):
    url, _ = seeded
    overview, detail = load("overview.json"), load("provider-detail.json")
    reason = "final forced by the test"

    def shown(conn) -> tuple[set, set]:
        board = variables_of(conn, overview).scoped("board", "stt").scoped("window", "30d")
        blanked = {(r["model"], r["metric"], r["n"], r["note"]) for r in
                   run_panel(conn, overview, overview["panels"][0]["title"], board) if r["note"] and reason in r["note"]}
        plotted = {r["metric"].split(" ")[0] for r in run_panel(conn, detail, "${metric}: p50 and p95",
                                                               variables_of(conn, detail).scoped("metric", "ttfs_ms"))}
        return blanked, plotted

    with connect(url) as conn:
        assert exclusions.rows_of(Registry.default()) == set(conn.execute(
            "SELECT model_id, metric, reason FROM registry_exclusions").fetchall())
        before = shown(conn)
        assert before[0] == set() and POCKET in before[1]
        try:
            assert exclusions.sync(conn, _with_exclusion(POCKET, "ttfs_ms", reason))
            blanked, plotted = shown(conn)
            assert blanked and all(m == POCKET and metric == "ttfs_ms" and n == 0 for m, metric, n, _ in blanked)
            assert POCKET not in plotted and plotted == before[1] - {POCKET}
        finally:
            exclusions.sync(conn, Registry.default())
        assert shown(conn) == before


def test_provisioning_reads_the_connection_from_the_environment_and_finds_the_dashboards():
    text = (DASHBOARDS / "provisioning/datasources/voxwatch.yaml").read_text()
    (ds,) = yaml.safe_load(text)["datasources"]
    connection = [ds["url"], ds["user"], ds["secureJsonData"]["password"], ds["jsonData"]["database"],
                  ds["jsonData"]["sslmode"]]
    assert all(re.fullmatch(r"(\$\{\w+\}|:)+", value) for value in connection), connection
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]["grafana"]
    assert set(re.findall(r"\$\{(\w+)\}", text)) <= set(compose["environment"])
    (provider,) = yaml.safe_load((DASHBOARDS / "provisioning/dashboards/voxwatch.yaml").read_text())["providers"]
    mounts = dict(v.split(":")[:2] for v in compose["volumes"])
    assert mounts["./dashboards"] == provider["options"]["path"] and provider["type"] == "file"
    for path in FILES:
        (source,) = [v for v in json.loads(path.read_text())["templating"]["list"] if v["type"] == "datasource"]
        assert source["query"] == ds["type"] and source["current"]["value"] == ds["uid"]


def test_every_statistic_is_shown_in_its_metrics_unit_from_the_specs(seeded):
    """rtf in x real time, latencies in ms: by voxwatch/metrics/specs.py, in the tables and in every series."""
    url, _ = seeded
    assert panel_units.grafana_unit("rtf") == "suffix:x real time" and panel_units.grafana_unit("ttfs_ms") == "ms"
    detail = load("provider-detail.json")
    repeated = [p for p in panels(detail) if p.get("repeat") == "metric"]
    shown = set()
    with connect(url) as conn:
        variables = variables_of(conn, detail)
        assert "rtf" in variables.values["metric"]
        for panel in repeated:
            assert "unit" not in panel["fieldConfig"]["defaults"], panel["title"]
            overrides = [(o["matcher"]["options"], o["properties"][0]["value"]) for o in panel["fieldConfig"]["overrides"]]
            for metric in variables.values["metric"]:
                for target in panel["targets"]:
                    _, _, rows = query(conn, expand(target["rawSql"], variables.scoped("metric", metric),
                                                        range_of(panel)))
                    for label in {r[1] for r in rows}:
                        units = [unit for pattern, unit in overrides if re.fullmatch(pattern, label)]
                        assert units == [panel_units.grafana_unit(metric)], (panel["title"], label, units)
                        shown.add(metric)
    assert "rtf" in shown and "ttfs_ms" in shown
    for path in FILES:  # a panel with one unit for everything reads only metrics of that unit
        for panel in panels(load(path.name)):
            unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit")
            read = {m.name for t in panel.get("targets", []) for m in METRICS
                    if re.search(rf"\.{m.name}\b", t["rawSql"])}
            if unit and read and panel["type"] != "table":
                assert {panel_units.grafana_unit(m) for m in read} == {unit}, (path.name, panel["title"], read, unit)


def _datasource_references(node, where: str = "") -> Iterator[tuple[str, dict]]:
    """Every `datasource` object anywhere in a dashboard (panels, targets, variables, annotations)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "datasource" and isinstance(value, dict):
                yield where, value
            yield from _datasource_references(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _datasource_references(value, f"{where}/{i}")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))


def test_every_datasource_is_the_provisioned_type_which_the_stated_grafana_versions_know():
    """The core Postgres plugin's id is `grafana-postgresql-datasource` from Grafana 10.2.3 (`postgres`
    before); the README states that minimum and the compose file runs a Grafana at or above it."""
    (ds,) = yaml.safe_load((DASHBOARDS / "provisioning/datasources/voxwatch.yaml").read_text())["datasources"]
    assert ds["type"] == dashboards.DATASOURCE_TYPE == "grafana-postgresql-datasource"
    for path in FILES:
        dashboard = json.loads(path.read_text())
        found = list(_datasource_references(dashboard))
        assert len(found) >= len(list(panels(dashboard))), path.name
        for where, source in found:
            assert source == {"type": ds["type"], "uid": "${datasource}"}, (path.name, where, source)
        (variable,) = [v for v in dashboard["templating"]["list"] if v["type"] == "datasource"]
        assert variable["query"] == ds["type"], path.name
    readme = (DASHBOARDS / "README.md").read_text()
    stated = re.search(r"Grafana (\d+\.\d+\.\d+) or later", readme)
    assert stated and _version(stated.group(1)) == dashboards.MIN_GRAFANA_VERSION, "state the minimum Grafana"
    image = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]["grafana"]["image"]
    assert _version(image.rsplit(":", 1)[1]) >= dashboards.MIN_GRAFANA_VERSION, image


# ---------------------------------------------------------------- push

def test_push_creates_then_updates_each_dashboard_by_uid_and_refuses_a_bad_token():
    token = "glsa_" + secrets.token_hex(16)
    files = {d["uid"]: d for d in dashboards.load(DASHBOARDS)}
    with GrafanaAPI(token) as grafana:
        env = {"VOXWATCH_GRAFANA_TOKEN": token}
        first = run_cli("dashboards", "push", "--url", grafana.url, env=env)
        stored = grafana.state.dashboards
        assert set(stored) == set(files) and list(grafana.state.folders) == [dashboards.FOLDER_UID]
        for uid, d in files.items():
            assert stored[uid]["dashboard"]["version"] == 1 and stored[uid]["meta"]["folderUid"] == "voxwatch"
            assert stored[uid]["dashboard"]["panels"] == d["panels"]
            assert f"created {uid} " in first.stdout and f"{grafana.url}/d/{uid}/" in first.stdout
        ids = {uid: s["dashboard"]["id"] for uid, s in stored.items()}

        second = run_cli("dashboards", "push", "--url", grafana.url, env=env)
        assert set(stored) == set(files) and len(grafana.state.folders) == 1
        assert {uid: s["dashboard"]["id"] for uid, s in stored.items()} == ids
        assert all(s["dashboard"]["version"] == 2 for s in stored.values())
        assert all(f"updated (was version 1) {uid} " in second.stdout for uid in files)
        assert token not in first.stdout + first.stderr + second.stdout + second.stderr

        wrong = "glsa_" + secrets.token_hex(16)
        before = len(grafana.state.requests)
        bad = run_cli("dashboards", "push", "--url", grafana.url, env={"VOXWATCH_GRAFANA_TOKEN": wrong}, check=False)
        assert bad.returncode == 2 and "401" in bad.stderr and "VOXWATCH_GRAFANA_TOKEN" in bad.stderr
        assert wrong not in bad.stdout + bad.stderr and "Traceback" not in bad.stderr
        assert len(grafana.state.requests) == before and all(s["dashboard"]["version"] == 2 for s in stored.values())

        missing = run_cli("dashboards", "push", "--url", grafana.url, check=False)
        assert missing.returncode == 2 and "set VOXWATCH_GRAFANA_TOKEN" in missing.stderr
        url = grafana.url
    gone = run_cli("dashboards", "push", "--url", url, env=env, check=False)
    assert gone.returncode == 2 and f"cannot reach Grafana at {url}" in gone.stderr
    assert token not in gone.stdout + gone.stderr and "Traceback" not in gone.stderr


def test_bad_dashboard_files_are_refused_before_anything_is_sent(tmp_path: Path):
    good = load("overview.json")
    (tmp_path / "a.json").write_text(json.dumps(good))
    (tmp_path / "b.json").write_text(json.dumps({**good, "title": "copy"}))
    with pytest.raises(dashboards.DashboardError, match="b.json: uid 'voxwatch-overview' is also the uid of a.json"):
        dashboards.load(tmp_path)
    (tmp_path / "b.json").write_text('{"uid": "x", "title": ')
    with pytest.raises(dashboards.DashboardError, match="b.json: not a readable JSON file"):
        dashboards.load(tmp_path)
    (tmp_path / "b.json").write_text(json.dumps({**good, "uid": "has spaces"}))
    with pytest.raises(dashboards.DashboardError, match="needs a uid of 1-40"):
        dashboards.load(tmp_path)
    with pytest.raises(dashboards.DashboardError, match="no dashboard JSON files"):
        dashboards.load(tmp_path / "empty")


# ---------------------------------------------------------------- rendered from the definitions

def test_each_dashboard_file_is_what_its_sql_templates_render():
    """The JSON holds the SQL Grafana runs; the templates hold it once, with each statistic a placeholder."""
    for path, text in panel_sql.rendered(DASHBOARDS).items():
        assert path.read_text(encoding="utf-8") == text, f"{path.name}: run `voxwatch dashboards render`"
    for template in (DASHBOARDS / "sql").glob("*.sql"):
        text = template.read_text(encoding="utf-8")
        spelled = re.findall(r"percentile_cont|count\([^)]*\) *[<>]=? *\d|sum\([^)]*\) */|'(?:timeout|inaudible)'",
                             text)
        assert not spelled, f"{template.name}: write {spelled} as a placeholder of voxwatch/grafana/panel_sql.py"


def test_an_unknown_placeholder_or_a_target_without_a_template_is_refused(tmp_path: Path):
    with pytest.raises(ValueError, match="unknown placeholder"):
        panel_sql.render("SELECT {{median(x)}}")
    (tmp_path / "sql").mkdir()
    (tmp_path / "overview.json").write_text((DASHBOARDS / "overview.json").read_text())
    (tmp_path / "sql" / "overview.sql").write_text("-- target: 1 A\nSELECT 1\n-- target: 3 A\nSELECT 1\n")
    with pytest.raises(ValueError, match=r"no template for panel 2 \('Freshness'\) target A"):
        panel_sql.rendered(tmp_path)
