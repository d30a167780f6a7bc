"""The audio an emulator speaks: a sharp-onset tone (exact onset for clock tests) or the text
spoken by the local eSpeak NG engine (so the TTS intelligibility instrument has words to hear)."""

from __future__ import annotations

import base64
from typing import Any, AsyncIterator, Callable

import numpy as np

from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.emulators.cancel import Cancel
from voxwatch.providers.emulators.faults import break_off, breaks
from voxwatch.providers.emulators.ledger import record, sent_key


def speech_pcm(text: str, rate: int, voice: str = "tone", speech_ms: float = 600.0,
               leading_silence_ms: float = 0.0) -> tuple[np.ndarray, int]:
    """(int16 samples, index of the first speech sample) at `rate`: leading silence, then speech."""
    silence = np.zeros(int(round(leading_silence_ms * rate / 1000)))
    if voice == "espeak":  # imported here: scipy (resample) takes seconds to import, and the tone needs none of it
        from voxwatch.foundation.audio import resample
        from voxwatch.providers.local.espeak_engine import EspeakEngine

        engine = EspeakEngine.get()
        speech = resample(engine.render(text, "en-us").astype(np.float64) / 32768.0, engine.sample_rate, rate)
        nz = np.flatnonzero(np.abs(speech) > 1e-3)
        speech = speech[nz[0]:] if nz.size else speech  # the speech starts where the silence ends
    else:
        t = np.arange(int(round(speech_ms * rate / 1000))) / rate
        speech = 0.3 * np.sin(2 * np.pi * 220.0 * t)
    pcm = (np.clip(np.concatenate([silence, speech]), -1, 1) * 32767).astype("<i2")
    return pcm, silence.size


def speech_chunks(scenario, text: str, rate: int) -> tuple[list[bytes], int]:
    """A TTS or S2S scenario's reply in `chunk_ms` chunks of 16-bit PCM (silent under the
    `inaudible` fault), and the index of the first chunk with speech in it."""
    pcm, silence_n = speech_pcm(text, rate, scenario.voice, scenario.speech_ms, scenario.leading_silence_ms)
    if scenario.fault == "inaudible":
        pcm[:] = 0
    step = int(round(scenario.chunk_ms * rate / 1000))
    return [pcm[i:i + step].tobytes() for i in range(0, pcm.size, step)], -(-silence_n // step)


class ChunkCache:
    """A scenario's replies, made once per (text, rate) - once per rate for the tone, whose audio
    ignores the text - and kept encoded (`encode`: base64 for JSON protocols), so no stream pays
    for synthesis or encoding on the clock more than once."""

    def __init__(self, scenario, encode: Callable[[bytes], Any] = lambda chunk: chunk) -> None:
        self.scenario, self.encode = scenario, encode
        self._made: dict[tuple[str, int], tuple[list, int]] = {}

    def get(self, text: str, rate: int) -> tuple[list, int]:
        key = (text if self.scenario.voice != "tone" else "", rate)
        if key not in self._made:
            chunks, first_speech = speech_chunks(self.scenario, text or "hello", rate)
            self._made[key] = ([self.encode(c) for c in chunks], first_speech)
        return self._made[key]


def warmed(scenario, rate: int, encode: Callable[[bytes], Any] = lambda chunk: chunk) -> ChunkCache | None:
    """A ChunkCache of `scenario`'s replies with its first-use costs paid (the reply at `rate` made)
    before any stream is timed; None when the emulator serves no such scenario."""
    if scenario is None:
        return None
    cache = ChunkCache(scenario, encode)
    cache.get("", rate)
    return cache


def b64(chunk: bytes) -> str:
    return base64.b64encode(chunk).decode()


async def paced(emulator, ws, scenario, text: str, n: int, first_speech: int, arrived_ns: int,
                malformed: str, cancel: Cancel | None = None) -> AsyncIterator[int]:
    """A TTS reply of `n` chunks over a WebSocket, on the scenario's schedule (`send_times` from the
    request's arrival): yields each chunk's index when it is due, for the caller to send, with the
    ledger's records made just before (first_audio, first_speech; every chunk's, ledger.sent_key, when the
    scenario injects stalls). The stream faults happen here:
    `malformed` (the text given, a message broken off) goes before the second chunk; a drop or a
    `close:<code>` ends the reply at the third, and the generator with it (the caller sends nothing
    after it: `breaks(fault)` with n > 2). A `cancel` that arrives ends it at the first chunk it cuts
    (emulators.cancel)."""
    for i, at in enumerate(scenario.send_times(arrived_ns, text, n, first_speech)):
        if cancel is not None and cancel.stops(at):
            return
        await sleep_until(at)
        if cancel is not None:
            if cancel.stops(at):
                return
            cancel.sending(i)
        if scenario.fault == "malformed" and i == 1:
            await ws.send(malformed)
        elif breaks(scenario.fault) and i == 2:
            await break_off(ws, scenario.fault)
            return
        if i == 0:
            record(emulator, text, "first_audio")
        if i == first_speech:
            record(emulator, text, "first_speech")
        if scenario.stalls:
            record(emulator, text, sent_key(i))
        yield i


async def send_binary_reply(ws, emulator, text: str, chunks: list[bytes], first_speech: int, scenario, arrived_ns: int,
                            malformed: str, cancel: Cancel | None = None) -> bool:
    """A reply's audio as binary WebSocket frames, `paced`; False when a fault (or a `cancel`) ended it early."""
    sent = 0
    async for i in paced(emulator, ws, scenario, text, len(chunks), first_speech, arrived_ns, malformed, cancel):
        await ws.send(chunks[i])
        sent += 1
    return sent == len(chunks)
