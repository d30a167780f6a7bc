"""A loopback emulator of Amazon Transcribe streaming: `StartStreamTranscription` over HTTP/2 (prior
knowledge, no TLS), its request and response bodies AWS event streams.

The sources are those of voxwatch/providers/stt/transcribe.py. It serves `POST /stream-transcription`
with `x-amz-target: com.amazonaws.transcribe.Transcribe.StartStreamTranscription`; the request must be
signed with Signature Version 4 under the service `transcribe` (checked against the scenario's key,
`<access key id>:<secret>`: else 403 UnrecognizedClientException / InvalidSignatureException), with the
payload hash `STREAMING-AWS4-HMAC-SHA256-EVENTS`. Its language, media encoding and sample rate headers
are checked as the API reference gives them (pcm, flac or ogg-opus; 8000 to 48000 Hz; this emulator
serves pcm only and refuses the others with a BadRequestException that says so). A refused request is an
HTTP status with `x-amzn-ErrorType` and a JSON `message`; the handshake faults answer with their status
(and the shared `Retry-After` for 429, which AWS does not document for streaming). The response head is
the guide's: 200 with the language, encoding and sample rate echoed, `x-amzn-request-id` and
`x-amzn-transcribe-session-id`.

Every event of the body must carry its `:chunk-signature`, chained from the request's signature, and an
AudioEvent may hold at most one second of audio (API_streaming_AudioEvent): else an exception message
(BadRequestException) and the stream's end. The first AudioEvent's arrival is t0; the scenario's turn
(STTScenario.turn) times the segment's partial results (`IsPartial: true`, the segment's words so far,
one ResultId for the segment) and its final (`IsPartial: false`). After the signed empty end frame the
stream ends once the final is out. The ledger records `first_partial` and `final`.

Faults: `malformed` (a message whose CRC does not match, in place of each partial), `disconnect` (the
connection dropped in place of the first partial), `no_final` (no final, the stream left open).
TranscribeScenario adds a mid-stream exception message (LimitExceededException, ...) and the cited
sequence.

The cited sequence (DOCUMENTED): the Transcribe Developer Guide's partial-results example, "Partial-result
stabilization not enabled" (awsdocs/amazon-transcribe-developer-guide doc_source/streaming-partial-
results.md @32dea244fa04373075ba89d57296565fe20a0cc0, live at docs.aws.amazon.com/transcribe/latest/dg/
streaming-partial-results.html; read 2026-12-07): each row's Transcript, EndTime and IsPartial,
verbatim, with the page's StartTime 0.025 and the complete segment's ResultId
"34567e89-0fa1-2bc3-4d56-78e90123456f". `documented=True` replays them as the segment's results
(twelve partials on the turn's cadence, then the final at its time), so the contract test reads AWS's
own progression through the adapter. Its exception message is the guide's HTTP/2 example
(`:event-type` BadRequestException, `:message-type` exception, body "Exception message").
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid

from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.emulators.aws_h2 import Verified, verify_request
from voxwatch.providers.emulators.faults import HANDSHAKE
from voxwatch.providers.emulators.h2_server import H2Connection, H2Stream
from voxwatch.providers.emulators.ledger import record, saw
from voxwatch.providers.emulators.scenario import STTScenario, scenario_as
from voxwatch.providers.session.aws_event_stream import (STREAMING_EVENTS, Decoder, EventSigner, EventStreamError,
                                                         encode)

PATH = "/stream-transcription"
TARGET = "com.amazonaws.transcribe.Transcribe.StartStreamTranscription"
ENCODINGS = ("pcm", "flac", "ogg-opus")
RATES = range(8000, 48001)
LANGUAGES = ("en-US", "en-GB", "es-US", "fr-CA", "fr-FR", "en-AU", "it-IT", "de-DE", "pt-BR", "ja-JP", "ko-KR",
             "zh-CN")  # the archived API reference's LanguageCode enum
EXCEPTIONS = (None, "BadRequestException", "ConflictException", "LimitExceededException",
              "InternalFailureException", "ServiceUnavailableException")
# streaming-partial-results.md, "Partial-result stabilization not enabled": (Transcript, EndTime, IsPartial)
DOCUMENTED = (("The", 0.545, True), ("The", 1.045, True), ("The Amazon.", 1.545, True), ("The Amazon is", 2.045, True),
              ("The Amazon is the law.", 2.545, True), ("The Amazon is the largest", 3.045, True),
              ("The Amazon is the largest ray", 3.545, True), ("The Amazon is the largest rain for", 4.045, True),
              ("The Amazon is the largest rainforest.", 4.545, True),
              ("The Amazon is the largest rainforest on the", 5.045, True),
              ("The Amazon is the largest rainforest on the planet.", 5.545, True),
              ("The Amazon is the largest rainforest on the planet.", 6.025, True),
              ("The Amazon is the largest rainforest on the planet.", 6.025, False))
DOCUMENTED_RESULT_ID = "34567e89-0fa1-2bc3-4d56-78e90123456f"
DOCUMENTED_START = 0.025


@dataclasses.dataclass(frozen=True)
class TranscribeScenario(STTScenario):
    """An STTScenario with what only Transcribe does: an exception message mid-stream (in place of the
    first partial), and the guide's own partial-results sequence (`documented`)."""

    exception: str | None = None
    documented: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.exception not in EXCEPTIONS:
            raise ValueError(f"unknown Transcribe exception {self.exception!r}")


