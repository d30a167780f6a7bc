"""A loopback emulator of Gradium's speech WebSockets: text-to-speech at `/api/speech/tts` and
speech-to-text at `/api/speech/asr`, one host as Gradium serves them.

Both: the `x-api-key` header; the scenario's handshake faults refuse the upgrade. The first message
must be `setup`, else an `error` {message, code: 1008} and a 1008 close, as the docs say ("The server
will close the connection if any other message is sent first"); a missing or wrong key gets the same
1008 error and close (Gradium lists "invalid API key" under 1008). A bad `input_format` /
`output_format` is 1008 too; a `json_config` value out of range (STT `language`) is "a server error",
here 1011. `setup` is answered by `ready`. A session lasts at most `SESSION_LIMIT_S` (300 s,
docs.gradium.ai/guides/limits); the emulator then drops the connection, as the SDK's tests say the
server may (a TCP reset, no `error` message).

TTS: `text` messages are spoken in turn; the reply to the first is timed from its arrival by the
TTSScenario (`audio` {audio: base64 PCM at the format's rate, `chunk_ms` each; leading silence, then
speech}), with a word-timing `text` {text, start_s, stop_s} after the audio that holds each word.
`output_format` `wav` (the default) puts a 44-byte WAV header before the first chunk's samples; `pcm`
is 48 kHz; `pcm_<rate>` that rate. After the client's `end_of_stream` and the last audio: the server's
`end_of_stream`, then a normal close (`close_ws_on_eos` true). Faults: `malformed` (a broken audio
message), `disconnect` / `close:<code>` (at the third chunk), `no_final` (no `end_of_stream`),
`inaudible`. The ledger records `first_audio` and `first_speech` by the text.

STT: `audio` {audio: base64} in the setup's `input_format` (`pcm` 24 kHz, `pcm_<rate>`, `ulaw_8000` /
`alaw_8000` one byte a sample). From the first audio's arrival (this emulator's t0, the stream keyed by
its decoded bytes, as STTScenario's anchors are) the words go out as `text` {text, start_s} messages,
one new word each on the scenario's partial cadence (documented: all at the final, as the quoted `text`) from `first_partial_ms` after the start of speech,
the last held back (the model's lookahead) until `final_ms` after the end of speech, with an
`end_text` {stop_s}. A `step` {vad, step_idx, step_duration_s, total_duration_s} goes out for every
80 ms of audio received, its inactivity probabilities high once the audio is past the end of speech.
`flush` {flush_id} is answered by `flushed` {flush_id} once the held words are out (at the scenario's
final, or at once when it has passed): the turn's final (ledger `final`, just before it).
`end_of_stream` flushes, sends `end_of_stream` and closes normally. Faults: `malformed` (a broken
`text`), `disconnect` / `close:<code>` (at the first partial), `no_final` (the held words and the
`flushed` never come).

`GradiumScenario(documented=True)` sends the messages Gradium's docs quote, verbatim (`DOC_*` below),
where the protocol has them: the contract test replays them through the adapters.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import struct
import time
import uuid
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import urlsplit

import websockets

from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.emulators.faults import break_off, breaks, drop, websocket_refusal
from voxwatch.providers.emulators.ledger import record
from voxwatch.providers.emulators.scenario import STTScenario, TTSScenario, scenario_for
from voxwatch.providers.emulators.speech import ChunkCache, b64

TTS_PATH, STT_PATH = "/api/speech/tts", "/api/speech/asr"
SESSION_LIMIT_S = 300.0
TTS_RATES = {"wav": 48000, "pcm": 48000, **{f"pcm_{r}": r for r in (8000, 16000, 22050, 24000, 44100, 48000)}}
STT_FORMATS = {"pcm": (24000, 2), **{f"pcm_{r}": (r, 2) for r in (8000, 16000, 22050, 24000, 44100, 48000)},
               "ulaw_8000": (8000, 1), "mulaw_8000": (8000, 1), "alaw_8000": (8000, 1)}  # rate, bytes a sample
LANGUAGES = ("en", "fr", "de", "es", "pt")
STEP_S = 0.08  # a VAD step: one model frame
MODEL = "default"

# The sequences Gradium's documentation quotes (read 2026-12-07).
# STT, gradium-ai/gradium-py@5de9db215dcf4f6f2c7673bc9856f6d75592d2e6 docs/websocket_stt_description.md
# (rendered at https://docs.gradium.ai/api-reference/endpoint/stt-websocket), "Quick Reference", in
# protocol order: setup -> ready -> audio -> text -> step -> end_text -> flush -> flushed ->
# end_of_stream -> end_of_stream; and its full `ready` and `step` examples:
DOC_STT_SETUP = {"type": "setup", "model_name": "default", "input_format": "pcm"}
DOC_STT_READY = {"type": "ready", "request_id": "550e8400-e29b-41d4-a716-446655440000", "model_name": "default",
                 "sample_rate": 24000, "frame_size": 1920, "delay_in_frames": 0, "text_stream_names": []}
DOC_STT_TEXT = {"type": "text", "text": "Hello world", "start_s": 0.5}
DOC_STT_STEP = {"type": "step", "vad": [{"horizon_s": 0.5, "inactivity_prob": 0.05},
                                        {"horizon_s": 1.0, "inactivity_prob": 0.1},
                                        {"horizon_s": 2.0, "inactivity_prob": 0.15}],
                "step_idx": 5, "step_duration_s": 0.08, "total_duration_s": 0.4}
DOC_STT_END_TEXT = {"type": "end_text", "stop_s": 2.5}
DOC_END_OF_STREAM = {"type": "end_of_stream"}
DOC_ERROR = {"type": "error", "message": "Error description", "code": 1008}
# TTS, https://docs.gradium.ai/api-reference/endpoint/tts-websocket "Lifecycle" (client frames) and
# gradium-ai/gradium-py@240192e5e78cd276d33611d3e3c60836684bb3c4 docs/websocket_tts_description.md
# "Quick Reference": setup -> ready -> text -> audio -> text (word timing) -> end_of_stream -> end_of_stream:
DOC_TTS_SETUP = {"type": "setup", "voice_id": "YTpq7expH9539ERJ", "model_name": "default", "output_format": "pcm"}
DOC_TTS_TEXT = {"type": "text", "text": "Hello, world."}
DOC_TTS_READY = {"type": "ready", "request_id": "550e8400-e29b-41d4-a716-446655440000"}
DOC_TTS_WORD = {"type": "text", "text": "Hello", "start_s": 0.2, "stop_s": 0.6}


@dataclass(frozen=True)
class GradiumScenario:
    """What this emulator serves: the STT and TTS scenarios, and `documented` (send the quoted messages)."""

    stt: STTScenario | None = None
    tts: TTSScenario | None = None
    documented: bool = False


def _scenarios(scenario) -> GradiumScenario:
    if isinstance(scenario, GradiumScenario):
        return scenario
    return GradiumScenario(stt=scenario_for(scenario, "stt"), tts=scenario_for(scenario, "tts"))


def wav_header(rate: int) -> bytes:
    """A streaming WAV header (16-bit mono PCM, lengths unknown: 0xFFFFFFFF)."""
    return (b"RIFF" + struct.pack("<I", 0xFFFFFFFF) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16)
            + b"data" + struct.pack("<I", 0xFFFFFFFF))


class GradiumEmulator:
    def __init__(self, scenario) -> None:
        served = _scenarios(scenario)
        self.stt, self.tts, self.documented = served.stt, served.tts, served.documented
        if self.tts is not None:
            self.chunks = ChunkCache(self.tts, b64)
            self.chunks.get("", TTS_RATES["pcm"])  # first-use costs paid before any stream is timed

    def _scenario(self, path: str):
        return {TTS_PATH: self.tts, STT_PATH: self.stt}.get(path)

    def process_request(self, connection, request):
        scenario = self._scenario(urlsplit(request.path).path)
        if scenario is None:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        return websocket_refusal(connection, scenario.fault)

    async def handle(self, ws) -> None:
        path = urlsplit(ws.request.path).path
        scenario = self._scenario(path)
        limit = asyncio.get_running_loop().call_later(SESSION_LIMIT_S, lambda: asyncio.ensure_future(drop(ws)))
        session = (_TTS if path == TTS_PATH else _STT)(self, ws, scenario)
        try:
            setup = json.loads(await ws.recv())
            if not isinstance(setup, dict) or setup.get("type") != "setup":
                await session.refuse(1008, "The first message must be a setup message")
            elif ws.request.headers.get("x-api-key") != scenario.api_key:
                await session.refuse(1008, "Invalid API key")
            else:
                await session.run(setup)
        except (ValueError, TypeError, AttributeError):
            await session.refuse(1008, "Invalid message")
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it
        finally:
            limit.cancel()
            session.stop()


class _Session:
    def __init__(self, emulator: GradiumEmulator, ws, scenario) -> None:
        self.emulator, self.ws, self.s = emulator, ws, scenario
        self.tasks: list[asyncio.Task] = []

    async def send(self, message: dict) -> None:
        await self.ws.send(json.dumps(message))

    async def refuse(self, code: int, message: str) -> None:
        """Gradium's way: an `error` message with the close code, then the close."""
        await self.send(DOC_ERROR if self.emulator.documented else {"type": "error", "message": message, "code": code})
        await self.ws.close(code, message)

    def stop(self) -> None:
        for task in self.tasks:
            task.cancel()

    def ready(self, setup: dict, **fields) -> dict:
        return {"type": "ready", "request_id": str(uuid.uuid4()), "model_name": setup.get("model_name", MODEL), **fields}


