"""Running voxwatch as a user does: the CLI in a subprocess, from the repository, with none of the
caller's VOXWATCH_ settings leaking in."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


BOUND_VARIABLE = "VOXWATCH_RUN_STALL_BOUND_MS"
UNBOUNDED_MS = 60_000.0
"""The clock witness's bound in the suite's processes (conftest.witness_off_but_where_tested): a CLI a
test starts keeps it, though it gets no other VOXWATCH_* variable of the developer's."""


def kept_env() -> dict[str, str]:
    """This process's environment for a voxwatch process a test starts: no VOXWATCH_* variable of the
    developer's, but the suite's clock witness bound."""
    return {k: v for k, v in os.environ.items() if not k.startswith("VOXWATCH_") or k == BOUND_VARIABLE}


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            check: bool = True, max_file_bytes: int | None = None) -> subprocess.CompletedProcess:
    """`max_file_bytes`: RLIMIT_FSIZE of the CLI, so a test of bounded disk fails at that bound (a
    write past it is EFBIG) rather than filling the disk."""
    full_env = kept_env()
    full_env.update(env or {})
    limit = None if max_file_bytes is None else (
        lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, resource.getrlimit(resource.RLIMIT_FSIZE)[1])))
    proc = subprocess.run([sys.executable, "-m", "voxwatch.cli", *args], cwd=cwd or REPO, env=full_env,
                          capture_output=True, text=True, timeout=600, preexec_fn=limit)
    if check and proc.returncode != 0:
        raise AssertionError(f"voxwatch {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def cli_in_process(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`voxwatch ARGS` run by voxwatch.cli.main in this process, with run_cli's environment (no
    VOXWATCH_ variable but those given) and working folder: its exit code, stdout and stderr, for
    the many read-only calls a test makes where an interpreter's start each (about a second of CPU)
    is most of the cost. A command's own process behaviour (signals, pipes, exit) stays run_cli's."""
    import contextlib
    import io

    from voxwatch.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = dict(os.environ)
    try:
        for name in [k for k in os.environ if k.startswith("VOXWATCH_") and k != BOUND_VARIABLE]:
            del os.environ[name]
        os.environ.update(env or {})
        with contextlib.chdir(REPO), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse's refusals
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return subprocess.CompletedProcess(["voxwatch", *args], code, out.getvalue(), err.getvalue())
