"""One loaded engine per process: a model or library loaded once and shared by every caller."""

from __future__ import annotations

import threading
from typing import ClassVar, Self


class OnePerProcess:
    """A class whose `get()` makes its one instance on first use (`load()`, under a lock, so concurrent
    first callers load it once) and hands that instance to every later caller."""

    _instance: ClassVar[object | None] = None
    _create_lock: ClassVar[threading.Lock]

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls._instance, cls._create_lock = None, threading.Lock()  # each engine its own

    @classmethod
    def load(cls) -> Self:
        """The instance `get` keeps: the class's own defaults unless a subclass says otherwise."""
        return cls()

    @classmethod
    def get(cls) -> Self:
        with cls._create_lock:
            if cls._instance is None:
                cls._instance = cls.load()
            return cls._instance
