"""A loopback emulator of Deepgram's live transcription (`/v1/listen`), Flux (`/v2/listen`, in
emulators/stt/deepgram_flux.py) and Aura text-to-speech (`/v1/speak`) WebSockets, all on one port as
Deepgram serves them on one host.

Both check `Authorization: Token <key>`. `/v1/listen` takes binary frames in the query's
`encoding` (linear16, or mulaw for the phone condition) at its `sample_rate`, in the `language`
the query names (English when it names none, as Deepgram's default; a language the model does not
take closes the stream with Deepgram's 1008 `DATA-0000`), and notes what it received with them (ledger `seen:listen`) when the stream closes; it sends interim
`Results` (`is_final: false`) on a cadence from `first_partial_ms` after the start of speech, and
the final `final_ms` after the end of speech: `from_finalize` when a `Finalize` had arrived, else
`speech_final` (endpointing closed it). A `Finalize` that finds the final already sent (nothing
left to process) gets an empty `from_finalize` final, or, with the scenario's
`empty_finalize_reply` off, no reply at all: Deepgram documents that reply as usual but not
guaranteed when no significant audio is left. A scenario's `script` replaces the cadence: its
partials and segment finals each at its time after the end of speech (Deepgram's finals come per
segment, `is_final`; interim results hold the current segment). `CloseStream` finishes what is pending (the final
goes at its scheduled time, unless a fault withholds it), then `Metadata` and a normal close.

`/v1/speak` opens with a `Metadata` message; buffers `Speak` text; on `Flush` sends linear16
binary frames at the requested sample rate - leading silence, then the speech (a sharp-onset tone
or eSpeak NG) - the first `ttfb_ms` after the Flush arrived and the rest every `send_every_ms`
(the speech `gaming_delay_ms` after the silence, when set), then `{"type": "Flushed",
"sequence_id"}`; `Clear` empties the buffer (`Cleared`); `Close` flushes and closes normally.
A reply is sent while the socket is read, so `Speak` pieces may arrive one by one before the `Flush`
(streamed text: the reply starts `ttfb_ms` after the Flush) and a `Clear` may cut a reply under way:
the chunks due within the scenario's `cancel_ms` of its arrival still go, then `Cleared` goes
`cancel_ms` after it (emulators.cancel; the ledger keys the cancel by the reply's text).
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
from voxwatch.providers.stt.deepgram import LANGUAGES

from voxwatch.providers.emulators.faults import break_off, breaks, websocket_refusal
from voxwatch.providers.emulators.stt.deepgram_flux import flux_session, handshake_problem
from voxwatch.providers.emulators.cancel import Cancel
from voxwatch.providers.emulators.ledger import CLEARED, record, saw
from voxwatch.providers.emulators.scenario import STTScenario, TTSScenario, scenario_for
from voxwatch.providers.emulators.speech import send_binary_reply, warmed

LISTEN, SPEAK = "/v1/listen", "/v1/speak"
FLUX = "/v2/listen"
LISTEN_ENCODINGS = ("linear16", "mulaw")  # of Deepgram's raw encodings, the ones voxwatch sends


def _results(text: str, is_final: bool, from_finalize: bool = False) -> str:
    return json.dumps({"type": "Results", "channel_index": [0, 1], "duration": 0.0, "start": 0.0, "is_final": is_final,
                       "speech_final": is_final and not from_finalize, "from_finalize": from_finalize,
                       "channel": {"alternatives": [{"transcript": text, "confidence": 0.99, "words": []}]}})


class DeepgramEmulator:
    def __init__(self, scenario) -> None:
        self.stt: STTScenario | None = scenario_for(scenario, "stt")
        self.tts: TTSScenario | None = scenario_for(scenario, "tts")
        self._chunks = warmed(self.tts, 24000)

    def process_request(self, connection, request):
        scenario = {LISTEN: self.stt, SPEAK: self.tts, FLUX: self.stt}.get(request.path.split("?")[0])
        if scenario is None:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        if request.headers.get("Authorization") != f"Token {scenario.api_key}":
            return connection.respond(HTTPStatus.UNAUTHORIZED, "invalid credentials\n")
        if request.path.split("?")[0] == FLUX and (problem := handshake_problem(urlsplit(request.path).query)):
            return connection.respond(HTTPStatus.BAD_REQUEST, problem + "\n")
        return websocket_refusal(connection, scenario.fault)

    async def handle(self, ws) -> None:
        try:
            if ws.request.path.split("?")[0] == SPEAK:
                await self._speak_session(ws)
            elif ws.request.path.split("?")[0] == FLUX:
                await flux_session(self, self.stt, ws, urlsplit(ws.request.path).query)
            else:
                await self._listen_session(ws)
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it

    # --- /v1/listen ---

    async def _listen_session(self, ws) -> None:
        query = parse_qs(urlsplit(ws.request.path).query)
        encoding, rate = query.get("encoding", [""])[0], query.get("sample_rate", [""])[0]
        model, language = query.get("model", ["nova-3"])[0], query.get("language", ["en"])[0]
        if encoding not in LISTEN_ENCODINGS or not rate.isdigit():
            await ws.close(1008, "DATA-0000: raw audio needs encoding (linear16 or mulaw here) and sample_rate")
            return
        if language not in LANGUAGES.get(model, {"en"}):
            await ws.close(1008, f"DATA-0000: no {model} model for language {language}"[:120])
            return
        finalized = asyncio.Event()
        final_sent = asyncio.Event()
        sender: asyncio.Task | None = None
        audio = bytearray()
        try:
            async for message in ws:
                if isinstance(message, bytes):
                    audio += message
                    if sender is None:
                        sender = asyncio.create_task(self._transcribe(ws, time.perf_counter_ns(), message, finalized,
                                                                      final_sent))
                    continue
                kind = json.loads(message).get("type")
                if kind == "Finalize":
                    finalized.set()
                    if final_sent.is_set() and self.stt.empty_finalize_reply:
                        await ws.send(_results("", True, from_finalize=True))
                elif kind == "CloseStream":
                    saw(self, "listen", {"encoding": encoding, "sample_rate": int(rate), "language": language,
                                         "audio": audio.hex()})
                    if sender is not None:
                        await sender  # the results still pending go first
                    await ws.send(json.dumps({"type": "Metadata", "request_id": str(uuid.uuid4()), "channels": 1}))
                    break
        finally:
            if sender is not None:
                sender.cancel()

    async def _transcribe(self, ws, t0: int, first_chunk: bytes, finalized: asyncio.Event,
                          final_sent: asyncio.Event) -> None:
        s = self.stt
        if s.script:
            await self._scripted(ws, t0, first_chunk, finalized, final_sent)
            return
        turn = s.turn(first_chunk, t0)
        async for k in turn.partials():
            if s.fault == "malformed":
                await ws.send('{"type": "Results", "channel": ')
            elif breaks(s.fault):
                await break_off(ws, s.fault)
                return
            if k == 1:
                record(self, turn.transcript, "first_partial")
            await ws.send(_results(" ".join(turn.words[:k]), False))
        if s.fault == "no_final":
            return
        await sleep_until(turn.final_at)
        record(self, turn.transcript, "final")
        if not finalized.is_set():  # endpointing's speech_final: the end of turn (METHOD "STT end of turn")
            record(self, turn.transcript, "end_of_turn")
        await ws.send(_results(turn.transcript, True, from_finalize=finalized.is_set()))
        final_sent.set()

    async def _scripted(self, ws, t0: int, first_chunk: bytes, finalized: asyncio.Event,
                        final_sent: asyncio.Event) -> None:
        """The scenario's scripted results, each at its time: interim `Results` for the current segment,
        `is_final` ones closing it (the last `from_finalize` when a Finalize had arrived)."""
        steps = self.stt.scripted(first_chunk, t0)
        for i, (at, final, text) in enumerate(steps):
            await sleep_until(at)
            if i == 0:
                record(self, self.stt.transcript_for(first_chunk), "first_partial")
            last = i == len(steps) - 1
            if last:
                record(self, self.stt.transcript_for(first_chunk), "final")
            await ws.send(_results(text, final, from_finalize=last and finalized.is_set()))
        final_sent.set()

    # --- /v1/speak ---

    async def _speak_session(self, ws) -> None:
        query = parse_qs(urlsplit(ws.request.path).query)
        model = query.get("model", ["aura-asteria-en"])[0]
        if query.get("encoding", ["linear16"])[0] != "linear16":
            await ws.close(1008, "DATA-0000: this emulator speaks linear16 only")
            return
        rate = int(query.get("sample_rate", ["24000"])[0])
        await ws.send(json.dumps({"type": "Metadata", "request_id": str(uuid.uuid4()), "model_name": model,
                                  "model_version": "emulator", "model_uuid": str(uuid.uuid4())}))
        parts: list[str] = []
        sequence = 0
        reply: asyncio.Task | None = None  # the reply under way, sent while the socket is read
        cancel: Cancel | None = None  # its cancel
        try:
            async for message in ws:
                arrived = time.perf_counter_ns()
                kind = json.loads(message).get("type") if isinstance(message, str) else None
                if kind == "Speak":
                    parts.append(str(json.loads(message).get("text", "")))
                elif kind in ("Flush", "Close"):
                    if parts or kind == "Flush":
                        if reply is not None and not await reply:
                            return
                        text = "".join(parts)
                        cancel = Cancel(self, text, self.tts.cancel_ms)
                        reply = asyncio.create_task(self._say(ws, arrived, text, rate, sequence, cancel))
                        sequence += 1
                    parts.clear()
                    if kind == "Close":
                        await reply if reply is not None else None
                        await ws.close()
                        return
                elif kind == "Clear":
                    parts.clear()
                    if cancel is not None and cancel.arrived is None:
                        cancel.arrive()
                        await reply
                        await sleep_until(cancel.until_ns)
                        record(self, cancel.key, CLEARED)
                    await ws.send(json.dumps({"type": "Cleared", "sequence_id": sequence}))
                else:
                    await ws.send(json.dumps({"type": "Warning", "code": "UNKNOWN_MESSAGE_TYPE",
                                              "description": "Expected Speak, Flush, Clear or Close."}))
        finally:
            if reply is not None:
                reply.cancel()

    async def _say(self, ws, arrived: int, text: str, rate: int, sequence: int, cancel: Cancel) -> bool:
        """One flush's audio, then `Flushed` (none once cancelled); False when a fault ended the stream."""
        s = self.tts
        chunks, first_speech = self._chunks.get(text, rate)
        if not await send_binary_reply(ws, self, text, chunks, first_speech, s, arrived, '{"type": "Flushed", ',
                                       cancel):
            return cancel.arrived is not None
        if cancel.arrived is not None:
            return True
        if s.fault != "no_final":
            await ws.send(json.dumps({"type": "Flushed", "sequence_id": sequence}))
        return True

