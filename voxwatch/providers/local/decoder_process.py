"""A local streaming decoder served from its own process, fed over a pipe, as a server would be.

Decoding holds the GIL (or both cores), so in-process it would delay the caller's pacing and the
worker's event loop. Replies are timestamped when they arrive back, like messages from a remote
service, and a decoder that falls behind real time shows up as a late final.

The protocol, shared by every local streaming engine: ("start", seq) ("audio", pcm) ... ("end",)
in; ("ready", "") once, then (seq, "partial"|"final"|"error", text) out. Every reply carries the
sequence number of the utterance it belongs to, so a reply left in the pipe by an abandoned stream
can never be read as the next stream's.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from multiprocessing.connection import Connection
from typing import Any, Callable

from voxwatch.foundation.events import CLOSED, FINAL, PARTIAL, Timeline
from voxwatch.providers.registry import ModelInfo


class ProcessDecoderSTT:
    """The adapter half: one decoder process per adapter, serving one stream at a time."""

    sample_rate = 16000
    engine = "decoder"  # names the process, its reader thread and its errors

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self._conn: Connection | None = None
        self._process: multiprocessing.process.BaseProcess | None = None
        self._busy = threading.Lock()
        self._seq = 0

    def serve_target(self) -> tuple[Callable[..., None], tuple[Any, ...]]:
        """The decoder process's function and its arguments after the pipe end."""
        raise NotImplementedError

    def _start_server(self) -> Connection:
        if self._conn is None or self._process is None or not self._process.is_alive():
            ctx = multiprocessing.get_context("spawn")
            parent, child = ctx.Pipe()
            target, args = self.serve_target()
            self._process = ctx.Process(target=target, args=(child, *args), name=f"{self.engine}-decoder", daemon=True)
            self._process.start()
            child.close()
            if not parent.poll(120) or parent.recv()[0] != "ready":
                raise RuntimeError(f"the {self.engine} decoder process did not start")
            self._conn = parent
        return self._conn

    async def connect(self, timeline: Timeline) -> "DecoderSession":
        conn = await asyncio.to_thread(self._start_server)
        if not self._busy.acquire(blocking=False):
            raise RuntimeError(f"one {self.engine} decoder serves one stream at a time")
        self._seq += 1
        session = DecoderSession(conn, timeline, self._busy, asyncio.get_running_loop(), self._seq, self.engine)
        session.start()
        return session

    def close(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process = self._conn = None


class DecoderSession:
    def __init__(self, conn: Connection, timeline: Timeline, busy: threading.Lock,
                 loop: asyncio.AbstractEventLoop, seq: int, engine: str) -> None:
        self.conn, self.timeline, self._busy, self._loop, self.seq = conn, timeline, busy, loop, seq
        self.engine = engine
        self._ended = False
        self._done = asyncio.Event()
        self._error: str | None = None
        self._reader = threading.Thread(target=self._receive, name=f"{engine}-reader", daemon=True)

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
            raise RuntimeError(f"{self.engine}: {self._error}")

    async def aclose(self) -> None:
        if not self._ended:
            self._ended = True
            self.conn.send(("end",))
        await asyncio.to_thread(self._reader.join, 5)
        if self._busy.locked():
            self._busy.release()
