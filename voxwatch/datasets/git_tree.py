"""The files of one commit of a git repository, read without a network from its git directory (a bare mirror)
or from an exported copy of its tree: how the recorded starter's recipe reads a repository source."""

from __future__ import annotations

import subprocess
from pathlib import Path


class TreeError(ValueError):
    """A repository copy that lacks a file, or is neither a git directory nor an exported tree."""


class GitTree:
    """Files of `commit`: `git show commit:path` in a git directory, else the path under an exported tree."""

    def __init__(self, where: Path, commit: str) -> None:
        self.where, self.commit = where, commit
        self.is_git = (where / "HEAD").is_file() and (where / "objects").is_dir()
        if not self.is_git and not where.is_dir():
            raise TreeError(f"{where}: missing, neither a git directory nor an exported tree")

    def read(self, path: str) -> bytes:
        if not self.is_git:
            try:
                return (self.where / path).read_bytes()
            except OSError:
                raise TreeError(f"{self.where / path}: missing from the exported tree") from None
        done = subprocess.run(["git", "--git-dir", str(self.where), "show", f"{self.commit}:{path}"],
                              capture_output=True)
        if done.returncode:
            raise TreeError(f"{self.commit}:{path}: not readable from {self.where}")
        return done.stdout
