"""Running voxwatch as a user does: the CLI in a subprocess, from the repository, with none of the
caller's VOXWATCH_ settings leaking in."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            check: bool = True) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("VOXWATCH_")}
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "voxwatch.cli", *args], cwd=cwd or REPO, env=full_env,
                          capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"voxwatch {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc
