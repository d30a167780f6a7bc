"""A loopback emulator of Rev AI's streaming speech-to-text WebSocket (`/speechtotext/v1/stream`).

What it speaks (sources in voxwatch/providers/stt/revai.py, read 2026-12-07):
- Everything is in the query string. The upgrade is accepted, then a missing or wrong
  `access_token` is closed with 4001, and a missing or unsupported `content_type` (or raw audio
  without `rate`, a `format` other than S16LE, a language outside Rev AI's list, a `transcriber`
  not in `TRANSCRIBERS`) with 4002, as Rev AI documents. The handshake faults refuse the upgrade itself.
- It opens with `{"type": "connected", "id": ...}`.
- From the first audio frame's arrival (the emulator's t0) it sends `partial` hypotheses on the
  STTScenario cadence from `first_partial_ms` after the start of speech: lower-case words without
  punctuation, each repeating its segment so far. A transcript of four words or more is finalized
  in two segments, the first mid-speech, as Rev AI closes segments as it goes; the last segment's
  `final` (text and `punct` elements, spaces and punctuation included, with `ts`, `end_ts` and
  `confidence` on text elements, seconds from the stream's start) goes `final_ms` after the end of
  speech.
- `EOS` (exactly) notes the content type and every byte received (ledger `seen:stream`), lets the
  final not yet sent go (at the scenario's time for it, which EOS does not move: the scenario is the
  truth) and closes 1000 `End of input. Closing`. Any other text frame is closed
  with 1007, as Rev AI does (`eos` included).
- Faults (faults.py): the handshake ones; `malformed`, `disconnect`, `close:<code>` at the first
  partial; `no_final` (no final hypothesis at all, and EOS gets no answer).
- Not emulated: the concurrency limit of 10 streams (what the eleventh gets is not documented in a
  page read), the 3-hour stream limit.

`DOC_SESSION` is the example session of Rev AI's documentation, replayed by the contract test
through the adapter (`RevAIEmulator(scenario, replay=True)`).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

import websockets

from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.emulators.faults import break_off, breaks, websocket_refusal
from voxwatch.providers.emulators.ledger import record, saw
from voxwatch.providers.emulators.scenario import STTScenario, scenario_for

PATH = "/speechtotext/v1/stream"
LANGUAGES = ("en", "fr", "de", "it", "ja", "ko", "cmn", "pt", "es")
TRANSCRIBERS = ("machine", "machine_v2")
MIN_SEGMENT_WORDS = 4  # transcripts this long are finalized in two segments
CLOSING = "End of input. Closing"

# https://docs.rev.ai/api/streaming/example-session (stored copy, read 2026-12-07), "an example of the
# messages between a client and Rev AI during a single WebSocket streaming session", after the
# client's GET /speechtotext/v1/stream?access_token=REVAI_ACCESS_TOKEN&content_type=audio/x-raw;
# layout=interleaved;rate=16000;format=S16LE;channels=1&language=en and the 101. Each item is what
# Rev AI sent before the client's next "[binary audio data]"; the messages are the page's, whitespace
# compacted, with the trailing commas it prints after `elements` in partials (stripped to send them).
# The stored copy is cut off inside the seventh message, so the replay ends at the sixth, and then
# ends the stream as the official SDK's test fixture does (revdotcom/revai-python-sdk
# tests/test_streamingclient.py @ d1ddb4a7, test_start_noparams_success: a close frame
# b'\x03\xe8End of input. Closing', code 1000, after the client's EOS).
DOC_SESSION: list[list[str]] = [
    ['{ "type": "connected", "id": "s1d24ax2fd21" }'],
    ['{ "type": "partial", "ts": 1.01, "end_ts": 1.55, "elements": [ { "type": "text", "value": "one" } ], }',
     '{ "type": "partial", "ts": 1.01, "end_ts": 2.2, "elements": [ { "type": "text", "value": "one" }, '
     '{ "type": "text", "value": "tooth" } ], }'],
    ['{ "type": "partial", "ts": 1.01, "end_ts": 3.2, "elements": [ { "type": "text", "value": "one" }, '
     '{ "type": "text", "value": "tooth" }, { "type": "text", "value": "three" } ], }',
     '{ "type": "final", "ts": 1.01, "end_ts": 3.2, "elements": [ '
     '{ "type": "text", "value": "One", "ts": 1.04, "end_ts": 1.55, "confidence": 1.0 }, '
     '{ "type": "punct", "value": " " }, '
     '{ "type": "text", "value": "two", "ts": 1.84, "end_ts": 2.15, "confidence": 1.0 }, '
     '{ "type": "punct", "value": "." } ] }'],
    ['{ "type": "partial", "ts": 3.56, "end_ts": 6.43, "elements": [ { "type": "text", "value": "five" }, '
     '{ "type": "text", "value": "sticks" } ], }'],
]


def as_json(printed: str) -> str:
    """A message as the page prints it, without the trailing commas that JSON does not allow."""
    return json.dumps(json.loads(re.sub(r",\s*([}\]])", r"\1", printed)))


def _params_problem(query: dict[str, str]) -> str | None:
    """Why Rev AI would refuse the query with 4002, or None."""
    kind, _, rest = query.get("content_type", "").partition(";")
    if kind not in ("audio/x-raw", "audio/x-flac", "audio/x-wav"):
        return "Invalid content type"
    if kind == "audio/x-raw":
        params = dict(p.split("=", 1) for p in rest.split(";") if "=" in p)
        if not params.get("rate", "").isdigit() or not 8000 <= int(params["rate"]) <= 48000:
            return "Invalid content type: rate"
        if params.get("format") != "S16LE" or params.get("layout") not in ("interleaved", "non-interleaved"):
            return "Invalid content type: format"
    if query.get("language", "en") not in LANGUAGES or query.get("transcriber", "machine") not in TRANSCRIBERS:
        return "Invalid request parameters"
    return None


def _pieces(word: str) -> tuple[str, str]:
    """A written word as Rev AI's elements carry it: the text, then its punctuation."""
    match = re.fullmatch(r"(.*?)([.,?!;:]*)", word)
    return match.group(1), match.group(2)


