"""pocketsphinx as a streaming STT provider: partial hypotheses while audio arrives, then a final.

The decoder runs in its own process, fed over a pipe, as a server would: decoding holds the GIL,
so in-process it would delay the caller's pacing. Replies are timestamped when they arrive back,
like messages from a remote service, and a decoder that falls behind real time shows up as a
late final.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from importlib.metadata import version
from multiprocessing.connection import Connection

from ..events import CLOSED, FINAL, PARTIAL, Timeline
from ..registry import ModelInfo

SAMPLE_RATE = 16000


def _serve(conn: Connection) -> None:
    """The decoder process: ("start", seq) ("audio", pcm) ... ("end",) in; (seq, "partial"|"final"|"error", text) out.

    Every reply carries the sequence number of the utterance it belongs to, so a reply left in the
    pipe by an abandoned stream can never be read as the next stream's.
    """
    from pocketsphinx import Decoder

    decoder = Decoder(samprate=SAMPLE_RATE, loglevel="FATAL")
    conn.send(("ready", ""))
    last, seq, open_utt = "", -1, False
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        try:
            if message[0] == "start":
                if open_utt:
                    decoder.end_utt()  # an abandoned stream's utterance
                decoder.start_utt()
                last, seq, open_utt = "", message[1], True
            elif message[0] == "audio" and open_utt:
                decoder.process_raw(message[1], False, False)
                hyp = decoder.hyp()
                text = hyp.hypstr if hyp is not None else ""
                if text and text != last:
                    conn.send((seq, "partial", text))
                    last = text
            elif message[0] == "end" and open_utt:
                decoder.end_utt()
                open_utt = False
                hyp = decoder.hyp()
                conn.send((seq, "final", hyp.hypstr if hyp is not None else ""))
        except Exception as exc:  # reported to the client, which makes it an error row
            open_utt = False
            conn.send((seq, "error", f"{type(exc).__name__}: {exc}"))


class PocketsphinxSTT:
    sample_rate = SAMPLE_RATE

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self._conn: Connection | None = None
        self._process: multiprocessing.process.BaseProcess | None = None
        self._busy = threading.Lock()
        self._seq = 0

    @staticmethod
    def installed_version() -> str:
        return version("pocketsphinx")

    def _start_server(self) -> Connection:
        if self._conn is None or self._process is None or not self._process.is_alive():
            ctx = multiprocessing.get_context("spawn")
            parent, child = ctx.Pipe()
            self._process = ctx.Process(target=_serve, args=(child,), name="pocketsphinx-decoder", daemon=True)
            self._process.start()
            child.close()
            if not parent.poll(60) or parent.recv()[0] != "ready":
                raise RuntimeError("the pocketsphinx decoder process did not start")
            self._conn = parent
        return self._conn

    async def connect(self, timeline: Timeline) -> "PocketsphinxSession":
        conn = await asyncio.to_thread(self._start_server)
        if not self._busy.acquire(blocking=False):
            raise RuntimeError("one pocketsphinx decoder serves one stream at a time")
        self._seq += 1
        session = PocketsphinxSession(conn, timeline, self._busy, asyncio.get_running_loop(), self._seq)
        session.start()
        return session

    def close(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process = self._conn = None


class PocketsphinxSession:
    def __init__(self, conn: Connection, timeline: Timeline, busy: threading.Lock,
                 loop: asyncio.AbstractEventLoop, seq: int) -> None:
        self.conn, self.timeline, self._busy, self._loop, self.seq = conn, timeline, busy, loop, seq
        self._ended = False
        self._done = asyncio.Event()
        self._error: str | None = None
        self._reader = threading.Thread(target=self._receive, name="pocketsphinx-reader", daemon=True)

    def start(self) -> None:
        self.conn.send(("start", self.seq))
        self._reader.start()

    def _receive(self) -> None:
        try:
            while True:
                seq, kind, text = self.conn.recv()
                if seq != self.seq:
                    continue  # left over from an earlier, abandoned stream
                if kind == "partial":
                    self.timeline.mark(PARTIAL, text=text)
                elif kind == "final":
                    self.timeline.mark(FINAL, text=text)
                    self.timeline.mark(CLOSED)
                    return
                else:
                    self._error = text
                    return
        except (EOFError, OSError) as exc:
            self._error = f"decoder process went away ({type(exc).__name__})"
        finally:
            self._loop.call_soon_threadsafe(self._done.set)

    async def send_audio(self, pcm16: bytes) -> None:
        self.conn.send(("audio", pcm16))

    async def end_audio(self) -> None:
        self._ended = True
        self.conn.send(("end",))

    async def wait_final(self) -> None:
        await self._done.wait()
        if self._error is not None:
            raise RuntimeError(f"pocketsphinx: {self._error}")

    async def aclose(self) -> None:
        if not self._ended:
            self._ended = True
            self.conn.send(("end",))
        await asyncio.to_thread(self._reader.join, 5)
        if self._busy.locked():
            self._busy.release()
