"""File integrity: the one sha256 helper behind manifest checks and model-weight checks."""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class ModelIntegrityError(RuntimeError):
    """Model weights whose sha256 is not the one the code was validated with."""


def verified(path: Path, expected_sha256: str) -> Path:
    """The path, once its file's sha256 is the expected one (ModelIntegrityError in one line otherwise)."""
    actual = file_sha256(path)
    if actual != expected_sha256:
        raise ModelIntegrityError(f"{path}: sha256 {actual} does not match {expected_sha256}")
    return path
