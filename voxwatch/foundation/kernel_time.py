"""The kernel's own times of a TCP socket's reads and writes, where the platform gives them cheaply
(Linux: `SO_TIMESTAMPNS` on receive, `SO_TIMESTAMPING` on send), on the timelines' monotonic clock.

A user-space stamp is taken when the worker gets round to it; on a busy machine the process may not
be running when the bytes arrive, or may be descheduled between its write and the stamp after it,
and the stamp then carries its own stall. The kernel stamps a segment as it arrives, and a write as
it hands the bytes to the device, whether or not the process is running.

- **Receive**: read from the ancillary data of the `recvmsg` that replaces the transport socket's
  `recv` (plain TCP and TLS alike: asyncio's TLS sits above the same TCP socket). A read returns
  the time of the last segment it holds (the kernel keeps only the latest when segments queue up),
  so it is exact for the last bytes of a read, and for all of them when the read holds one segment:
  the count of data segments received (TCP_INFO's tcpi_data_segs_in) says how many came since the
  read before.
- **Send**: each `send` is numbered by the offset of its last byte (SOF_TIMESTAMPING_OPT_ID), and the
  kernel reports its time on the socket's error queue, drained on every read and when a timeline
  settles (`Sent.settle`).
"""

from __future__ import annotations

import socket
import struct
import sys
import time
import weakref
from typing import Any, Callable

from voxwatch.foundation.clock import watch
from voxwatch.foundation.events import Stamp

LINUX = sys.platform.startswith("linux")
SO_TIMESTAMPNS: int | None = getattr(socket, "SO_TIMESTAMPNS", 35 if LINUX else None)
SO_TIMESTAMPING: int | None = getattr(socket, "SO_TIMESTAMPING", 37 if LINUX else None)
_TX_FLAGS = (1 << 1) | (1 << 4) | (1 << 7) | (1 << 11)  # TX_SOFTWARE | SOFTWARE | OPT_ID | OPT_TSONLY
_IP_RECVERR, _IPV6_RECVERR = 11, 25
_EXTENDED_ERR = struct.Struct("IBBBBII")  # struct sock_extended_err: ee_data (the send's id) is last
_ORIGIN_TIMESTAMPING = 4
_TIMESPEC = struct.Struct("qq")
_ANCILLARY = 256 if hasattr(socket, "CMSG_SPACE") else 0
AVAILABLE = SO_TIMESTAMPNS is not None and bool(_ANCILLARY) and hasattr(socket, "TCP_INFO")
"""Whether this platform stamps TCP reads in the kernel (the harness then lets the loop sleep in it)."""
_DATA_SEGS_IN = 152  # struct tcp_info: u32 tcpi_data_segs_in (Linux 4.6 and later)
_TCP_INFO_SIZE = _DATA_SEGS_IN + 4


def _monotonic(data: bytes) -> int:
    """A kernel timespec (CLOCK_REALTIME) on the monotonic clock every timeline uses (perf_counter_ns)."""
    seconds, nanoseconds = _TIMESPEC.unpack_from(data)
    return seconds * 1_000_000_000 + nanoseconds - (time.time_ns() - time.perf_counter_ns())


class Sent:
    """One write's kernel time, once the kernel has reported it (`ns`, perf_counter ns; None until then)."""

    __slots__ = ("ns", "_socket")

    def __init__(self, sock: socket.socket) -> None:
        self.ns: int | None = None
        self._socket = weakref.ref(sock)

    def settle(self) -> int | None:
        """The kernel's time of the write, reading what the socket's error queue holds first."""
        sock = self._socket()
        if self.ns is None and sock is not None and sock.fileno() >= 0:
            _drain_sends(sock)
        return self.ns


class Kept:
    """What a socket's kernel stamps said: its latest read's last segment (perf_counter ns) and how
    many data segments came since the read before (None where the kernel does not say); the bytes
    sent so far and the writes waiting for their time."""

    __slots__ = ("ns", "segments", "_total", "written", "sends")

    def __init__(self) -> None:
        self.ns: int | None = None
        self.segments: int | None = None
        self._total: int | None = None
        self.written = 0
        self.sends: dict[int, Sent] = {}

    def count(self, total: int | None) -> None:
        self.segments = None if total is None or self._total is None else total - self._total
        self._total = total


_kept: weakref.WeakKeyDictionary[socket.socket, Kept] = weakref.WeakKeyDictionary()


def _state(sock: socket.socket) -> Kept:
    kept = _kept.get(sock)
    if kept is None:
        kept = _kept[sock] = Kept()
    return kept


def _segments_in(sock: socket.socket) -> int | None:
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_SIZE)
    except (OSError, AttributeError):
        return None
    return struct.unpack_from("I", info, _DATA_SEGS_IN)[0] if len(info) >= _TCP_INFO_SIZE else None