def transcript_event(text: str, partial: bool, result_id: str, start: float, end: float) -> bytes:
    result = {"Alternatives": [{"Items": [], "Transcript": text}], "EndTime": end, "IsPartial": partial,
              "ResultId": result_id, "StartTime": start}
    return encode({":message-type": "event", ":event-type": "TranscriptEvent", ":content-type": "application/json"},
                  json.dumps({"Transcript": {"Results": [result]}}).encode())


def exception(name: str, message: str) -> bytes:
    """The guide's HTTP/2 exception message (its name as `:event-type`, as printed, and as `:exception-type`,
    which the event-stream rules use)."""
    return encode({":message-type": "exception", ":event-type": name, ":exception-type": name,
                   ":content-type": "application/json"}, json.dumps({"Message": message}).encode())


class Session:
    """One StartStreamTranscription stream."""

    def __init__(self, stream: H2Stream) -> None:
        self.stream, self.emulator = stream, stream.server.emulator
        self.s: TranscribeScenario = self.emulator.scenario
        self.rate = 0
        self.ended = asyncio.Event()
        self.speaker: asyncio.Task | None = None
        self.events = 0

    def refusal(self) -> tuple[int, str, str] | Verified:
        h = self.stream.headers
        if h.get(":method") != "POST" or h.get(":path", "").partition("?")[0] != PATH or h.get("x-amz-target") != TARGET:
            return 404, "UnknownOperationException", "not found"
        if h.get("x-amz-content-sha256") != STREAMING_EVENTS:
            return 400, "BadRequestException", "x-amz-content-sha256 must be STREAMING-AWS4-HMAC-SHA256-EVENTS"
        verified = verify_request(h, "transcribe", self.s.api_key)
        if not isinstance(verified, Verified):
            return verified
        if self.s.fault in HANDSHAKE:
            status, _, body = HANDSHAKE[self.s.fault]
            kinds = {429: "LimitExceededException", 400: "BadRequestException", 503: "ServiceUnavailableException"}
            return int(status), kinds.get(int(status), "UnrecognizedClientException"), body.strip()
        encoding, language = h.get("x-amzn-transcribe-media-encoding"), h.get("x-amzn-transcribe-language-code")
        try:
            self.rate = int(h.get("x-amzn-transcribe-sample-rate", ""))
        except ValueError:
            self.rate = 0
        if encoding not in ENCODINGS or self.rate not in RATES or language not in LANGUAGES:
            return 400, "BadRequestException", (f"invalid media encoding {encoding!r}, sample rate {self.rate} or "
                                                f"language code {language!r}")
        if encoding != "pcm":
            return 400, "BadRequestException", f"this emulator serves pcm only, not {encoding}"
        return verified

    async def run(self) -> None:
        verified = self.refusal()
        if not isinstance(verified, Verified):
            status, kind, message = verified
            headers = {"content-type": "application/json", "x-amzn-errortype": kind}
            if status == 429:
                headers["retry-after"] = HANDSHAKE["rate_limited"][1]["Retry-After"]
            return await self.stream.respond(status, headers, json.dumps({"message": message}).encode())
        h = self.stream.headers
        await self.stream.respond(200, {
            "x-amzn-transcribe-language-code": h["x-amzn-transcribe-language-code"],
            "x-amzn-transcribe-media-encoding": "pcm", "x-amzn-transcribe-sample-rate": str(self.rate),
            "x-amzn-request-id": str(uuid.uuid4()), "x-amzn-transcribe-session-id": str(uuid.uuid4()),
            "content-type": "application/json"})
        signer = EventSigner(verified.credentials, verified.region, "transcribe", verified.prior.hex())
        prior, decoder = verified.prior, Decoder()
        try:
            while (item := await self.stream.body.get()) is not None:
                data, arrived = item
                decoder.feed(data)
                for outer in decoder:
                    prior = signer.verify(outer, prior)
                    if not outer.payload:  # the signed empty frame: the end of the audio
                        saw(self.emulator, "audio_end", {"events": self.events, "signatures": "verified"})
                        self.ended.set()
                        continue
                    self.audio(_one(outer.payload), arrived)
        except (EventStreamError, ValueError) as exc:
            await self.stream.send(exception("BadRequestException", f"could not read the audio: {exc}"), end=True)
            self.ended.clear()
        if self.speaker is None:
            if self.ended.is_set():  # no audio at all: nothing to transcribe, the stream ends
                await self.stream.send(b"", end=True)
        elif self.ended.is_set():
            await self.speaker  # the results still owed, then the stream's end
        else:
            self.speaker.cancel()  # the client went away without ending its audio

    def audio(self, event, arrived: int) -> None:
        if (event.headers.get(":message-type"), event.headers.get(":event-type")) != ("event", "AudioEvent"):
            raise EventStreamError(f"not an AudioEvent: {event.headers}")
        if len(event.payload) > self.rate * 2:
            raise EventStreamError("an AudioEvent holds more than one second of audio")
        if not event.payload:
            return
        self.events += 1
        if self.speaker is None:
            self.speaker = asyncio.create_task(self.speak(event.payload, arrived))

    async def speak(self, first: bytes, t0: int) -> None:
        s, send = self.s, self.stream.send
        turn = s.turn(first, t0)
        result_id = DOCUMENTED_RESULT_ID if s.documented else str(uuid.uuid4())
        start, end = s.anchors_for(first)
        rows = iter(DOCUMENTED[:-1])
        async for k in turn.partials():
            if s.fault == "malformed":
                broken = bytearray(transcript_event("broken", True, result_id, start, end))
                broken[-1] ^= 0xFF  # the message CRC no longer matches
                await send(bytes(broken))
            elif s.fault == "disconnect":
                return self.stream.server.drop()
            elif s.exception is not None:
                return await send(exception(s.exception, "Exception message"), end=True)
            if k == 1:
                record(self.emulator, turn.transcript, "first_partial")
            if s.documented:
                row = next(rows, None)
                if row is not None:
                    await send(transcript_event(row[0], row[2], result_id, DOCUMENTED_START, row[1]))
            else:
                await send(transcript_event(" ".join(turn.words[:k]), True, result_id, start, end))
        if s.fault == "no_final":
            return
        await sleep_until(turn.final_at)
        record(self.emulator, turn.transcript, "final")
        if s.documented:
            text, end_time, _ = DOCUMENTED[-1]
            await send(transcript_event(text, False, result_id, DOCUMENTED_START, end_time))
        else:
            await send(transcript_event(turn.transcript, False, result_id, start, end))
        await self.ended.wait()
        await send(b"", end=True)


def _one(payload: bytes):
    decoder = Decoder()
    decoder.feed(payload)
    found = list(decoder)
    if len(found) != 1 or decoder.pending:
        raise EventStreamError("a signed frame must carry exactly one event")
    return found[0]


class TranscribeEmulator:
    def __init__(self, scenario) -> None:
        self.scenario = scenario_as(scenario, "stt", TranscribeScenario)

    def connection(self):
        """A protocol for one accepted TCP connection (emulators/server.py serves it)."""
        return H2Connection(self, lambda stream: Session(stream).run())
