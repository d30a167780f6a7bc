"""A loopback emulator of Cartesia's TTS WebSocket (`/tts/websocket`) and its realtime speech to
text, the manual-finalize endpoint (`/stt/websocket`), on one port as api.cartesia.ai serves them.

Both check `Authorization: Bearer <key>` and the `Cartesia-Version` header (HTTP 401 / 400 on the
upgrade otherwise).

TTS: checks that a request's
`language` (English when absent) is an ISO 639-1 code; for each generation request sends base64 `pcm_s16le` `chunk` messages at the requested sample rate - leading silence,
then the speech (a sharp-onset tone, or eSpeak NG saying the transcript) - the first `ttfb_ms` after the request arrived and the rest
every `send_every_ms` (faster than real time; the speech `gaming_delay_ms` after the silence, when
set), then a `done` message for the context. Streamed text: inputs with `continue: true` are
buffered per context (transcripts concatenated verbatim) until its input with `continue: false`,
whose arrival starts the reply; replies go while the socket is read, so `{"context_id", "cancel":
true}` cuts one under way: the chunks due within the scenario's `cancel_ms` of its arrival still go,
then nothing, not even `done` (no acknowledgement of a cancel was found documented).

STT (Ink; sources: those of stt/cartesia.py): the query's `model` (ink-2, ink-whisper,
ink-whisper-2025-06-04), `encoding` (of the SDK's STTEncoding, this emulator speaks pcm_s16le and
pcm_mulaw) and `sample_rate` are required, `language` is `en` for ink-2; a bad one is answered with
the API reference's error message (`model_not_found` for a model) and a close. Binary frames are the
audio. From the first frame's arrival (the emulator's t0) it sends interim `transcript`s
(`is_final: false`, the words so far) on the STTScenario cadence from `first_partial_ms` after the
start of speech. The final (a delta: the words since the last final, with a trailing space, `words`
timed in seconds, `duration`) goes `final_ms` after the end of speech, but on this endpoint never
before the `finalize` that asks for it: ink-2 finalizes only on request, so a final the scenario puts
earlier goes when `finalize` arrives; ink-whisper also finalizes on silence, so its goes on time.
`flush_done` follows the finals of a finalize; `close` (or the older `done`) notes what was received
(ledger `seen:stream`), sends what is pending, then `done`, and closes.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

import websockets

from voxwatch.foundation.clock import sleep_until

from voxwatch.providers.emulators.faults import websocket_refusal
from voxwatch.providers.emulators.cancel import Cancel
from voxwatch.providers.emulators.ledger import record, saw
from voxwatch.providers.emulators.replay import Expect, Send
from voxwatch.providers.emulators.scenario import Scenarios, STTScenario, TTSScenario, scenario_for, send_partials
from voxwatch.providers.emulators.speech import b64, paced, warmed


STT_MODELS = ("ink-2", "ink-whisper", "ink-whisper-2025-06-04")
STT_ENCODINGS = ("pcm_s16le", "pcm_s32le", "pcm_f16le", "pcm_f32le", "pcm_mulaw", "pcm_alaw")
BYTES_PER_SAMPLE = {"pcm_s16le": 2, "pcm_mulaw": 1}  # the encodings this emulator speaks

# The documented exchange, replayed through the Ink adapter by tests/test_cartesia_ink.py: the official
# SDK's test fixture, cartesia-ai/cartesia-python tests/lib/resources/stt/test_manual_finalize.py @
# 30f08c77 (2026-08-14), test_iter_yields_events_until_clean_close: the client connects to
# /stt/websocket with encoding pcm_s16le, model ink-2, sample_rate 16000 and sends "finalize" and
# "close"; the server's queue is _TRANSCRIPT_PAYLOAD {"type": "transcript", "request_id": "r1", "text":
# "hello ", "is_final": True}, _FLUSH_DONE_PAYLOAD {"type": "flush_done", "request_id": "r1"},
# _DONE_PAYLOAD {"type": "done", "request_id": "r1"}, then a clean close.
INK_DOCUMENTED = [
    Expect('the text command "finalize"', lambda m: m == "finalize"),
    Send({"type": "transcript", "request_id": "r1", "text": "hello ", "is_final": True}),
    Send({"type": "flush_done", "request_id": "r1"}),
    Expect('the text command "close"', lambda m: m == "close"),
    Send({"type": "done", "request_id": "r1"}),
]


def _stt_error(title: str, message: str, error_code: str) -> str:
    """An error as the API reference's example gives one (status_code 400)."""
    return json.dumps({"type": "error", "title": title, "message": message, "error_code": error_code,
                       "doc_url": "https://docs.cartesia.ai/build-with-cartesia/stt-models/latest",
                       "status_code": 400, "request_id": str(uuid.uuid4())})