def _note(sock: socket.socket, ancillary: list[tuple[int, int, bytes]]) -> None:
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
            kept = _state(sock)
            kept.ns = _monotonic(data)
            kept.count(_segments_in(sock))


def _drain_sends(sock: socket.socket) -> None:
    """Read the send times the kernel left on the socket's error queue into the writes waiting for them."""
    kept = _kept.get(sock)
    while True:
        try:
            _, ancillary, _, _ = socket.socket.recvmsg(sock, 0, _ANCILLARY, socket.MSG_ERRQUEUE)
        except (BlockingIOError, InterruptedError, OSError):
            return
        at, key = None, None
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPING and len(data) >= _TIMESPEC.size:
                at = _monotonic(data)  # the software stamp: the first of the three timespecs
            elif (level, kind) in ((socket.IPPROTO_IP, _IP_RECVERR), (socket.IPPROTO_IPV6, _IPV6_RECVERR)) \
                    and len(data) >= _EXTENDED_ERR.size:
                fields = _EXTENDED_ERR.unpack_from(data)
                if fields[1] == _ORIGIN_TIMESTAMPING:
                    key = fields[6]
        sent = kept.sends.pop(key, None) if kept is not None and key is not None else None
        if sent is not None and at is not None:
            sent.ns = at


class _KernelStamped(socket.socket):
    """A socket whose reads keep the kernel's receive time and whose writes are numbered for the
    kernel's send time (the transport's `recv`, `recv_into` and `send`)."""

    __slots__ = ()

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        _drain_sends(self)  # an error queue left unread would wake the loop's select over and over
        data, ancillary, _, _ = self.recvmsg(bufsize, _ANCILLARY, flags)
        _note(self, ancillary)
        return data

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        _drain_sends(self)
        view = memoryview(buffer)
        got, ancillary, _, _ = self.recvmsg_into([view[:nbytes] if nbytes else view], _ANCILLARY, flags)
        _note(self, ancillary)
        return got

    def send(self, data: Any, flags: int = 0) -> int:
        sent = super().send(data, flags)
        _state(self).written += sent
        return sent


def _raw_socket(transport: Any) -> socket.socket | None:
    found = transport.get_extra_info("socket") if transport is not None else None
    raw = getattr(found, "_sock", found)  # asyncio hands out a TransportSocket around the real one
    return raw if type(raw) in (socket.socket, _KernelStamped) else None


def enable(transport: Any) -> bool:
    """Have the transport's TCP socket keep the kernel's times of its reads and writes; whether it does."""
    raw = _raw_socket(transport)
    if raw is None or not AVAILABLE or raw.type != socket.SOCK_STREAM:
        return False
    if type(raw) is socket.socket:
        try:
            raw.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        except OSError:
            return False
        try:  # the send times, where the kernel numbers writes (a failure leaves sends on the worker's clock)
            if SO_TIMESTAMPING is not None:
                raw.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPING, _TX_FLAGS)
                _state(raw).written = 0  # the kernel numbers the bytes from here
        except OSError:
            pass
        raw.__class__ = _KernelStamped  # the same object: the transport's reads and writes now go through it
    return True


def received(transport: Any) -> Kept | None:
    """The kernel's stamps of the transport's socket, if kept."""
    raw = _raw_socket(transport)
    return _kept.get(raw) if raw is not None else None


def read_stamp(transport: Any, clock: Callable[[], int], last: bool = False) -> Stamp:
    """The stamp of the read a protocol's `data_received` is handling now: the kernel's receive time
    where the socket keeps it (on the default clock), else the clock now; with how long before it the
    worker could not observe (clock.watch). A kernel stamp is exact for the read's last bytes (`last`:
    what is stamped ends the read) and for every byte of a read of one segment: it is then not blind."""
    now = clock()
    kernel = received(transport) if clock is time.perf_counter_ns else None
    if kernel is not None and kernel.ns is not None and kernel.ns <= now:
        exact = last or kernel.segments is not None and kernel.segments <= 1
        return Stamp(kernel.ns, 0 if exact else watch.blind_ns(kernel.ns), "kernel")
    return Stamp(now, watch.blind_ns(now), "user")


def write_stamp(transport: Any, before_ns: int, after_ns: int) -> Stamp:
    """The stamp of a write the transport just made (taken before and after it: blind for as long as it
    took), with the kernel's send time to come where the socket numbers its writes and the transport
    sent all of it at once (`Stamp.sent`: `Timeline.settle` puts it in)."""
    raw = _raw_socket(transport)
    kept = _kept.get(raw) if type(raw) is _KernelStamped else None
    sent = None
    if kept is not None and kept.written and not transport.get_write_buffer_size():
        sent = kept.sends[kept.written - 1] = Sent(raw)
    return Stamp(after_ns, blind_ns=after_ns - before_ns, sent=sent)
