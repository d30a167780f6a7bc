"""Worker and beat as docker-compose.yml runs them: beat's first tick goes out when it starts (not at
the next slot, up to every_minutes later), and both keep the heartbeat files their health checks
read. Real processes on the real Redis and store (test_distributed's broker and store fixtures)."""

from __future__ import annotations

import pytest
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from test_distributed import LIMITS, broker, store, worker_env  # noqa: F401 - fixtures used by name
from voxwatch.foundation.observation import RunRecord
from voxwatch.store import open_store
from voxwatch.workers import heartbeat
from support.voxwatch_process import Voxwatch

pytestmark = pytest.mark.e2e

DAY_MINUTES = "1440"  # the next slot is the next UTC midnight: without the first tick, nothing for hours


def _health(path: Path, within: int) -> subprocess.CompletedProcess:
    """The compose health check's command."""
    return subprocess.run([sys.executable, "-m", "voxwatch.workers.heartbeat", str(path), "--within", str(within)],
                          capture_output=True, text=True, timeout=30)


def _first_run(store_url: str, region: str, timeout: float = 240) -> RunRecord:
    deadline = time.monotonic() + timeout
    while True:
        store = open_store(store_url)
        try:
            run = next((r for r in store.runs() if r.region == region and r.status != "running"), None)
        finally:
            store.close()
        if run is not None:
            return run
        assert time.monotonic() < deadline, f"no run of region {region} finished within {timeout} s"
        time.sleep(0.5)


def _wait_touched(path: Path, after: float, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists() or path.stat().st_mtime <= after:
        assert time.monotonic() < deadline, f"{path} not touched after {after}"
        time.sleep(0.2)


def test_beat_sends_the_first_tick_at_start_and_worker_and_beat_keep_their_heartbeats(broker, store, tmp_path):
    region = f"first-{uuid.uuid4().hex[:6]}"
    env = worker_env(broker, store, tmp_path / "var", LIMITS) | {
        "VOXWATCH_WORKER_REGION": region, "VOXWATCH_SCHEDULE_EVERY_MINUTES": DAY_MINUTES, "VOXWATCH_RUN_SAMPLE_SIZE": "1",
        "VOXWATCH_RUN_PANEL_SIZE": "0",
        "VOXWATCH_BOARDS_STT_MODELS": "", "VOXWATCH_BOARDS_S2S_CONVERSATION_MODELS": ""}  # one TTS model, one prompt
    worker_beat, beat_beat = tmp_path / "worker.alive", tmp_path / "beat.alive"
    schedule = tmp_path / "celerybeat-schedule"
    assert _health(worker_beat, 60).returncode == 1  # nothing started: no heartbeat
    worker = Voxwatch(["worker", "--heartbeat-file", str(worker_beat)], env, tmp_path / "worker.log", "worker")
    beat = None
    try:
        worker.wait_for(" ready.", timeout=120)
        started = time.time()
        beat = Voxwatch(["beat", "--schedule-file", str(schedule), "--heartbeat-file", str(beat_beat)], env,
                        tmp_path / "beat.log", "beat")
        run = _first_run(store, region)
        # sent when beat started, not at the next UTC midnight
        assert run.started_at - started < 180 and run.status == "succeeded" and run.rows >= 1, run
        assert f"tts tts-prompts @{region} (voxwatch.plan)" in beat.text()
        for path, within in ((worker_beat, 30), (beat_beat, 90)):
            check = _health(path, within)
            assert check.returncode == 0 and check.stdout.startswith("alive:"), (check.stdout, check.stderr)

        # the worker keeps touching its file while it runs, and stops while it is frozen
        _wait_touched(worker_beat, worker_beat.stat().st_mtime)
        os.killpg(worker.proc.pid, signal.SIGSTOP)
        try:
            frozen_at = worker_beat.stat().st_mtime
            time.sleep(3 * heartbeat.WORKER_EVERY_S)
            assert worker_beat.stat().st_mtime == frozen_at
            check = _health(worker_beat, 2 * heartbeat.WORKER_EVERY_S)
            assert check.returncode == 1 and check.stderr.startswith("stale:"), check.stderr
        finally:
            os.killpg(worker.proc.pid, signal.SIGCONT)
        _wait_touched(worker_beat, frozen_at)
        assert _health(worker_beat, 30).returncode == 0

        # beat restarted within the slot sends none of the plans it has sent (the schedule file has them)
        beat.stop()
        restarted_at = time.time()
        beat = Voxwatch(["beat", "--schedule-file", str(schedule), "--heartbeat-file", str(beat_beat)], env,
                        tmp_path / "beat-again.log", "beat again")
        _wait_touched(beat_beat, restarted_at)  # its first pass is over
        assert "(voxwatch.plan)" not in beat.text(), beat.text()
    finally:
        for process in (beat, worker):
            if process is not None:
                process.stop()


def test_every_entry_beat_has_never_sent_is_due_at_once_and_a_sent_one_waits_for_its_slot():
    from datetime import datetime, timezone

    from voxwatch.config import load
    from voxwatch.workers.schedule import NEVER, beat_schedule

    entries = beat_schedule(load(environ={}))
    assert entries and all(e["last_run_at"] == NEVER for e in entries.values())
    for entry in entries.values():
        due, _ = entry["schedule"].is_due(NEVER)
        assert due, entry
        due, wait = entry["schedule"].is_due(datetime.now(timezone.utc))  # just sent: the next slot
        assert not due and wait > 0, entry
