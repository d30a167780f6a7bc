"""Timestamped events: the only thing an adapter reports.

Adapters stamp events through an injected clock (the worker's monotonic clock by default) and
compute nothing; voxwatch.metrics turns a timeline into numbers, identically for every vendor.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

Clock = Callable[[], int]
"""Returns nanoseconds on a monotonic clock."""

CONNECT_START = "connect_start"
CONNECTED = "connected"
CHUNK_SENT = "chunk_sent"
REQUEST_SENT = "request_sent"
PARTIAL = "partial"
FINAL = "final"
AUDIO = "audio"
RESPONSE = "response"
CLOSED = "closed"


@dataclass(frozen=True)
class Event:
    kind: str
    t_ns: int
    text: str | None = None
    sample_offset: int | None = None
    n_samples: int | None = None
    sample_rate: int | None = None
    audio: bytes | None = None  # little-endian int16 PCM for AUDIO events
    deadline_ns: int | None = None  # CHUNK_SENT: when the pacer meant to write it
    http_version: str | None = None  # RESPONSE over HTTP: "HTTP/1.1", "HTTP/2"
    connection_reused: bool | None = None  # RESPONSE over HTTP: False when the request opened a connection


@dataclass
class Timeline:
    """An append-only list of events; safe to append from an engine thread."""

    clock: Clock = time.perf_counter_ns
    events: list[Event] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def mark(self, kind: str, at_ns: int | None = None, **data) -> Event:
        """Record an event now, or at `at_ns` on this timeline's clock (a socket arrival stamp)."""
        event = Event(kind=kind, t_ns=self.clock() if at_ns is None else at_ns, **data)
        with self._lock:
            self.events.append(event)
        return event

    def of(self, kind: str) -> list[Event]:
        with self._lock:
            return [e for e in self.events if e.kind == kind]

    def first(self, kind: str) -> Event | None:
        found = self.of(kind)
        return found[0] if found else None
