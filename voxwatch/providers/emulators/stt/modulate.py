"""A loopback emulator of Modulate's Velma-2 streaming speech to text (`/api/<model>` WebSocket).

What it speaks (sources in voxwatch/providers/stt/modulate.py and docs/vendor-notes/stt-modulate.md,
read 2026-12-07):
- The path names the model (`MODELS`); any other path is HTTP 404. The key is the `api_key` query
  parameter; a missing or wrong one is HTTP 401 before the upgrade (the status of Modulate's HTTP
  endpoints for a bad key, /guides/authentication; how the WebSocket refuses is not documented).
- Raw audio needs `audio_format`, `sample_rate` (8000, 11025, 16000, 22050, 32000, 44100, 48000 or
  96000) and `num_channels` (1-8) in the query; of the raw formats this emulator speaks s16le and
  mulaw. A bad one is answered `{"type": "error", "error": ...}` and a close (1000: Modulate documents
  no close codes).
- Binary frames are the audio. From the first frame's arrival (the emulator's t0) it sends
  `partial_utterance` messages (the utterance so far) on the STTScenario cadence from
  `first_partial_ms` after the start of speech - on `velma-2-stt-streaming` only when the query asks
  `partial_results=true` (the default is false), on the English v2 model always - and the
  `utterance` (with `utterance_uuid`, `text`, `start_ms`, `duration_ms`, `speaker`, `language`)
  `final_ms` after the end of speech. English v2 sends "one complete final transcript at
  end-of-stream", so there the utterance waits for the empty text frame too.
- The empty text frame `""` ends the audio: it notes the format, rate and every byte received (ledger
  `seen:stream`), lets the pending utterance go at its time (unless `no_final` withholds it), sends
  `{"type": "done", "duration_ms"}` (the audio received) and closes normally ("The connection closes
  automatically"). A JSON object in a text frame (Pipecat's config frame) is accepted and ignored.
- Faults (faults.py): the handshake ones; `malformed`, `disconnect` and `close:<code>` at the first
  partial (at the utterance when no partials are asked for); `no_final`. Not emulated: the
  per-organization concurrency and monthly usage limits, whose numbers and WebSocket form Modulate
  does not publish.

`DOCUMENTED` is Modulate's documented session, replayed through the adapter by tests/test_modulate.py.
No complete server sequence quoted by Modulate was retrievable (the stored pages stop inside their
first utterance example), so it is built from what Modulate does quote:
- the connection flow of docs.modulate.ai/api-reference/stt/streaming: "2. Stream raw audio as binary
  WebSocket frames. Frames can be any size. 3. Receive utterance JSON messages as speech is
  transcribed. 4. Send an empty text frame ("") to signal end of audio. 5. Receive a done message
  containing total audio duration. 6. The connection closes automatically.";
- its utterance message, which begins `{"type": "utterance", "utterance": {"utterance_uuid": "a1b2c3d`;
- the utterance fields and example of docs.modulate.ai/get-started/stt (`"text": "Hello everyone.
  Welcome to the meeting."`, `"start_ms": 0`, 4200 ms, `"speaker": 1`, `"language": "en"`), with
  streaming's `duration_ms` for batch's `end_ms`.
The `done` field name `duration_ms` is Coval's reading (coval-ai/benchmarks runner/tests/providers/stt/
fixtures/modulate/events-success.json @ bf95d1b, Apache-2.0), not Modulate's quote.
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
from voxwatch.providers.emulators.faults import break_off, breaks, websocket_refusal
from voxwatch.providers.emulators.ledger import record, saw
from voxwatch.providers.emulators.replay import Close, Expect, Send
from voxwatch.providers.emulators.scenario import STTScenario, scenario_for, send_partials

PREFIX = "/api/"
MULTILINGUAL, ENGLISH_V2 = "velma-2-stt-streaming", "velma-2-stt-streaming-english-v2"
MODELS = (MULTILINGUAL, ENGLISH_V2)
RATES = (8000, 11025, 16000, 22050, 32000, 44100, 48000, 96000)
BYTES_PER_SAMPLE = {"s16le": 2, "mulaw": 1}  # the raw formats this emulator speaks
BROKEN = '{"type": "partial_utterance", "partial_utterance": '

DOCUMENTED = [
    Expect('binary audio frames, then the empty text frame ""', lambda m: m == ""),
    Send({"type": "utterance", "utterance": {"utterance_uuid": "a1b2c3d4-e5f6-7890-abcd-ef1234567890",
                                             "text": "Hello everyone. Welcome to the meeting.", "start_ms": 0,
                                             "duration_ms": 4200, "speaker": 1, "language": "en"}}),
    Send({"type": "done", "duration_ms": 4200}),
    Close(1000),
]


def _error(message: str) -> str:
    return json.dumps({"type": "error", "error": message})


def _query_problem(query: dict[str, str]) -> str | None:
    """What is wrong with a stream's audio parameters, or None."""
    if query.get("audio_format") not in BYTES_PER_SAMPLE:
        return "audio_format must be a raw format this emulator speaks: " + ", ".join(BYTES_PER_SAMPLE)
    if not query.get("sample_rate", "").isdigit() or int(query["sample_rate"]) not in RATES:
        return "sample_rate must be one of " + ", ".join(map(str, RATES))
    if not query.get("num_channels", "").isdigit() or not 1 <= int(query["num_channels"]) <= 8:
        return "num_channels must be 1 to 8 for raw audio"
    return None