class _TTS(_Session):
    async def run(self, setup: dict) -> None:
        fmt = setup.get("output_format", "wav")
        if fmt not in TTS_RATES:
            await self.refuse(1008, f"Invalid output format {fmt!r}")
            return
        rate = TTS_RATES[fmt]
        header = wav_header(rate) if fmt == "wav" else b""
        await self.send(DOC_TTS_READY if self.emulator.documented else self.ready(
            setup, model_ext=MODEL, sample_rate=rate, frame_size=rate * 80 // 1000, audio_stream_names=[],
            text_stream_names=[]))
        queue: asyncio.Queue = asyncio.Queue()
        self.tasks.append(asyncio.create_task(self.speak(queue, rate, header)))
        async for message in self.ws:
            arrived = time.perf_counter_ns()
            data = json.loads(message)
            if data.get("type") == "text" and isinstance(data.get("text"), str):
                queue.put_nowait((data["text"], arrived))
            elif data.get("type") == "end_of_stream":
                queue.put_nowait(None)
            else:
                await self.refuse(1008, "Invalid message")
                return

    async def speak(self, queue: asyncio.Queue, rate: int, header: bytes) -> None:
        s = self.s
        while (item := await queue.get()) is not None:
            text, arrived = item
            chunks, first_speech = await asyncio.to_thread(self.emulator.chunks.get, text, rate)
            words, step_s = text.split(), s.chunk_ms / 1000
            per_word = s.speech_ms / 1000 / max(len(words), 1)
            start = s.leading_silence_ms / 1000
            said = 0
            for i, (data, at) in enumerate(zip(chunks, s.send_times(arrived, text, len(chunks), first_speech))):
                await sleep_until(at)
                if s.fault == "malformed" and i == 1:
                    await self.ws.send('{"type": "audio", "audio": ')
                elif breaks(s.fault) and i == 2:
                    await break_off(self.ws, s.fault)
                    return
                if i == 0:
                    record(self.emulator, text, "first_audio")
                if i == first_speech:
                    record(self.emulator, text, "first_speech")
                if header and i == 0:
                    data = b64(header + base64.b64decode(data))
                await self.send({"type": "audio", "audio": data})
                while said < len(words) and start + (said + 1) * per_word <= (i + 1) * step_s + 1e-9:
                    await self.send(DOC_TTS_WORD if self.emulator.documented and said == 0 else {
                        "type": "text", "text": words[said], "start_s": round(start + said * per_word, 3),
                        "stop_s": round(start + (said + 1) * per_word, 3)})
                    said += 1
            for word in words[said:]:  # a last word's stop that rounding put past the last chunk
                await self.send({"type": "text", "text": word, "start_s": round(start + said * per_word, 3),
                                 "stop_s": round(start + s.speech_ms / 1000, 3)})
                said += 1
            header = b""
        if s.fault == "no_final":
            return
        await self.send(DOC_END_OF_STREAM)
        await self.ws.close()


