"""Timestamped events: the only thing an adapter reports.

Adapters stamp events through an injected clock (the worker's monotonic clock by default) and
compute nothing; voxwatch.metrics turns a timeline into numbers, identically for every vendor.
"""

from __future__ import annotations

import contextvars
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

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
CLEARED = "cleared"  # a deployed agent dropped the audio it had queued (Twilio Media Streams `clear`)
END_OF_TURN = "end_of_turn"  # a streaming STT's own end-of-turn (or end-of-utterance) message, not one voxwatch forced
TEXT_SENT = "text_sent"  # a TTS adapter wrote one piece of streamed text (METHOD "TTS: streamed text and cancel")
CANCEL_SENT = "cancel_sent"  # a TTS adapter wrote the vendor's cancel of the reply under way
CANCEL_ACK = "cancel_ack"  # the vendor acknowledged that cancel (Deepgram's `Cleared`)


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
    blind_ns: int | None = None  # how long before this stamp the worker could not observe (clock.watch); None: unknown
    stamp: str | None = None  # which clock took it: "kernel" (the socket's receive or send time) or "user" (the worker's)
    sent: Any = field(default=None, repr=False, compare=False)  # a write's kernel send time to come (Timeline.settle)


socket_writes: contextvars.ContextVar[list["Stamp"] | None] = contextvars.ContextVar("socket_writes", default=None)
"""Where a stamped connection notes each socket write the current task makes (a Stamp taken as the
write returns, blind for as long as the write took), for a sender that wants when its bytes went out
(the pacer) rather than when its whole send coroutine returned."""


class Stamp(int):
    """A clock reading (ns) that knows how it was taken: by the kernel or the worker (`source`), and
    how long before it the worker could not observe (`blind_ns`, voxwatch.foundation.clock.watch).
    An int, so every adapter passes it on to `Timeline.mark(..., at_ns=...)` unchanged."""

    blind_ns: int | None
    source: str
    sent: Any  # a write's kernel send time to come (foundation.kernel_time.Sent), or None

    def __new__(cls, ns: int, blind_ns: int | None = None, source: str = "user", sent: Any = None) -> "Stamp":
        stamp = int.__new__(cls, ns)
        stamp.blind_ns, stamp.source, stamp.sent = blind_ns, source, sent
        return stamp


@dataclass
class Timeline:
    """An append-only list of events; safe to append from an engine thread."""

    clock: Clock = time.perf_counter_ns
    events: list[Event] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def mark(self, kind: str, at_ns: int | None = None, **data) -> Event:
        """Record an event now, or at `at_ns` on this timeline's clock (a socket arrival stamp: a Stamp
        brings its source and blind time along)."""
        if isinstance(at_ns, Stamp):
            data = {"blind_ns": at_ns.blind_ns, "stamp": at_ns.source, "sent": at_ns.sent, **data}
            at_ns = int(at_ns)
        event = Event(kind=kind, t_ns=self.clock() if at_ns is None else at_ns, **data)
        with self._lock:
            self.events.append(event)
        return event

    def settle(self) -> None:
        """Put the kernel's send time into each write event that has one coming (foundation.kernel_time:
        read off the socket's error queue), not blind: call it once the timed part is over, before the
        connection closes."""
        with self._lock:
            for i, event in enumerate(self.events):
                if event.sent is not None:
                    at = event.sent.settle()
                    self.events[i] = replace(event, sent=None, **({} if at is None else
                                                                  {"t_ns": at, "blind_ns": 0, "stamp": "kernel"}))

    def of(self, kind: str) -> list[Event]:
        with self._lock:
            return [e for e in self.events if e.kind == kind]

    def first(self, kind: str) -> Event | None:
        found = self.of(kind)
        return found[0] if found else None
