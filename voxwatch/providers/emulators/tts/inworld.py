"""A loopback emulator of Inworld's bidirectional WebSockets: text to speech
(`/tts/v1/voice:streamBidirectional`) and speech to text (`/stt/v1/transcribe:streamBidirectional`),
on one port as Inworld serves them from api.inworld.ai. Sources: those of the adapters
(tts/inworld.py, stt/inworld.py).

Both check `Authorization: Basic <key>` (HTTP 401 on the upgrade otherwise). Inworld documents no
error message or close code for these sockets; this emulator reports a refusal as its TTS socket
reports failures, a gRPC `status` (`{"code", "message", "details"}`), wrapped as `{"error": ...}` on
the STT socket (the form the reference clients read) and as `result.status` on the TTS socket, then
closes (1008: a refused message).

TTS: contexts (at most 5 a connection; a sixth is RESOURCE_EXHAUSTED) are made by `create` (`voiceId`,
`modelId` one of Inworld's, `audioConfig.audioEncoding` LINEAR16 or PCM, the two this emulator speaks,
`sampleRateHertz` 16000 when absent, as the documented `contextCreated` echoes) and answered
`contextCreated`. `send_text` (at most 1000 characters: INVALID_ARGUMENT beyond) adds to the context's
buffer; `flush_context` (inside `send_text` or alone) synthesizes it now; otherwise the buffer waits for
`bufferCharThreshold` characters or `maxBufferDelayMs` (3000 by default): the silent seconds a client
that never flushes pays. A flush's audio goes as `audioChunk` messages (`audioContent`: each chunk a
whole WAV file for LINEAR16, RIFF header and all, as the documented example's; raw samples for PCM;
`usage`; `timestampInfo.wordAlignment` with `timestampType` WORD) from `ttfb_ms` after the flush
arrived, every `send_every_ms` (leading silence, then the speech), then `flushCompleted`.
`close_context` flushes what is buffered, then `contextClosed`; `update_config` answers
`contextUpdated`. Not emulated: the 10-minute inactivity close.

STT: the first message must be `transcribeConfig` (camelCase, or the snake_case of the dev mirror):
a known `modelId`, `audioEncoding` LINEAR16, and for `inworld/inworld-stt-1` 16 kHz mono, as the
official example requires. `audioChunk.content` is base64 LINEAR16; a chunk outside 20 to 1000 ms is
refused (INVALID_ARGUMENT, "invalid audio chunk duration", as Coval's runner saw Inworld do). From the
first chunk's arrival (the emulator's t0) it sends `speechStarted`, then interim transcriptions (the
turn so far, `isFinal: false`) on the STTScenario cadence from `first_partial_ms` after the start of
speech, the turn's final (`isFinal: true`) `final_ms` after the end of speech, then `speechStopped`;
`wordTimestamps` (startTime / endTime in seconds) with `includeWordTimestamps`. `endTurn` does not
move the final (the scenario is the truth); `closeStream` notes what was received (ledger
`seen:stream`) and leaves the socket open, as Inworld was seen to: the client closes it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import struct
import time
from http import HTTPStatus
from urllib.parse import urlsplit

import websockets

from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.emulators.faults import break_off, breaks, websocket_refusal
from voxwatch.providers.emulators.ledger import record, saw
from voxwatch.providers.emulators.replay import Expect, Send
from voxwatch.providers.emulators.scenario import STTScenario, TTSScenario, scenario_for, send_partials
from voxwatch.providers.emulators.speech import b64, warmed

TTS_PATH = "/tts/v1/voice:streamBidirectional"
STT_PATH = "/stt/v1/transcribe:streamBidirectional"
TTS_MODELS = ("inworld-tts-2", "inworld-tts-2-flash", "inworld-tts-1.5-max", "inworld-tts-1.5-mini",
              "inworld-tts-1-max", "inworld-tts-1")
STT_MODELS = ("inworld/inworld-stt-1", "assemblyai/universal-streaming-multilingual",
              "assemblyai/universal-streaming-english", "assemblyai/u3-rt-pro", "assemblyai/whisper-rt")
MAX_CONTEXTS, MAX_TEXT, MAX_BUFFER_DELAY_MS = 5, 1000, 3000
MIN_CHUNK_MS, MAX_CHUNK_MS = 20, 1000
INVALID_ARGUMENT, RESOURCE_EXHAUSTED = 3, 8
OK_STATUS = {"code": 0, "message": "", "details": []}

# --- the documented sequences, replayed through the adapters by tests/test_inworld.py ---

# TTS: the examples of Inworld's API reference, docs.inworld.ai/api-reference/ttsAPI/texttospeech/
# synthesize-speech-websocket (read 2026-12-07), in order: the client's create, send_text (with
# flush_context) and close_context; the server's contextCreated, audioChunk and contextClosed, quoted
# whole. Two substitutions, made by `inworld_tts_documented`: the contextId is the client's (the page's
# example names its own, "ctx-1"), and the audioChunk's audioContent, which on the page is a WAV header
# cut off inside its data size ("UklGRgSYAABXQVZFZm10IBAAAAABAAEAgD4AAAB9AAACABAAZGF0YeCX=", 42 bytes),
# is that header (RIFF, WAVE, fmt: PCM, mono, 16000 Hz, 16 bits) completed with the given samples.
TTS_DOC_AUDIO = "UklGRgSYAABXQVZFZm10IBAAAAABAAEAgD4AAAB9AAACABAAZGF0YeCX="
TTS_DOC_TEXT = "Hello, what a wonderful day to be a text-to-speech model!"
TTS_DOCUMENTED = [
    {"result": {"contextId": "ctx-1", "contextCreated": {
        "voiceId": "Dennis", "audioConfig": {"audioEncoding": "LINEAR16", "sampleRateHertz": 16000},
        "modelId": "inworld-tts-1-max", "timestampType": "WORD", "maxBufferDelayMs": 3000},
        "status": {"code": 0, "message": "", "details": []}}},
    {"result": {"contextId": "ctx-1", "audioChunk": {
        "audioContent": TTS_DOC_AUDIO, "usage": {"processedCharactersCount": 79, "modelId": "inworld-tts-1"},
        "timestampInfo": {"wordAlignment": {
            "words": ["Hello,", "what", "a", "wonderful", "day", "to", "be", "a", "text-to-speech", "model."],
            "wordStartTimeSeconds": [0.031, 0.375, 0.901, 1.002, 1.386, 1.548, 1.649, 1.771, 1.852, 2.58],
            "wordEndTimeSeconds": [0.355, 0.86, 0.921, 1.326, 1.528, 1.609, 1.71, 1.791, 2.539, 2.802]}}},
        "status": {"code": 0, "message": "", "details": []}}},
    {"result": {"contextId": "ctx-1", "contextClosed": {}, "status": {"code": 0, "message": "", "details": []}}},
]


def documented_wav(samples: bytes) -> bytes:
    """The documented example's WAV header (its first 40 bytes, up to `data`) with the sizes of `samples`."""
    header = bytearray(base64.b64decode(TTS_DOC_AUDIO)[:40])
    struct.pack_into("<I", header, 4, 36 + len(samples))
    return bytes(header) + struct.pack("<I", len(samples)) + samples


