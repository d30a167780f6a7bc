"""The drawn architecture (docs/ARCHITECTURE.md) is the code's: import-linter's contracts in
pyproject.toml hold, they fail when a lower layer imports a higher one, and no two packages import
each other, even through others, when their modules load."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from support.import_graph import load_time_imports, loops, module_names, package_graph
from support.processes import REPO

PACKAGE = REPO / "voxwatch"


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    """import-linter run as `lint-imports` is, on the package importable from `cwd`."""
    return subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                           "sys.exit(lint_imports_command())", "--no-cache"],
                          cwd=cwd, env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=300)


def _layers() -> list[str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers" and "containers" not in c]
    return contract["layers"]  # the package's layers (the other layers contract is inside providers/)


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory) -> Path:
    """The package's source (no data) and pyproject.toml in a scratch folder, to plant imports in."""
    root = tmp_path_factory.mktemp("copy")
    shutil.copytree(PACKAGE, root / "voxwatch", ignore=lambda _d, names: [
        n for n in names if not (n.endswith(".py") or (Path(_d) / n).is_dir()) or n == "__pycache__"])
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def test_every_package_is_in_a_layer():
    """A package left out of the contract would be checked by nothing."""
    drawn = {name.strip() for line in _layers() for name in line.split("|")}
    packages = {f"voxwatch.{p.name}" for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    top_modules = {f"voxwatch.{p.stem}" for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert packages | top_modules == drawn


@pytest.mark.e2e
def test_the_import_contracts_hold():
    proc = _lint_imports(REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


@pytest.mark.e2e
@pytest.mark.parametrize("lower, higher", [("voxwatch/metrics/wer.py", "voxwatch.web.app"),
                                           ("voxwatch/foundation/clock.py", "voxwatch.metrics.series"),
                                           ("voxwatch/harness/measure.py", "voxwatch.workers.celery_app"),
                                           ("voxwatch/store/runs.py", "voxwatch.harness.tick"),
                                           ("voxwatch/harness/pacer.py", "celery"),
                                           ("voxwatch/providers/stt/deepgram.py", "voxwatch.providers.stt.assemblyai"),
                                           ("voxwatch/providers/session/ws_session.py", "voxwatch.providers.stt.deepgram"),
                                           ("voxwatch/providers/registry.py", "voxwatch.providers.session.endpoints")])
def test_a_wrong_way_import_breaks_the_contract(package_copy, lower, higher):
    """Planted in a function body, where the load-time graph below cannot see it: import-linter still does
    (a layer reaching up, the harness reaching for Celery, one vendor's adapter reaching into another's,
    the shared session plumbing reaching into an adapter, the registry into the plumbing)."""
    planted = package_copy / lower
    original = planted.read_text()
    planted.write_text(original + f"\n\ndef _planted():\n    import {higher}  # noqa: F401\n")
    try:
        proc = _lint_imports(package_copy)
    finally:
        planted.write_text(original)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "BROKEN" in proc.stdout and higher in proc.stdout


@pytest.mark.e2e
def test_no_package_imports_itself_through_others_when_loading():
    graph = package_graph(module_names(PACKAGE))
    assert "voxwatch.metrics" in graph and "voxwatch.foundation" in graph["voxwatch.metrics"]
    assert loops(graph) == []


def test_the_loop_finder_finds_a_loop():
    assert loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert loops({"a": {"b"}, "b": set()}) == []


def test_load_time_imports_leave_out_function_bodies_and_type_checking(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("from typing import TYPE_CHECKING\nimport voxwatch.metrics\nif TYPE_CHECKING:\n"
                      "    import voxwatch.web\ntry:\n    from voxwatch.store import runs\nexcept ImportError:\n"
                      "    pass\ndef f():\n    import voxwatch.cli\n")
    assert load_time_imports(source) == ["typing", "typing.TYPE_CHECKING", "voxwatch.metrics",
                                         "voxwatch.store", "voxwatch.store.runs"]


def test_the_foundation_and_metrics_import_nothing_above_them():
    """The two leaves, read straight from the source as well as through the contract."""
    modules = module_names(PACKAGE)
    for leaf, allowed in (("voxwatch.foundation", {"voxwatch.foundation"}),
                          ("voxwatch.metrics", {"voxwatch.foundation", "voxwatch.metrics"})):
        for name, path in modules.items():
            if name.startswith(leaf + ".") or name == leaf:
                reached = {".".join(t.split(".")[:2]) for t in load_time_imports(path) if t.startswith("voxwatch.")}
                assert reached <= allowed, (name, reached - allowed)
