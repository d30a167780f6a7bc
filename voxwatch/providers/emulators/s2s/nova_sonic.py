"""A loopback emulator of Amazon Nova Sonic on Bedrock: `InvokeModelWithBidirectionalStream` over HTTP/2
(prior knowledge, no TLS), its request and response bodies AWS event streams.

The sources are those of voxwatch/providers/s2s/nova_sonic.py. It serves `POST /model/<modelId>/invoke-
with-bidirectional-stream` for the Nova Sonic model ids; any other model is 400 (`ValidationException`).
The request must be signed with Signature Version 4 under the service `bedrock` (its `Authorization`
checked against the scenario's key, `<access key id>:<secret>`: else 403, `x-amzn-ErrorType`
UnrecognizedClientException / InvalidSignatureException and a JSON `message`), with the payload hash
`STREAMING-AWS4-HMAC-SHA256-EVENTS`; every event of the body must carry its `:chunk-signature`, chained
from the request's signature (else an exception message and the stream's end). The handshake faults
answer the request with their HTTP status (and `Retry-After` for 429).

Input events follow the official sample's order (sessionStart, promptStart, the system TEXT content,
the caller's AUDIO content); `audioInput` before an AUDIO contentStart, or audio other than 16 kHz
16-bit mono lpcm, is a `validationException`. The caller's speech ends at the arrival of the first
`audioInput` plus `speech_end_for(<its decoded audio>)` (the scenario's anchors, keyed by its sha256:
for the voxwatch adapter the clip's first 16 kHz chunk); the reply comes `response_ms` (+ jitter) after
it, as the output events AWS's "Handling output events" page lists: `completionStart`, the caller's
transcript (USER, FINAL), the assistant's SPECULATIVE text, its audio content (`audioOutput` chunks of
24 kHz pcm16, leading silence then speech, every `send_every_ms`, then `contentEnd` END_TURN), its
FINAL text, a `usageEvent` and `completionEnd`. The ledger records `first_audio` and `first_speech`.

Faults: `malformed` (a message whose CRC does not match), `disconnect` (the connection dropped),
`no_final` (no END_TURN), `inaudible` (silent audio). NovaSonicScenario adds a mid-reply exception event
(`throttlingException`, `modelStreamErrorException`, ...) and an INTERRUPTED reply.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import json
import re
import uuid
from urllib.parse import quote

from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.emulators.aws_h2 import Verified, verify_request
from voxwatch.providers.emulators.faults import HANDSHAKE
from voxwatch.providers.emulators.h2_server import H2Connection, H2Stream
from voxwatch.providers.emulators.ledger import record, saw
from voxwatch.providers.emulators.scenario import S2SScenario, jitter_ms, scenario_for
from voxwatch.providers.emulators.speech import ChunkCache, b64
from voxwatch.providers.session.aws_event_stream import STREAMING_EVENTS, Decoder, EventSigner, EventStreamError, encode

MODELS = ("amazon.nova-2-sonic-v1:0", "amazon.nova-sonic-v1:0")
IN_PATH = {quote(m, safe=""): m for m in MODELS}  # the path carries the model id percent-encoded, as SigV4 signs it
PATH = re.compile(r"^/model/([^/]+)/invoke-with-bidirectional-stream$")
EXCEPTIONS = (None, "throttlingException", "modelStreamErrorException", "internalServerException",
              "validationException", "interrupted", "barge_in")
# Output events as AWS's own sample tests give them: aws-samples/amazon-nova-samples speech-to-speech/
# amazon-nova-2-sonic/repeatable-patterns/conversation-transfer/tests/test_response_parser.py
# @18839bc969fdbf544f57e6907bab137b047708d6, each test's `data`, quoted:
#   {"event": {"completionStart": {"requestId": "abc123"}}}
#   {"event": {"contentStart": {"role": "ASSISTANT"}}}
#   {"event": {"textOutput": {"content": "Hello!", "role": "ASSISTANT"}}}
#   {"event": {"contentEnd": {"type": "TOOL"}}}
#   {"event": {"usageEvent": {"inputTokens": 100, "outputTokens": 50}}}
#   {"event": {"completionEnd": {}}}
#   {"event": {"textOutput": {"content": "{ \"interrupted\" : true }", "role": "ASSISTANT"}}}   (test_barge_in)
# `fixtures` replays the first six around the reply's audio, in a reply's order; `barge_in` the last.
FIXTURES = {
    "completionStart": {"completionStart": {"requestId": "abc123"}},
    "contentStart": {"contentStart": {"role": "ASSISTANT"}},
    "textOutput": {"textOutput": {"content": "Hello!", "role": "ASSISTANT"}},
    "contentEnd": {"contentEnd": {"type": "TOOL"}},
    "usageEvent": {"usageEvent": {"inputTokens": 100, "outputTokens": 50}},
    "completionEnd": {"completionEnd": {}},
    "barge_in": {"textOutput": {"content": '{ "interrupted" : true }', "role": "ASSISTANT"}},
}
OUTPUT_RATE = 24000


@dataclasses.dataclass(frozen=True)
class NovaSonicScenario(S2SScenario):
    """An S2SScenario with the Bedrock behaviours the shared faults do not cover: an exception event of the
    service mid-reply, or ("interrupted") the assistant's audio content ended with stopReason INTERRUPTED."""

    exception: str | None = None
    fixtures: bool = False  # the output events of AWS's sample tests (FIXTURES) around the reply's audio

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.exception not in EXCEPTIONS:
            raise ValueError(f"unknown Bedrock behaviour {self.exception!r}")


