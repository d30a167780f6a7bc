"""Where a peer benchmark comes from: the commit its files are at, and a bare git mirror read as published.

A peer benchmark is imported with the commit it was published at, so a scenario names the
peer's exact files. PATH may be an exported folder (the commit is then given with --commit), a
clone (`git rev-parse HEAD`), or a bare mirror: its HEAD's files are exported with `git archive`
into a temporary folder, nothing of the mirror changed.
"""

from __future__ import annotations

import io
import re
import subprocess
import tarfile
from pathlib import Path

from voxwatch.conversations.peer_literals import PeerFileError

COMMIT = re.compile(r"^[0-9a-f]{40}$")
BENCHMARK = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$")
GIT_TIMEOUT_S = 120


def _git(args: list[str]) -> bytes | None:
    try:
        done = subprocess.run(["git", *args], capture_output=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def is_bare(path: Path) -> bool:
    return (path / "HEAD").is_file() and (path / "objects").is_dir() and not (path / "benchmarks").exists()


def commit_of(path: Path, given: str | None) -> str:
    """--commit when given (40 lower-case hex digits), else the clone's or mirror's HEAD."""
    if given is not None:
        if not COMMIT.match(given):
            raise PeerFileError(f"--commit {given!r}: expected the 40 hex digits of the peer's commit")
        return given
    top = _git(["-C", str(path), "rev-parse", "--show-toplevel"])
    bare = is_bare(path)
    if not bare and (top is None or Path(top.decode().strip()).resolve() != path.resolve()):
        head = None  # not a clone's top (a folder inside another repository has that repository's HEAD)
    else:
        head = _git(["-C", str(path), "rev-parse", "HEAD"])
    if head is None or not COMMIT.match(head.decode().strip()):
        raise PeerFileError(f"{path}: not a git checkout, so its commit is unknown; pass --commit (the peer's "
                            "commit these files were exported from)")
    return head.decode().strip()


def export_bare(mirror: Path, commit: str, benchmark: str, dest: Path) -> Path:
    """The commit's benchmarks/_shared, benchmarks/<benchmark> and licence files, extracted into dest."""
    if not BENCHMARK.match(benchmark):
        raise PeerFileError(f"--benchmark {benchmark!r}: expected a folder name of benchmarks/")
    listed = _git(["--git-dir", str(mirror), "ls-tree", "--name-only", commit])
    if listed is None:
        raise PeerFileError(f"{mirror}: cannot list commit {commit[:12]} of this mirror")
    top = set(listed.decode().split("\n"))
    wanted = ["benchmarks/_shared", f"benchmarks/{benchmark}"] + sorted(
        top & {"README.md", "LICENSE", "LICENSE.md", "LICENSE.txt"})
    archive = _git(["--git-dir", str(mirror), "archive", "--format=tar", commit, *wanted])
    if archive is None:
        raise PeerFileError(f"{mirror}: commit {commit[:12]} has no benchmarks/_shared or benchmarks/{benchmark}")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    return dest
