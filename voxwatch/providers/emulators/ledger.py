"""What an emulator actually sent, and when, for calibration.

An emulator schedules its sends on the injected truth, but its own event loop can wake late; a
calibration run that wants the error of voxwatch's clocks alone (transit plus the worker's
receive path) compares each arrival stamp with the matching send stamp. Both are on the
machine's monotonic clock (`time.perf_counter_ns`), which every process here shares.

The emulator only appends to a list while it serves: handing records to another thread (a
multiprocessing queue's feeder) at send time would wake that thread, which then holds the GIL
just as the send should happen. The records cross to the calibrating process on request, when
the streams are done.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Mapping

import numpy as np

from voxwatch.foundation.events import CHUNK_SENT, REQUEST_SENT, TEXT_SENT, Timeline
from voxwatch.metrics.as_sent import sent_at_ns
from voxwatch.metrics.stalls import Stalls, playout_stalls
from voxwatch.metrics.timeline import AudioStream


def record(emulator, key: str, what: str, at: int | None = None) -> None:
    """Note that `what` (first_partial, final, first_audio, first_speech, ...) for stream `key` goes out now
    (or happens at `at`, perf_counter ns: a time the emulator worked out, such as a caller's last word).

    Call it immediately before the send: the send writes to the socket before it first yields, and
    a task cancelled inside the send (a client that closes at once) would otherwise lose the record.
    """
    records = getattr(emulator, "ledger", None)
    if records is None:
        return
    records.append((key, what, time.perf_counter_ns() if at is None else at))
    if at is None and not key.startswith(SEEN):  # and once the send has written and yielded: the write happened in between
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        loop.call_soon(lambda: records.append((key, what + AFTER, time.perf_counter_ns())))


AFTER = "@after"
"""The suffix of a send's second record, taken once the sending task yields after its write: the
write went out between the two. On a busy machine the emulator can be descheduled between them, so
the truth as sent is that span, and a measurement inside it is no clock error of voxwatch's."""


SEEN = "seen:"  # the key prefix of what an emulator received (not a send time)


def saw(emulator, what: str, detail: Any) -> None:
    """Note what a scripted agent received (a tool output, a replayed history item, the turn it
    answered), so a test can check it: a record keyed "seen:<what>" with the detail as JSON."""
    record(emulator, SEEN + what, json.dumps(detail, sort_keys=True, default=str))


def seen(records: Mapping[tuple[str, str], int], what: str) -> list[Any]:
    """From a drained ledger, the details noted with `saw(..., what, ...)`, in the order they were noted."""
    found = sorted((t, detail) for (key, detail), t in records.items() if key == SEEN + what)
    return [json.loads(detail) for _, detail in found]


class Ledger:
    """The calibrating side: pass to `serve(..., ledger=Ledger())`, then `drain()` between batches."""

    def __init__(self) -> None:
        self._conn = None  # set by serve(): a pipe to the emulator process

    def drain(self) -> dict[tuple[str, str], int]:
        """Everything recorded since the last drain: (stream key, what) -> send time (ns); the first record wins."""
        if self._conn is None:
            raise RuntimeError("this ledger is not attached to a running emulator")
        self._conn.send("ledger")
        out: dict[tuple[str, str], int] = {}
        for key, what, t in self._conn.recv():
            out.setdefault((key, what), t)
        return out


def truth_as_sent(metric: str, sent: Mapping[str, int], timeline: Timeline, *, speech_start_ms: float = 0.0,
                  speech_end_ms: float = 0.0, leading_silence_ms: float = 0.0, sample_rate: int = 16000) -> float:
    """What `metric` should read for one stream, given when the emulator actually sent (`sent`:
    first_partial, final, first_audio, first_speech -> ns) and the worker's own send stamps.

    The same definitions as metrics/, taken from the sending side: the difference between this and
    the measured value is voxwatch's clock error alone (loopback transit plus the receive path). The
    caller's anchors (ms into its audio as generated, at `sample_rate`) run from the write of the
    chunk that carried them (metrics.as_sent), as the measures do.
    """
    asked = timeline.first(REQUEST_SENT)

    def heard() -> int:  # the playout model: silence plays out before the speech can be heard
        return max(sent["first_speech"], sent["first_audio"] + int(leading_silence_ms * 1e6))

    def written(at_ms: float) -> float:
        return sent_at_ns(timeline, at_ms * sample_rate / 1000, sample_rate)

    if metric == "ttfb_ms":
        return (sent["first_audio"] - asked.t_ns) / 1e6
    if metric == "ttfa_ms":
        return (heard() - asked.t_ns) / 1e6
    if metric == "latency_ms":
        return (sent["final"] - asked.t_ns) / 1e6
    if metric == "first_partial_ms":
        return (sent["first_partial"] - written(speech_start_ms)) / 1e6
    if metric == "ttfs_ms":
        return (sent["final"] - written(speech_end_ms)) / 1e6
    if metric == "v2v_ms":
        return (heard() - written(speech_end_ms)) / 1e6
    raise ValueError(f"no send-side truth for {metric!r}")


def sent_key(chunk: int) -> str:
    """The ledger record of a TTS reply's chunk `chunk` going out (every chunk's, when a scenario injects stalls)."""
    return f"sent:{chunk}"


def stalls_as_sent(sent: Mapping[str, int], chunk_ms: float, onset_chunk: int, after: bool = False) -> Stalls:
    """A reply's playback stalls (metrics.stalls) from the emulator's own send stamps of every chunk
    (`sent`: sent_key(i) -> ns, as a drained ledger holds one stream's; chunks of `chunk_ms`, the onset
    in chunk `onset_chunk`): the truth as sent, which leaves out the emulator's own lateness (a chunk
    it sent late stalls the listener too). `after`: from the stamps taken once each write is done
    (AFTER), the other end of the span in which the write went out."""
    n = sum(1 for what in sent if what.startswith("sent:") and what[5:].isdigit())  # not AFTER's records
    if n == 0 or any(sent_key(i) not in sent for i in range(n)):
        raise ValueError("the ledger lacks some of the reply's chunk sends")
    stamps = [sent.get(sent_key(i) + AFTER, sent[sent_key(i)]) if after else sent[sent_key(i)] for i in range(n)]
    stream = AudioStream(np.zeros(0), 1_000_000, np.array(stamps, dtype=np.int64),
                         np.array([round(i * chunk_ms * 1000) for i in range(n)], dtype=np.int64))
    return playout_stalls(stream, int(stream.chunk_offsets[onset_chunk]))


def stall_error_ms(measured: float, sent: Mapping[str, int], chunk_ms: float, onset_chunk: int) -> float:
    """How far a measured stall total lies outside the totals as sent (from the stamps before the
    writes and from those after them): 0 inside, as truth_as_sent's span is read (benchmarks/rig.py)."""
    low, high = sorted(stalls_as_sent(sent, chunk_ms, onset_chunk, after).total_ms for after in (False, True))
    return measured - min(max(measured, low), high)


CANCEL_ARRIVED = "cancel_arrived"  # the ledger record of a TTS reply's cancel arriving at the emulator
CLEARED = "cleared"  # and of the emulator's acknowledgement of it going out (Deepgram's `Cleared`)


def after_cancel_key(chunk: int) -> str:
    """The ledger record of a TTS reply's chunk `chunk` going out after the reply's cancel arrived."""
    return f"after_cancel:{chunk}"


def streamed_ttfa_as_sent(sent: Mapping[str, int], timeline: Timeline,
                          leading_silence_ms: float) -> tuple[float, float]:
    """A streamed-text reply's TTFA from its first and from its last text piece's write (metrics.text_stream),
    the reply's audible onset as the emulator sent it (truth_as_sent's playout model)."""
    writes = timeline.of(TEXT_SENT)
    first = truth_as_sent("ttfa_ms", sent, timeline, leading_silence_ms=leading_silence_ms)  # REQUEST_SENT: the first write
    return first, first - (writes[-1].t_ns - writes[0].t_ns) / 1e6


def before_and_after(sent: Mapping[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """One stream's records as stamped before each write and as stamped after it (AFTER; a record with
    one stamp in both)."""
    before = {what: t for what, t in sent.items() if not what.endswith(AFTER)}
    return before, {**before, **{what[:-len(AFTER)]: t for what, t in sent.items() if what.endswith(AFTER)}}


def outside_span_ms(measured: float, before: float, after: float) -> float:
    """How far `measured` lies outside the truth as sent, the span between a figure from the stamps
    before the emulator's writes and from those after them (the write went out in between): 0 inside."""
    low, high = sorted((before, after))
    return measured - min(max(measured, low), high)


def cancel_as_sent(sent: Mapping[str, int], cancel_written_ns: int) -> tuple[float | None, str]:
    """A reply's cancel latency (metrics.text_stream.cancel_latency) from the emulator's own send stamps
    (`sent`: one stream's drained records) and the client's write of the cancel: to the last chunk sent
    after the cancel arrived, else to the acknowledgement (CLEARED), else none."""
    after = [t for what, t in sent.items() if what.startswith("after_cancel:") and not what.endswith(AFTER)]
    if after:
        return (max(after) - cancel_written_ns) / 1e6, "audio"
    if CLEARED in sent:
        return (sent[CLEARED] - cancel_written_ns) / 1e6, "ack"
    return None, "none"


def caller_late_ms(metric: str, timeline: Timeline, *, speech_start_ms: float = 0.0, speech_end_ms: float = 0.0,
                   sample_rate: int = 16000) -> float:
    """How much later than on time (the first chunk's write plus the anchor) the caller's anchor of
    `metric` (ms into its audio as generated) went out (metrics.as_sent); zero when the pacer kept
    every chunk up to it on time, and for a metric not timed from the caller's words. An emulator
    schedules from its first chunk's arrival plus the clip's anchor, so a measure from the anchor's
    write reads that much less than the emulator's setting."""
    at_ms = {"first_partial_ms": speech_start_ms, "ttfs_ms": speech_end_ms, "v2v_ms": speech_end_ms}.get(metric)
    if at_ms is None:
        return 0.0
    first = timeline.first(CHUNK_SENT)
    return (sent_at_ns(timeline, at_ms * sample_rate / 1000, sample_rate) - first.t_ns) / 1e6 - at_ms