def _as_context(message: dict, received: list) -> dict:
    """A documented server message with the contextId the client's create chose."""
    context = next(m["contextId"] for m in received if isinstance(m, dict) and "create" in m)
    return {"result": {**message["result"], "contextId": context}}


def inworld_tts_documented(samples: bytes) -> list:
    """The API reference's exchange, with `samples` (16-bit, 16 kHz) completing its audioContent."""
    chunk = json.loads(json.dumps(TTS_DOCUMENTED[1]))
    chunk["result"]["audioChunk"]["audioContent"] = b64(documented_wav(samples))
    return [Expect("create with voiceId, modelId and a contextId",
                   lambda m: isinstance(m.get("create"), dict) and bool(m["create"].get("voiceId"))
                   and bool(m["create"].get("modelId")) and bool(m.get("contextId"))),
            Send(TTS_DOCUMENTED[0], _as_context),
            Expect("send_text with flush_context", lambda m: isinstance(m.get("send_text"), dict)
                   and "flush_context" in m["send_text"] and bool(m["send_text"].get("text"))),
            Send(chunk, _as_context),
            Expect("close_context", lambda m: "close_context" in m),
            Send(TTS_DOCUMENTED[2], _as_context)]


# STT: the API reference's examples, docs.inworld.ai/api-reference/sttAPI/speechtotext/
# transcribe-stream-websocket (read 2026-12-07), in the wrapped form the page's dev.docs.inworld.ai
# mirror shows them, with the camelCase names of the production page and of the official example
# (inworld-ai/inworld-api-examples stt/python/example_stt_websocket.py @ aef8eccd): the client's
# transcribeConfig (the official example's: inworld/inworld-stt-1, LINEAR16, 16000 Hz, 1 channel,
# en-US), audioChunks, endTurn and closeStream; the server's transcription result ("Hello, this is a
# test transcription.", isFinal, no word timestamps) and speechStarted (startTimeMs 1250, confidence 0.95).
STT_DOCUMENTED = [
    Expect("transcribeConfig: inworld/inworld-stt-1, LINEAR16, 16000 Hz, 1 channel, en-US",
           lambda m: {k: (m.get("transcribeConfig") or {}).get(k) for k in
                      ("modelId", "audioEncoding", "sampleRateHertz", "numberOfChannels", "language")}
           == {"modelId": "inworld/inworld-stt-1", "audioEncoding": "LINEAR16", "sampleRateHertz": 16000,
               "numberOfChannels": 1, "language": "en-US"}),
    Expect("audioChunks, then endTurn", lambda m: m == {"endTurn": {}}),
    Send({"result": {"transcription": {"transcript": "Hello, this is a test transcription.", "isFinal": True,
                                       "wordTimestamps": []}}}),
    Send({"result": {"speechStarted": {"startTimeMs": 1250, "confidence": 0.95}}}),
    Expect("closeStream", lambda m: m == {"closeStream": {}}),
]


