"""On a machine without Chromium, `make test` stops before any test in one line saying what to install
(tests/support/preflight.sh when it cannot install it; tests/conftest.py when pytest is run straight),
never in a page of fixture errors; a selection without browser tests runs as usual."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from support.processes import REPO

MISSING = "/nonexistent/chromium"


def _bin_without_a_package_manager(tmp_path: Path) -> Path:
    """A PATH of only what the preflight needs to look, with no apt-get and no sudo in it."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in ("sh", "id", "ls", "sleep", "head", "pg_isready", "redis-cli", "redis-server"):
        found = shutil.which(tool)
        if found:
            (folder / tool).symlink_to(found)
    (folder / "python3").symlink_to(os.path.realpath(sys.executable))
    return folder


def test_the_preflight_stops_in_one_line_when_chromium_cannot_be_installed(tmp_path: Path):
    env = {"PATH": str(_bin_without_a_package_manager(tmp_path)), "VOXWATCH_TEST_CHROMIUM": MISSING}
    proc = subprocess.run(["sh", str(REPO / "tests/support/preflight.sh"), "--browser"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith("make test: ") and MISSING in line and "chromium-driver" in line


def test_the_preflight_passes_without_chromium_for_the_quick_tier(tmp_path: Path):
    env = {"PATH": str(_bin_without_a_package_manager(tmp_path)), "VOXWATCH_TEST_CHROMIUM": MISSING}
    proc = subprocess.run(["sh", str(REPO / "tests/support/preflight.sh")], env=env,
                          capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stderr) == (0, "")


def _pytest(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "VOXWATCH_TEST_CHROMIUM": MISSING}
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_a_browser_test_without_chromium_stops_the_run_before_it_starts():
    proc = _pytest("tests/test_web_pages.py", "--collect-only")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    stops = [line for line in (proc.stdout + proc.stderr).splitlines() if MISSING in line]
    assert len(stops) == 1 and "apt-get install chromium chromium-driver" in stops[0]


def test_without_chromium_the_rest_is_selected_as_usual():
    proc = _pytest("tests/test_web_pages.py", "--collect-only", "-m", "not browser")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "test_pages_fit_a_phone_and_a_laptop_in_chromium" not in proc.stdout
    assert "tests collected" in proc.stdout or "selected" in proc.stdout