class _Stream:
    """One session's state shared by its reader and its speaker."""

    def __init__(self, model: str, query: dict[str, str]) -> None:
        self.model = model
        self.query = query
        self.audio = bytearray()
        self.ended = asyncio.Event()  # the empty text frame arrived
        self.speaker: asyncio.Task | None = None

    @property
    def partials(self) -> bool:
        return self.model == ENGLISH_V2 or self.query.get("partial_results") == "true"

    def audio_ms(self) -> int:
        rate = int(self.query["sample_rate"]) * int(self.query["num_channels"])
        return int(len(self.audio) * 1000 / (rate * BYTES_PER_SAMPLE[self.query["audio_format"]]))


class ModulateEmulator:
    def __init__(self, scenario) -> None:
        self.scenario: STTScenario = scenario_for(scenario, "stt")

    def process_request(self, connection, request):
        parts = urlsplit(request.path)
        if not parts.path.startswith(PREFIX) or parts.path[len(PREFIX):] not in MODELS:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        if parse_qs(parts.query).get("api_key", [""])[-1] != self.scenario.api_key:
            return connection.respond(HTTPStatus.UNAUTHORIZED, "invalid or missing api_key\n")
        return websocket_refusal(connection, self.scenario.fault)

    async def handle(self, ws) -> None:
        parts = urlsplit(ws.request.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        stream = _Stream(parts.path[len(PREFIX):], query)
        try:
            problem = _query_problem(query)
            if problem:
                await ws.send(_error(problem))
                await ws.close()
                return
            await self._serve(ws, stream)
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it
        finally:
            if stream.speaker is not None:
                stream.speaker.cancel()

    async def _serve(self, ws, stream: _Stream) -> None:
        async for message in ws:
            if isinstance(message, bytes):
                stream.audio += message
                if stream.speaker is None and message:
                    stream.speaker = asyncio.create_task(self._speak(ws, time.perf_counter_ns(), message, stream))
                continue
            if message != "":
                continue  # a JSON config frame (Pipecat's): accepted, its settings are the query's here
            stream.ended.set()
            saw(self, "stream", {"encoding": stream.query["audio_format"],
                                 "sample_rate": int(stream.query["sample_rate"]), "audio": stream.audio.hex()})
            if stream.speaker is not None:
                if self.scenario.fault == "no_final":
                    stream.speaker.cancel()
                else:
                    await stream.speaker
            await ws.send(json.dumps({"type": "done", "duration_ms": stream.audio_ms()}))
            await ws.close()
            return

    async def _speak(self, ws, t0: int, first_chunk: bytes, stream: _Stream) -> None:
        s = self.scenario
        turn = s.turn(first_chunk, t0)

        async def partial(k: int) -> None:
            await ws.send(json.dumps({"type": "partial_utterance",
                                      "partial_utterance": {"text": " ".join(turn.words[:k])}}))

        if stream.partials:
            if not await send_partials(self, ws, turn, s.fault, BROKEN, partial):
                return
        elif breaks(s.fault):
            await sleep_until(turn.final_at)
            await break_off(ws, s.fault)
            return
        if s.fault == "no_final":
            return
        await sleep_until(turn.final_at)
        if stream.model == ENGLISH_V2:
            await stream.ended.wait()  # its one final comes at the end of the stream
        if s.fault == "malformed" and not stream.partials:
            await ws.send(BROKEN)
        start, end = s.anchors_for(first_chunk)
        record(self, turn.transcript, "final")
        await ws.send(json.dumps({"type": "utterance", "utterance": {
            "utterance_uuid": str(uuid.uuid4()), "text": turn.transcript, "start_ms": int(start * 1000),
            "duration_ms": int((end - start) * 1000), "speaker": 1, "language": "en"}}))
