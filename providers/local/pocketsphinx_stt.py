"""pocketsphinx as a streaming STT provider: partial hypotheses while audio arrives, then a final.

The decoder runs on its own thread, fed by a queue, as a server would: the caller's pacing never
waits for decoding, and a decoder that falls behind real time shows up as a late final.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from importlib.metadata import version

from pocketsphinx import Decoder

from ..events import CLOSED, FINAL, PARTIAL, Timeline
from ..registry import ModelInfo

_END = None


class PocketsphinxSTT:
    sample_rate = 16000

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self._decoder: Decoder | None = None
        self._busy = threading.Lock()

    @staticmethod
    def installed_version() -> str:
        return version("pocketsphinx")

    async def connect(self, timeline: Timeline) -> "PocketsphinxSession":
        if self._decoder is None:
            self._decoder = await asyncio.to_thread(Decoder, samprate=self.sample_rate, loglevel="FATAL")
        if not self._busy.acquire(blocking=False):
            raise RuntimeError("one pocketsphinx decoder serves one stream at a time")
        session = PocketsphinxSession(self._decoder, timeline, self._busy, asyncio.get_running_loop())
        session.start()
        return session


class PocketsphinxSession:
    def __init__(self, decoder: Decoder, timeline: Timeline, busy: threading.Lock,
                 loop: asyncio.AbstractEventLoop) -> None:
        self.decoder, self.timeline, self._busy, self._loop = decoder, timeline, busy, loop
        self._inbox: queue.Queue[bytes | None] = queue.Queue()
        self._done = asyncio.Event()
        self._thread = threading.Thread(target=self._decode, name="pocketsphinx", daemon=True)
        self._error: BaseException | None = None

    def start(self) -> None:
        self.decoder.start_utt()
        self._thread.start()

    def _decode(self) -> None:
        last = ""
        try:
            while (chunk := self._inbox.get()) is not _END:
                self.decoder.process_raw(chunk, False, False)
                hyp = self.decoder.hyp()
                text = hyp.hypstr if hyp is not None else ""
                if text and text != last:
                    self.timeline.mark(PARTIAL, text=text)
                    last = text
            self.decoder.end_utt()
            hyp = self.decoder.hyp()
            self.timeline.mark(FINAL, text=hyp.hypstr if hyp is not None else "")
            self.timeline.mark(CLOSED)
        except BaseException as exc:  # reported to the harness, which makes it an error row
            self._error = exc
        finally:
            self._loop.call_soon_threadsafe(self._done.set)

    async def send_audio(self, pcm16: bytes) -> None:
        self._inbox.put(pcm16)

    async def end_audio(self) -> None:
        self._inbox.put(_END)

    async def wait_final(self) -> None:
        await self._done.wait()
        if self._error is not None:
            raise RuntimeError(f"pocketsphinx failed: {self._error}")

    async def aclose(self) -> None:
        if self._thread.is_alive():
            self._inbox.put(_END)
            await asyncio.to_thread(self._thread.join, 5)
        if self._busy.locked():
            self._busy.release()