def _wav(pcm: bytes, rate: int) -> bytes:
    """One audio chunk as Inworld sends LINEAR16: a whole WAV file (RIFF header, fmt, data)."""
    return (b"RIFF" + struct.pack("<I", 36 + len(pcm)) + b"WAVEfmt " +
            struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16) + b"data" + struct.pack("<I", len(pcm)) + pcm)


def _status(code: int, message: str) -> dict:
    return {"code": code, "message": message, "details": []}


class _Context:
    def __init__(self, config: dict) -> None:
        self.config = config
        self.buffer: list[str] = []
        self.timer: asyncio.Task | None = None


class InworldEmulator:
    def __init__(self, scenario) -> None:
        self.tts: TTSScenario | None = scenario_for(scenario, "tts")
        self.stt: STTScenario | None = scenario_for(scenario, "stt")
        self._chunks = warmed(self.tts, 24000)

    def process_request(self, connection, request):
        path = urlsplit(request.path).path
        scenario = {TTS_PATH: self.tts, STT_PATH: self.stt}.get(path)
        if scenario is None:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        if request.headers.get("Authorization") != f"Basic {scenario.api_key}":
            return connection.respond(HTTPStatus.UNAUTHORIZED, "invalid authorization\n")
        return websocket_refusal(connection, scenario.fault)

    async def handle(self, ws) -> None:
        try:
            if urlsplit(ws.request.path).path == TTS_PATH:
                await self._speak(ws)
            else:
                await self._listen(ws)
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it

    # --- TTS ---

    async def _speak(self, ws) -> None:
        contexts: dict[str, _Context] = {}
        lock = asyncio.Lock()  # one flush's audio at a time on the socket
        try:
            async for message in ws:
                arrived = time.perf_counter_ns()
                try:
                    data = json.loads(message)
                    context_id = str(data.get("contextId") or "default")  # "you can omit the contextId"
                except (ValueError, AttributeError):
                    await self._refuse(ws, None, INVALID_ARGUMENT, "the message is not a JSON object")
                    return
                if "create" in data:
                    problem = self._create_problem(data["create"], contexts, context_id)
                    if problem:
                        await self._refuse(ws, context_id, *problem)
                        return
                    config = {"voiceId": data["create"]["voiceId"], "modelId": data["create"]["modelId"],
                              "audioConfig": {"audioEncoding": "LINEAR16", "sampleRateHertz": 16000,
                                              **(data["create"].get("audioConfig") or {})},
                              **{k: v for k, v in data["create"].items() if k not in ("voiceId", "modelId", "audioConfig")}}
                    contexts[context_id] = _Context(config)
                    await ws.send(self._result(context_id, "contextCreated", config))
                    continue
                context = contexts.get(context_id)
                if context is None:
                    await self._refuse(ws, context_id, 5, f"context {context_id[:40]} not found")  # NOT_FOUND
                    return
                if "send_text" in data:
                    text = str(data["send_text"].get("text", ""))
                    if len(text) > MAX_TEXT:
                        await self._refuse(ws, context_id, INVALID_ARGUMENT,
                                           f"send_text carries at most {MAX_TEXT} characters")
                        return
                    context.buffer.append(text)
                    threshold = context.config.get("bufferCharThreshold")
                    if "flush_context" in data["send_text"] or (threshold and len("".join(context.buffer)) >= threshold):
                        if not await self._flush(ws, lock, context_id, context, arrived):
                            return
                    elif context.timer is None:
                        context.timer = asyncio.create_task(self._flush_later(ws, lock, context_id, context))
                elif "flush_context" in data:
                    if not await self._flush(ws, lock, context_id, context, arrived):
                        return
                elif "update_config" in data:
                    context.config.update({k: v for k, v in data["update_config"].items() if k != "modelId"})
                    await ws.send(self._result(context_id, "contextUpdated", context.config))
                elif "close_context" in data:
                    if context.buffer and not await self._flush(ws, lock, context_id, context, arrived):
                        return
                    del contexts[context_id]
                    if self.tts.fault != "no_final":
                        await ws.send(self._result(context_id, "contextClosed", {}))
        finally:
            for context in contexts.values():
                if context.timer is not None:
                    context.timer.cancel()

    @staticmethod
    def _create_problem(create, contexts: dict, context_id: str) -> tuple[int, str] | None:
        if not isinstance(create, dict) or not create.get("voiceId") or create.get("modelId") not in TTS_MODELS:
            return INVALID_ARGUMENT, "create needs a voiceId and a modelId of " + ", ".join(TTS_MODELS)
        if (create.get("audioConfig") or {}).get("audioEncoding", "LINEAR16") not in ("LINEAR16", "PCM"):
            return INVALID_ARGUMENT, "this emulator speaks audioEncoding LINEAR16 and PCM only"
        if context_id in contexts:
            return 6, f"context {context_id[:40]} already exists"  # ALREADY_EXISTS
        if len(contexts) >= MAX_CONTEXTS:
            return RESOURCE_EXHAUSTED, f"at most {MAX_CONTEXTS} contexts a connection"
        return None

    @staticmethod
    def _result(context_id: str | None, event: str, body, status: dict = OK_STATUS) -> str:
        return json.dumps({"result": {"contextId": context_id, event: body, "status": status}})

    async def _refuse(self, ws, context_id: str | None, code: int, message: str) -> None:
        await ws.send(json.dumps({"result": {"contextId": context_id, "status": _status(code, message)}}))
        await ws.close(1008, "refused")

    async def _flush_later(self, ws, lock, context_id: str, context: _Context) -> None:
        """The buffer's auto-flush, `maxBufferDelayMs` after its first unflushed text."""
        delay = context.config.get("maxBufferDelayMs", MAX_BUFFER_DELAY_MS)
        await asyncio.sleep(delay / 1000)
        context.timer = None
        with contextlib.suppress(websockets.ConnectionClosed):
            await self._flush(ws, lock, context_id, context, time.perf_counter_ns(), timer=False)

    async def _flush(self, ws, lock, context_id: str, context: _Context, arrived: int, timer: bool = True) -> bool:
        """Synthesize the buffer: its audio chunks, then flushCompleted; False when a fault ended the stream."""
        if timer and context.timer is not None:
            context.timer.cancel()
            context.timer = None
        text, s = "".join(context.buffer), self.tts
        context.buffer.clear()
        audio = context.config["audioConfig"]
        rate, wav = int(audio["sampleRateHertz"]), audio["audioEncoding"] == "LINEAR16"
        async with lock:
            chunks, first_speech = await asyncio.to_thread(self._chunks.get, text, rate)
            encoded = [b64(_wav(c, rate) if wav else c) for c in chunks]
            usage = {"processedCharactersCount": len(text), "modelId": context.config["modelId"]}
            words = text.split()
            for i, (data, at) in enumerate(zip(encoded, s.send_times(arrived, text, len(chunks), first_speech))):
                await sleep_until(at)
                if s.fault == "malformed" and i == 1:
                    await ws.send('{"result": {"audioChunk": ')
                elif breaks(s.fault) and i == 2:
                    await break_off(ws, s.fault)
                    return False
                chunk = {"audioContent": data, "usage": usage}
                if i == 0 and context.config.get("timestampType") == "WORD" and words:
                    step = s.speech_ms / 1000 / len(words)
                    start = s.leading_silence_ms / 1000
                    chunk["timestampInfo"] = {"wordAlignment": {
                        "words": words, "wordStartTimeSeconds": [round(start + k * step, 3) for k in range(len(words))],
                        "wordEndTimeSeconds": [round(start + (k + 1) * step, 3) for k in range(len(words))]}}
                if i == 0:
                    record(self, text, "first_audio")
                if i == first_speech:
                    record(self, text, "first_speech")
                await ws.send(self._result(context_id, "audioChunk", chunk))
            if s.fault != "no_final":
                await ws.send(self._result(context_id, "flushCompleted", {}))
        return True

    # --- STT ---

    async def _listen(self, ws) -> None:
        speaker: asyncio.Task | None = None
        try:
            first = json.loads(await ws.recv())
            config = first.get("transcribeConfig") or first.get("transcribe_config")
            problem = self._config_problem(config)
            if problem:
                await self._stt_error(ws, INVALID_ARGUMENT, problem)
                return
            rate = int(config["sampleRateHertz"]) * int(config.get("numberOfChannels", 1))
            words_wanted = bool(config.get("includeWordTimestamps"))
            audio = bytearray()
            async for message in ws:
                data = json.loads(message)
                chunk = data.get("audioChunk") or data.get("audio_chunk")
                if chunk is not None:
                    pcm = base64.b64decode(chunk.get("content", ""))
                    ms = len(pcm) / 2 / rate * 1000
                    if not MIN_CHUNK_MS <= round(ms, 3) <= MAX_CHUNK_MS:
                        await self._stt_error(ws, INVALID_ARGUMENT, f"invalid audio chunk duration: {ms:.1f} ms")
                        return
                    audio += pcm
                    if speaker is None:
                        speaker = asyncio.create_task(self._transcribe(ws, time.perf_counter_ns(), pcm, words_wanted))
                elif "closeStream" in data or "close_stream" in data:
                    saw(self, "stream", {"encoding": config["audioEncoding"], "sample_rate": rate, "audio": audio.hex()})
                elif not ("endTurn" in data or "end_turn" in data):
                    await self._stt_error(ws, INVALID_ARGUMENT, "expected audioChunk, endTurn or closeStream")
                    return
        except (ValueError, AttributeError, TypeError, KeyError):
            await self._stt_error(ws, INVALID_ARGUMENT, "the message is not the protocol's")
        finally:
            if speaker is not None:
                speaker.cancel()

    @staticmethod
    def _config_problem(config) -> str | None:
        if not isinstance(config, dict):
            return "the first message must be transcribeConfig"
        if config.get("modelId") not in STT_MODELS:
            return "modelId must be one of " + ", ".join(STT_MODELS)
        if config.get("audioEncoding") != "LINEAR16":
            return "this emulator speaks audioEncoding LINEAR16 only"
        if config.get("modelId") == "inworld/inworld-stt-1" and (
                config.get("sampleRateHertz") != 16000 or config.get("numberOfChannels", 1) != 1):
            return "inworld/inworld-stt-1 takes 16 kHz mono"
        return None

    async def _stt_error(self, ws, code: int, message: str) -> None:
        await ws.send(json.dumps({"error": _status(code, message)}))
        await ws.close(1008, "refused")

    async def _transcribe(self, ws, t0: int, first_chunk: bytes, words_wanted: bool) -> None:
        s = self.stt
        turn = s.turn(first_chunk, t0)
        start, end = s.anchors_for(first_chunk)

        def result(k: int, final: bool) -> str:
            transcription = {"transcript": " ".join(turn.words[:k]), "isFinal": final}
            if words_wanted:
                step = (end - start) / max(1, len(turn.words))
                transcription["wordTimestamps"] = [
                    {"word": w, "startTime": round(start + i * step, 3), "endTime": round(start + (i + 1) * step, 3),
                     "confidence": 0.99} for i, w in enumerate(turn.words[:k])]
            return json.dumps({"result": {"transcription": transcription}})

        async def partial(k: int) -> None:
            if k == 1:
                await ws.send(json.dumps({"result": {"speechStarted": {"startTimeMs": int(start * 1000),
                                                                       "confidence": 0.95}}}))
            await ws.send(result(k, False))

        if not await send_partials(self, ws, turn, s.fault, '{"result": {"transcription": ', partial) \
                or s.fault == "no_final":
            return
        await sleep_until(turn.final_at)
        record(self, turn.transcript, "final")
        await ws.send(result(len(turn.words), True))
        await ws.send(json.dumps({"result": {"speechStopped": {"silenceDurationMs": int(max(0.0, s.final_ms))}}}))
