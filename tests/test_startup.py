"""scipy is imported where first needed, so a one-shot command starts fast; the processes that serve
or measure import it before their first page or measurement (voxwatch/foundation/preload.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from support.processes import REPO

pytestmark = pytest.mark.e2e

LOADED = "import json, sys; print(json.dumps(sorted(m for m in ('scipy.stats', 'scipy.signal') if m in sys.modules)))"


def _loaded(setup: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", f"{setup}\n{LOADED}"], cwd=REPO, capture_output=True, text=True,
                         timeout=120, env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_cli_starts_without_scipy():
    assert _loaded("import voxwatch.cli") == []


@pytest.mark.parametrize("setup", [
    "import tempfile; from voxwatch.web.app import create_app; create_app(f'sqlite:///{tempfile.mkdtemp()}/s.sqlite')",
    "from voxwatch.config import load; from voxwatch.workers.process_state import ProcessState; ProcessState(load(environ={}))",
], ids=["web app", "worker process"])
def test_a_process_that_serves_or_measures_imports_it_before_it_starts(setup: str):
    assert _loaded(setup) == ["scipy.signal", "scipy.stats"]
