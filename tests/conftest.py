"""Shared fixtures: the CLI run as a user runs it, in a subprocess, against a throwaway store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            check: bool = True) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("VOXWATCH_")}
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "voxwatch.cli", *args], cwd=cwd or REPO, env=full_env,
                          capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"voxwatch {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'voxwatch.sqlite'}"


def tone(sample_rate: int, onset_s: float, duration_s: float, total_s: float, freq: float = 220.0,
         amplitude: float = 0.3) -> np.ndarray:
    """Silence, then a sine that starts sharply at onset_s."""
    x = np.zeros(int(round(total_s * sample_rate)))
    start = int(round(onset_s * sample_rate))
    n = int(round(duration_s * sample_rate))
    t = np.arange(n) / sample_rate
    x[start:start + n] = amplitude * np.sin(2 * np.pi * freq * t)
    return x
