"""SIGTERM as an interruption, as Ctrl-C is: the process unwinds (its `finally` blocks run, so an
import's staging folder is removed) instead of dying where it stands. The CLI says so in one line
and exits 128 + SIGTERM (143), as a shell reports a process a SIGTERM ended."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

EXIT_CODE = 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):
    """Raised in the main thread by SIGTERM (handlers `except KeyboardInterrupt` catch it too)."""


def raise_terminated(signum, frame) -> None:
    raise Terminated


@contextmanager
def terminable() -> Iterator[None]:
    """Inside the block SIGTERM raises Terminated; the handler before is put back after. Only the main
    thread can set a handler: elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)
