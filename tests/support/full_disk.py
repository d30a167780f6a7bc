"""A full disk for a test: a small tmpfs mounted on a folder and filled to its last byte (the tests
run as root; where mounting is not allowed, the test is skipped and says why)."""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path
from typing import Iterator

import pytest


@contextlib.contextmanager
def full_disk(mount: Path, folders: tuple[str, ...] = ()) -> Iterator[Path]:
    """`mount` on a 64 KiB tmpfs, with these empty folders made in it, then filled up (no byte left:
    a write fails with ENOSPC); unmounted afterwards."""
    mount.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], check=True,
                       capture_output=True, timeout=30)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot mount a tmpfs to fill ({exc}): run as root, or with CAP_SYS_ADMIN")
    try:
        for folder in folders:
            (mount / folder).mkdir(parents=True)
        with contextlib.suppress(OSError), (mount / "filler").open("wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
        with pytest.raises(OSError):  # the disk is full: nothing more fits
            (mount / "probe").write_bytes(b"\0" * 4096)
        (mount / "probe").unlink(missing_ok=True)
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, timeout=30)