def output(event: dict) -> bytes:
    """One output event as a `chunk` message."""
    body = json.dumps({"bytes": base64.b64encode(json.dumps({"event": event}).encode()).decode()}).encode()
    return encode({":message-type": "event", ":event-type": "chunk", ":content-type": "application/json"}, body)


def exception(name: str, message: str) -> bytes:
    return encode({":message-type": "exception", ":exception-type": name, ":content-type": "application/json"},
                  json.dumps({"message": message}).encode())


class Session:
    """The Nova Sonic session on one request stream."""

    def __init__(self, stream: H2Stream) -> None:
        self.stream, self.emulator = stream, stream.server.emulator
        self.s: NovaSonicScenario = self.emulator.scenario
        self.t0: int | None = None
        self.first = b""
        self.reply: asyncio.Task | None = None
        self.audio_open = False
        self.events = 0  # input events read, each with its chained signature checked

    def refusal(self) -> tuple[int, str, str] | None:
        """(status, error type, message) refusing the request, or None."""
        h, s = self.stream.headers, self.s
        match = PATH.match(h.get(":path", ""))
        if h.get(":method") != "POST" or match is None:
            return 404, "UnknownOperationException", "not found"
        if match.group(1) not in IN_PATH:
            return 400, "ValidationException", f"The provided model identifier is invalid: {match.group(1)}"
        if h.get("x-amz-content-sha256") != STREAMING_EVENTS:
            return 400, "ValidationException", "x-amz-content-sha256 must be STREAMING-AWS4-HMAC-SHA256-EVENTS"
        verified = verify_request(h, "bedrock", s.api_key)
        if not isinstance(verified, Verified):
            return verified
        if s.fault in HANDSHAKE:
            status, headers, body = HANDSHAKE[s.fault]
            return int(status), "ThrottlingException" if int(status) == 429 else "ServiceException", body.strip()
        self.credentials, self.region, self.prior = verified.credentials, verified.region, verified.prior
        return None

    async def run(self) -> None:
        refused = self.refusal()
        if refused is not None:
            status, kind, message = refused
            headers = {"content-type": "application/json", "x-amzn-errortype": kind}
            if status == 429:
                headers["retry-after"] = HANDSHAKE["rate_limited"][1]["Retry-After"]
            await self.stream.respond(status, headers, json.dumps({"message": message}).encode())
            return
        await self.stream.respond(200, {"content-type": "application/vnd.amazon.eventstream",
                                        "x-amzn-requestid": str(uuid.uuid4())})
        signer, decoder = EventSigner(self.credentials, self.region, "bedrock", self.prior.hex()), Decoder()
        try:
            while (item := await self.stream.body.get()) is not None:
                data, arrived = item
                decoder.feed(data)
                for outer in decoder:
                    self.prior = signer.verify(outer, self.prior)
                    if not outer.payload:  # the end of input, its signature checked: the stream ends
                        saw(self.emulator, "input_end", {"events": self.events, "signatures": "verified"})
                        return await self.stream.send(b"", end=True)
                    self.events += 1
                    inner = next(iter(_decoded(outer.payload)))
                    event = json.loads(base64.b64decode(json.loads(inner.payload)["bytes"]))["event"]
                    if not await self.on(event, arrived):
                        return
        except (EventStreamError, ValueError, KeyError, TypeError, StopIteration) as exc:
            await self.stream.send(exception("validationException", f"could not read the input: {exc}"), end=True)
        finally:
            if self.reply is not None:
                self.reply.cancel()

    async def on(self, event: dict, arrived: int) -> bool:
        """One input event; False ends the stream (a refused event)."""
        if "contentStart" in event and event["contentStart"].get("type") == "AUDIO":
            config = event["contentStart"].get("audioInputConfiguration") or {}
            if (config.get("mediaType"), config.get("sampleRateHertz"), config.get("sampleSizeBits"),
                    config.get("channelCount")) != ("audio/lpcm", 16000, 16, 1):
                await self.stream.send(exception("validationException", f"unsupported audio input {config}"), end=True)
                return False
            self.audio_open = True
        elif "audioInput" in event:
            if not self.audio_open:
                await self.stream.send(exception("validationException", "audioInput outside an AUDIO content"), end=True)
                return False
            if self.t0 is None:
                self.t0, self.first = arrived, base64.b64decode(event["audioInput"]["content"])
                self.reply = asyncio.create_task(self.speak())
        return True

    async def speak(self) -> None:
        s, send = self.s, self.stream.send
        chunks, first_speech = await asyncio.to_thread(self.emulator.chunks.get, s.reply_for(self.first), OUTPUT_RATE)
        start = self.t0 + int((s.speech_end_for(self.first) * 1000 + s.response_ms + jitter_ms(self.first, s.jitter_ms)) * 1e6)
        key = hashlib.sha256(self.first).hexdigest()
        await sleep_until(start)
        names = {"promptName": "prompt", "completionId": str(uuid.uuid4())}
        if s.fixtures:
            for name in ("completionStart", "contentStart", "textOutput", "contentEnd"):
                await send(output(FIXTURES[name]))
        else:
            await send(output({"completionStart": {"sessionId": str(uuid.uuid4()), **names}}))
            for role, stage, text in (("USER", "FINAL", "(the caller's words)"),
                                      ("ASSISTANT", "SPECULATIVE", s.reply_for(self.first))):
                await send(output({"contentStart": {**names, "type": "TEXT", "role": role, "additionalModelFields":
                                                    json.dumps({"generationStage": stage})}}))
                await send(output({"textOutput": {**names, "role": role, "content": text}}))
                await send(output({"contentEnd": {**names, "type": "TEXT", "stopReason": "PARTIAL_TURN"}}))
        await send(output({"contentStart": {**names, "type": "AUDIO", "role": "ASSISTANT"}}))
        every = int(s.send_every_ms * 1e6)
        for i, data in enumerate(chunks):
            await sleep_until(start + i * every)
            if i == 1 and s.fault == "malformed":
                broken = bytearray(output({"audioOutput": {**names, "content": data}}))
                broken[-1] ^= 0xFF  # the message CRC no longer matches
                await send(bytes(broken))
            elif i == 1 and s.exception == "barge_in":
                return await send(output(FIXTURES["barge_in"]))
            elif i == 1 and s.exception not in (None, "interrupted"):
                return await send(exception(s.exception, "emulated"), end=True)
            elif i == 1 and s.exception == "interrupted":
                return await send(output({"contentEnd": {**names, "type": "AUDIO", "stopReason": "INTERRUPTED"}}))
            elif i == 2 and s.fault == "disconnect":
                return self.stream.server.drop()
            for what in ("first_audio",) * (i == 0) + ("first_speech",) * (i == first_speech):
                record(self.emulator, key, what)
            await send(output({"audioOutput": {**names, "content": data}}))
        if s.fault != "no_final":
            await send(output({"contentEnd": {**names, "type": "AUDIO", "stopReason": "END_TURN"}}))
        if s.fixtures:
            await send(output(FIXTURES["usageEvent"]))
            await send(output(FIXTURES["completionEnd"]))
        else:
            await send(output({"usageEvent": {**names, "totalInputTokens": 100, "totalOutputTokens": 50}}))
            await send(output({"completionEnd": {**names, "stopReason": "END_TURN"}}))


def _decoded(payload: bytes):
    decoder = Decoder()
    decoder.feed(payload)
    return list(decoder)


class NovaSonicEmulator:
    def __init__(self, scenario) -> None:
        s2s = scenario_for(scenario, "s2s")
        self.scenario = s2s if isinstance(s2s, NovaSonicScenario) else NovaSonicScenario(**dataclasses.asdict(s2s))
        self.chunks = ChunkCache(self.scenario, b64)
        self.chunks.get(self.scenario.transcript, OUTPUT_RATE)

    def connection(self) -> asyncio.Protocol:
        """A protocol for one accepted TCP connection (emulators/server.py serves it)."""
        return H2Connection(self, lambda stream: Session(stream).run())
