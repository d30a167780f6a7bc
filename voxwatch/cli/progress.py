"""Progress of a long command: a tqdm bar on standard error (as `voxwatch run` has always shown),
never on standard output, where the data goes. Shown when standard error is a terminal, or as
--progress / --no-progress say."""

from __future__ import annotations

import argparse
import sys

from tqdm import tqdm


def add_progress(p: argparse.ArgumentParser) -> None:
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="show a progress bar on standard error, or not (default: when standard error is a terminal)")


def wanted(args: argparse.Namespace) -> bool:
    return sys.stderr.isatty() if args.progress is None else args.progress


class Progress:
    """A bar counting `unit`s; call it with (done, total) or `advance` it. A context manager: closed after."""

    def __init__(self, desc: str, unit: str, enabled: bool, total: int | None = None) -> None:
        self._bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not enabled)

    def __call__(self, done: int, total: int | None = None) -> None:
        if total is not None and self._bar.total != total:
            self._bar.total = total
        self._bar.update(done - self._bar.n)

    def advance(self, n: int = 1) -> None:
        self._bar.update(n)

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self._bar.close()