def _spoken(word: str) -> str:
    """A word as a partial carries it: lower case, no punctuation."""
    return _pieces(word)[0].lower()


class _Stream:
    """One session's state shared by its reader and its speaker."""

    def __init__(self) -> None:
        self.transcript = ""
        self.words: list[str] = []
        self.finalized = 0  # words already in a final
        self.final_sent = False
        self.span_s = (0.0, 0.0)
        self.speaker: asyncio.Task | None = None

    def at_s(self, i: int) -> float:
        start, end = self.span_s
        return round(start + i * (end - start) / max(1, len(self.words)), 2)

    def partial(self, k: int) -> str:
        return json.dumps({"type": "partial", "ts": self.at_s(self.finalized), "end_ts": self.at_s(k),
                           "elements": [{"type": "text", "value": _spoken(w)}
                                        for w in self.words[self.finalized:k]]})

    def final(self, upto: int) -> str:
        elements = []
        for i in range(self.finalized, upto):
            text, punct = _pieces(self.words[i])
            elements.append({"type": "text", "value": text, "ts": self.at_s(i), "end_ts": self.at_s(i + 1),
                             "confidence": 0.97})
            if punct or i + 1 < upto:
                elements.append({"type": "punct", "value": punct + (" " if i + 1 < upto else "")})
        message = json.dumps({"type": "final", "ts": self.at_s(self.finalized), "end_ts": self.at_s(upto),
                              "elements": elements})
        self.finalized = upto
        return message


class RevAIEmulator:
    def __init__(self, scenario, replay: bool = False) -> None:
        self.scenario: STTScenario = scenario_for(scenario, "stt")
        self.replay = replay
        self.received: list[str | bytes] = []  # replay: what the client sent
        self.queries: list[dict[str, str]] = []  # every stream's query

    def process_request(self, connection, request):
        if urlsplit(request.path).path != PATH:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        return websocket_refusal(connection, self.scenario.fault)

    async def handle(self, ws) -> None:
        query = {k: v[-1] for k, v in parse_qs(urlsplit(ws.request.path).query).items()}
        self.queries.append(query)
        stream = _Stream()
        try:
            if query.get("access_token") != self.scenario.api_key:
                await ws.close(4001, "Unauthorized")
                return
            problem = _params_problem(query)
            if problem:
                await ws.close(4002, problem)
                return
            if self.replay:
                await self._replay(ws)
                return
            await ws.send(json.dumps({"type": "connected", "id": uuid.uuid4().hex[:12]}))
            audio = bytearray()
            async for message in ws:
                if isinstance(message, bytes):
                    audio += message
                    if stream.speaker is None and message:
                        stream.speaker = asyncio.create_task(self._speak(ws, time.perf_counter_ns(), message, stream))
                    continue
                if message != "EOS":
                    await ws.close(1007, "Invalid Payload")
                    return
                saw(self, "stream", {"content_type": query["content_type"], "audio": audio.hex()})
                if self.scenario.fault == "no_final":
                    continue  # no final hypothesis, no close: the stream hangs
                await self._flush(ws, stream)
                await ws.close(1000, CLOSING)
                return
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it
        finally:
            if stream.speaker is not None:
                stream.speaker.cancel()

    async def _flush(self, ws, stream: _Stream) -> None:
        """EOS forces the open segment's final: it goes at the scenario's time for it (the truth), or at
        once if that has passed."""
        if stream.speaker is not None:
            await stream.speaker

    async def _final(self, ws, stream: _Stream) -> None:
        stream.final_sent = True
        record(self, stream.transcript, "final")
        await ws.send(stream.final(len(stream.words)))

    async def _speak(self, ws, t0: int, first_chunk: bytes, stream: _Stream) -> None:
        s = self.scenario
        turn = s.turn(first_chunk, t0)
        stream.transcript, stream.words = turn.transcript, turn.words
        start, end = s.anchors_for(first_chunk)
        stream.span_s = (start, end)
        split = len(turn.words) // 2 if len(turn.words) >= MIN_SEGMENT_WORDS else 0
        async for k in turn.partials():
            if s.fault == "malformed":
                await ws.send('{"type": "partial", "elements": ')
            elif breaks(s.fault):
                await break_off(ws, s.fault)
                return
            if split and not stream.finalized and k > split and s.fault != "no_final":
                await ws.send(stream.final(split))  # a segment ends mid-speech
            if k == 1:
                record(self, stream.transcript, "first_partial")
            await ws.send(stream.partial(k))
        if s.fault == "no_final":
            return
        await sleep_until(turn.final_at)
        await self._final(ws, stream)

    async def _replay(self, ws) -> None:
        """DOC_SESSION: each group before the client's next audio frame, then the SDK's close on EOS."""
        groups = iter(DOC_SESSION)
        for printed in next(groups):
            await ws.send(as_json(printed))
        async for message in ws:
            self.received.append(message)
            if message == "EOS":
                await ws.close(1000, CLOSING)
                return
            if isinstance(message, bytes):
                for printed in next(groups, []):
                    await ws.send(as_json(printed))