class _Ink:
    """One Ink session's state, shared by its reader and its speaker."""

    def __init__(self, request_id: str, model: str) -> None:
        self.request_id, self.model = request_id, model
        self.release = asyncio.Event()  # a finalize or a close arrived: ink-2 may send its final
        self.finalized = False  # a finalize arrived: its finals are followed by flush_done
        self.final_sent = asyncio.Event()
        self.speaker: asyncio.Task | None = None
        self.audio = bytearray()


class CartesiaEmulator:
    def __init__(self, scenario: TTSScenario | Scenarios) -> None:
        self.scenario = scenario_for(scenario, "tts")
        self.stt: STTScenario | None = scenario_for(scenario, "stt")
        self._chunks = warmed(self.scenario, 24000, b64)

    def process_request(self, connection, request):
        scenario = {"/tts/websocket": self.scenario, "/stt/websocket": self.stt}.get(request.path.split("?")[0])
        if scenario is None:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        if request.headers.get("Authorization") != f"Bearer {scenario.api_key}":
            return connection.respond(HTTPStatus.UNAUTHORIZED, "invalid API key\n")
        if not request.headers.get("Cartesia-Version"):
            return connection.respond(HTTPStatus.BAD_REQUEST, "Cartesia-Version header required\n")
        return websocket_refusal(connection, scenario.fault)

    async def handle(self, ws) -> None:
        try:
            if ws.request.path.split("?")[0] == "/stt/websocket":
                await self._listen(ws)
            else:
                await self._serve(ws)
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it

    # --- Ink STT ---

    async def _listen(self, ws) -> None:
        query = {k: v[-1] for k, v in parse_qs(urlsplit(ws.request.path).query).items()}
        model, encoding, rate = query.get("model"), query.get("encoding"), query.get("sample_rate", "")
        if model not in STT_MODELS:
            await ws.send(_stt_error("Invalid model", "The model is not valid, make sure it is a valid model ID.",
                                     "model_not_found"))
            await ws.close()
            return
        if encoding not in STT_ENCODINGS or not rate.isdigit() or encoding not in BYTES_PER_SAMPLE or (
                model == "ink-2" and query.get("language", "en") != "en"):
            await ws.send(_stt_error("Invalid parameters", "encoding (pcm_s16le or pcm_mulaw here) and sample_rate "
                                     "are required; ink-2 takes language en", "invalid_request"))
            await ws.close()
            return
        ink = _Ink(str(uuid.uuid4()), model)
        try:
            async for message in ws:
                if isinstance(message, bytes):
                    ink.audio += message
                    if ink.speaker is None:
                        ink.speaker = asyncio.create_task(self._transcribe(ws, time.perf_counter_ns(), message, ink))
                elif message == "finalize":
                    ink.finalized = True
                    ink.release.set()
                    if ink.speaker is None or ink.final_sent.is_set():
                        await self._flush_done(ws, ink)
                elif message in ("close", "done"):
                    saw(self, "stream", {"encoding": encoding, "sample_rate": int(rate), "audio": ink.audio.hex()})
                    ink.release.set()
                    if ink.speaker is not None:
                        await ink.speaker  # what is pending goes first
                    await ws.send(json.dumps({"type": "done", "request_id": ink.request_id}))
                    await ws.close()
                    return
                else:
                    await ws.send(_stt_error("Invalid message", 'expected audio, "finalize" or "close"',
                                             "invalid_request"))
        finally:
            if ink.speaker is not None:
                ink.speaker.cancel()

    async def _flush_done(self, ws, ink: _Ink) -> None:
        if self.stt.fault != "no_final":
            await ws.send(json.dumps({"type": "flush_done", "request_id": ink.request_id}))

    async def _transcribe(self, ws, t0: int, first_chunk: bytes, ink: _Ink) -> None:
        s = self.stt
        turn = s.turn(first_chunk, t0)

        async def partial(k: int) -> None:
            await ws.send(json.dumps({"type": "transcript", "request_id": ink.request_id, "is_final": False,
                                      "text": " ".join(turn.words[:k])}))

        if not await send_partials(self, ws, turn, s.fault, '{"type": "transcript", "text": ', partial) \
                or s.fault == "no_final":
            return
        await sleep_until(turn.final_at)
        if ink.model == "ink-2":
            await ink.release.wait()  # the manual endpoint finalizes only on request
        start, end = s.anchors_for(first_chunk)
        step = (end - start) / max(1, len(turn.words))
        record(self, turn.transcript, "final")
        await ws.send(json.dumps({
            "type": "transcript", "request_id": ink.request_id, "is_final": True, "text": turn.transcript + " ",
            "duration": round(end + s.final_ms / 1000, 3), "language": "en",
            "words": [{"word": w, "start": round(start + i * step, 3), "end": round(start + (i + 1) * step, 3)}
                      for i, w in enumerate(turn.words)]}))
        ink.final_sent.set()
        if ink.finalized:
            await self._flush_done(ws, ink)

    # --- TTS ---

    async def _serve(self, ws) -> None:
        """Generation inputs, each context's buffered until its input with `continue: false`, whose
        reply is then sent while the socket is read (one reply after another); a cancel cuts its
        context's reply (emulators.cancel)."""
        pending: dict[str, list[str]] = {}  # a continued context's transcripts so far
        cancels: dict[str, Cancel] = {}
        reply: asyncio.Task | None = None
        try:
            async for message in ws:
                arrived = time.perf_counter_ns()
                request = json.loads(message)
                context = request.get("context_id")
                if request.get("cancel") is True:
                    if context in cancels and cancels[context].arrived is None:
                        cancels[context].arrive()
                    pending.pop(context, None)
                    continue
                try:
                    rate = int(request["output_format"]["sample_rate"])
                    transcript = str(request["transcript"])
                    language = request.get("language", "en")
                    if not (isinstance(language, str) and language.isalpha() and 2 <= len(language) <= 3):
                        raise ValueError("language")
                except (KeyError, TypeError, ValueError):
                    await ws.send(json.dumps({"type": "error", "done": True, "status_code": 400, "context_id": context,
                                              "title": "Invalid request",
                                              "message": "missing transcript or output_format, or a language that is "
                                                         "not an ISO 639-1 code"}))
                    continue
                if request.get("continue") is True:
                    pending.setdefault(context, []).append(transcript)
                    continue
                transcript = "".join(pending.pop(context, [])) + transcript
                cancels[context] = Cancel(self, transcript, self.scenario.cancel_ms)
                reply = asyncio.create_task(self._reply(ws, reply, arrived, context, transcript, rate, cancels[context]))
        finally:
            if reply is not None:
                reply.cancel()

    async def _reply(self, ws, before: asyncio.Task | None, arrived: int, context: str, transcript: str, rate: int,
                     cancel: Cancel) -> None:
        """One context's audio chunks, then `done` (none once cancelled: Cartesia sends nothing for a cancel)."""
        if before is not None:
            await before
        s = self.scenario
        chunks, first_speech = await asyncio.to_thread(self._chunks.get, transcript, rate)
        sent = 0
        async for i in paced(self, ws, s, transcript, len(chunks), first_speech, arrived,
                             '{"type": "chunk", "data": ', cancel):
            await ws.send(json.dumps({"type": "chunk", "data": chunks[i], "done": False, "status_code": 206,
                                      "step_time": 1, "context_id": context}))
            sent += 1
        if sent == len(chunks) and cancel.arrived is None and s.fault != "no_final":
            await ws.send(json.dumps({"type": "done", "done": True, "status_code": 206, "context_id": context}))