class _STT(_Session):
    async def run(self, setup: dict) -> None:
        fmt = setup.get("input_format", "wav")
        if fmt not in STT_FORMATS:
            await self.refuse(1008, f"Invalid audio format {fmt!r} (this emulator takes raw PCM, mu-law and A-law)")
            return
        config = setup.get("json_config") or {}
        config = json.loads(config) if isinstance(config, str) else config
        if config.get("language", "en") not in LANGUAGES:
            await self.refuse(1011, f"Invalid language {config.get('language')!r}")
            return
        rate, width = STT_FORMATS[fmt]
        self.bytes_per_s = rate * width
        await self.send(DOC_STT_READY if self.emulator.documented else self.ready(
            setup, sample_rate=24000, frame_size=1920, delay_in_frames=int(config.get("delay_in_frames", 0)),
            text_stream_names=[]))
        self.received = 0  # bytes of audio
        self.transcript = ""  # the stream's (its ledger key)
        self.steps = 0
        self.anchors = (self.s.speech_start_s, self.s.speech_end_s)
        self.final = asyncio.Event()  # the held words are out (or will never come: no_final)
        self.speaker: asyncio.Task | None = None
        async for message in self.ws:
            arrived = time.perf_counter_ns()
            data = json.loads(message)
            kind = data.get("type")
            if kind == "audio":
                try:
                    audio = base64.b64decode(data["audio"], validate=True)
                except (KeyError, TypeError, binascii.Error):
                    await self.refuse(1008, "Invalid audio message")
                    return
                if self.speaker is None:
                    self.anchors = self.s.anchors_for(audio)
                    self.speaker = asyncio.create_task(self.transcribe(arrived, audio))
                    self.tasks.append(self.speaker)
                self.received += len(audio)
                await self.vad()
            elif kind == "flush":
                self.tasks.append(asyncio.create_task(self.flushed(data.get("flush_id"))))
            elif kind == "end_of_stream":
                if self.speaker is not None and self.s.fault != "no_final":
                    await self.final.wait()
                await self.send(DOC_END_OF_STREAM)
                await self.ws.close()
                return
            else:
                await self.refuse(1008, "Invalid message")
                return

    async def vad(self) -> None:
        """A `step` for every 80 ms of audio received."""
        while (self.steps + 1) * STEP_S <= self.received / self.bytes_per_s:
            self.steps += 1
            total = round(self.steps * STEP_S, 3)
            if self.emulator.documented and self.steps == 5:
                await self.send(DOC_STT_STEP)
                continue
            quiet = 0.95 if total > self.anchors[1] else 0.05
            await self.send({"type": "step", "vad": [{"horizon_s": h, "inactivity_prob": quiet} for h in (0.5, 1.0, 2.0)],
                             "step_idx": self.steps, "step_duration_s": STEP_S, "total_duration_s": total})

    async def transcribe(self, t0: int, first: bytes) -> None:
        s, documented = self.s, self.emulator.documented
        turn = s.turn(first, t0)
        self.transcript, words, sent = turn.transcript, turn.words, 0
        async for k in turn.partials():
            if s.fault == "malformed":
                await self.ws.send('{"type": "text", "text": ')
            elif breaks(s.fault):
                await break_off(self.ws, s.fault)
                return
            if documented or sent >= len(words) - 1:
                continue  # the last word waits for the lookahead
            if sent == 0:
                record(self.emulator, turn.transcript, "first_partial")
            new = words[sent:min(k, len(words) - 1)]
            if new:
                await self.send({"type": "text", "text": " ".join(new), "start_s": round(self.anchors[0], 3)})
                sent += len(new)
        if s.fault == "no_final":
            return
        await sleep_until(turn.final_at)
        if words[sent:]:
            if sent == 0:
                record(self.emulator, turn.transcript, "first_partial")
            await self.send(DOC_STT_TEXT if documented else {"type": "text", "text": " ".join(words[sent:]),
                                                             "start_s": round(self.anchors[0], 3)})
        await self.send(DOC_STT_END_TEXT if documented else {"type": "end_text", "stop_s": round(self.anchors[1], 3)})
        self.final.set()

    async def flushed(self, flush_id) -> None:
        """Answer a flush once the held words are out (at once before any audio; never under no_final)."""
        if self.speaker is not None:
            if self.s.fault == "no_final":
                return
            await self.final.wait()
        record(self.emulator, self.transcript, "final")
        await self.send({"type": "flushed", "flush_id": flush_id})
