"""An import stopped by a signal leaves nothing half-written (issue #30, X2): SIGTERM cleans the
staging folder as Ctrl-C does and says so in one line (exit 143), and an import killed outright
(SIGKILL: nothing runs) leaves a staging folder that the next import of that name removes, never one
a live import holds (one import of a name at a time, by its lock) nor another name's.

Each import is a real `voxwatch datasets import` subprocess of the 64 bundled starter clips with
`--degrade all` (a few seconds of work at least), stopped once its staging folder holds clips.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import time
from pathlib import Path

import pytest

from support.voxwatch_process import Voxwatch
from voxwatch.datasets.catalog import bundled_root
from voxwatch.datasets.manifest import Clip, read_records

STARTER = bundled_root() / "stt-starter-clean"
STAGING = re.compile(r"\.mine-[a-z0-9_]{8}")

pytestmark = pytest.mark.faults


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A user's folder of the starter clips and its manifest."""
    folder = tmp_path / "mine"
    folder.mkdir()
    lines = []
    for clip in read_records(STARTER / "manifest.jsonl", Clip):
        shutil.copyfile(STARTER / clip.path, folder / f"{clip.id}.wav")
        lines.append({"id": clip.id, "path": f"{clip.id}.wav", "text": clip.text})
    (folder / "manifest.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


def _import(source: Path, catalog: Path, log: Path) -> Voxwatch:
    return Voxwatch(["datasets", "import", str(source), "--name", "mine", "--degrade", "all"],
                    {"VOXWATCH_DATASETS_DIR": str(catalog)}, log, "voxwatch datasets import")


def _staging(catalog: Path) -> list[Path]:
    return [p for p in catalog.iterdir() if STAGING.fullmatch(p.name)] if catalog.is_dir() else []


def _mid_way(proc: Voxwatch, catalog: Path, timeout: float = 300) -> Path:
    """The import's staging folder, once it holds a converted clip (the import is then mid-way)."""
    deadline = time.monotonic() + timeout
    while True:
        held = [s for s in _staging(catalog) if any(s.glob("*/clips/*.wav"))]
        if held:
            return held[0]
        assert proc.proc.poll() is None, f"the import ended before it was stopped:\n{proc.text()}"
        assert time.monotonic() < deadline, f"no clip staged in {timeout} s:\n{proc.text()}"
        time.sleep(0.05)


def _datasets(catalog: Path) -> list[str]:
    return sorted(p.name for p in catalog.iterdir() if not p.name.startswith("."))


def test_sigterm_mid_import_removes_its_staging_and_says_so(source, tmp_path):
    catalog = tmp_path / "catalog"
    proc = _import(source, catalog, tmp_path / "import.log")
    _mid_way(proc, catalog)
    proc.proc.send_signal(signal.SIGTERM)
    assert proc.proc.wait(120) == 143, proc.text()
    said = proc.text()
    assert "Traceback" not in said and said.strip().splitlines()[-1] == \
        f"voxwatch: terminated (SIGTERM); nothing was imported into {catalog}", said
    assert _staging(catalog) == [] and _datasets(catalog) == [], sorted(os.listdir(catalog))


def test_an_import_removes_the_staging_a_killed_import_of_its_name_left(source, tmp_path):
    catalog = tmp_path / "catalog"
    killed = _import(source, catalog, tmp_path / "killed.log")
    stale = _mid_way(killed, catalog)
    killed.kill()  # SIGKILL: nothing of it runs, the staging folder stays
    assert stale.is_dir()
    other = catalog / ".mine2-abcdefgh"  # another name's staging (an import of mine2 may hold it)
    other.mkdir()
    again = _import(source, catalog, tmp_path / "again.log")
    assert again.proc.wait(600) == 0, again.text()
    assert not stale.exists() and _staging(catalog) == [], sorted(os.listdir(catalog))
    assert other.is_dir()  # not this name's: left alone
    assert "mine" in _datasets(catalog) and "mine-noise" in _datasets(catalog)


def test_a_second_import_of_a_name_leaves_the_live_ones_staging_alone(source, tmp_path):
    catalog = tmp_path / "catalog"
    live = _import(source, catalog, tmp_path / "live.log")
    try:
        held = _mid_way(live, catalog)
        second = _import(source, catalog, tmp_path / "second.log")
        assert second.proc.wait(120) == 2, second.text()
        said = second.text().strip()
        assert said == f"voxwatch: error: another import of 'mine' into {catalog} is running; wait for it to finish", said
        assert held.is_dir() and live.proc.poll() is None  # the live import's folder is untouched
        assert live.proc.wait(600) == 0, live.text()  # and it completes
        assert _staging(catalog) == [] and "mine-noise" in _datasets(catalog)
    finally:
        live.stop()
