"""Amazon Nova Sonic on Bedrock (`InvokeModelWithBidirectionalStream`: one HTTP/2 request whose body and
response are AWS event streams, both open at once), as AWS documents it.

Protocol facts followed:
- Endpoint and auth (boto/botocore botocore/data/bedrock-runtime/2023-09-30/service-2.json @e3091ae0,
  2026-07-31: `InvokeModelWithBidirectionalStream`, `POST /model/{modelId}/invoke-with-bidirectional-stream`;
  endpointPrefix `bedrock-runtime`, signingName `bedrock`): `https://bedrock-runtime.<region>.amazonaws.com`,
  over HTTP/2, signed with Signature Version 4 under the service name `bedrock`. The request's body is
  an event stream of `chunk` events (`BidirectionalInputPayloadPart {bytes}`), its response an event
  stream of `chunk` events (`BidirectionalOutputPayloadPart {bytes}`); under the rest-json event-stream
  rules a chunk is a message with `:message-type` event, `:event-type` chunk, `:content-type`
  application/json and the payload `{"bytes": "<base64 of the event's JSON>"}`.
- Each event of the request body is signed in a chain from the request's signature (`:date` and
  `:chunk-signature`), as AWS's event-stream signing for its streaming APIs goes (the Transcribe
  guide's "Signing event stream messages"; providers/session/aws_event_stream.py); the request's payload
  hash is `STREAMING-AWS4-HMAC-SHA256-EVENTS`, as for Transcribe's HTTP/2 stream (the Bedrock pages read
  do not spell it out).
- The events, in the order of AWS's official sample client (aws-samples/amazon-nova-samples
  speech-to-speech/amazon-nova-2-sonic/sample-codes/console-python/nova_sonic_simple.py @75a5fb5d):
  `sessionStart {inferenceConfiguration}`, `promptStart {promptName, textOutputConfiguration,
  audioOutputConfiguration {mediaType audio/lpcm, sampleRateHertz 24000, sampleSizeBits 16, channelCount 1,
  voiceId, encoding base64, audioType SPEECH}}`, the system prompt as a TEXT content (`contentStart
  {type TEXT, interactive false, role SYSTEM}`, `textInput`, `contentEnd`), then the caller's AUDIO
  content (`contentStart {type AUDIO, interactive true, role USER, audioInputConfiguration {audio/lpcm,
  16000 Hz, 16 bits, 1 channel, audioType SPEECH, encoding base64}}`, `audioInput {content: base64}`
  for each chunk), and at the end `contentEnd`, `promptEnd`, `sessionEnd`.
- The model answers when its own turn detection finds the caller's turn over, not at the audio
  content's end (AWS's "Handling output events with the bidirectional API",
  docs.aws.amazon.com/nova/latest/nova2-userguide/sonic-output-events.html): so, as on a live line,
  the caller's audio goes on, silent, after the clip until the reply ends.
- Output events (that page): `completionStart`, then content blocks (`contentStart` / content /
  `contentEnd`): the caller's transcript (role USER), the assistant's speculative text, its audio
  (`audioOutput {content: base64 24 kHz pcm16}`), the assistant's final text, `usageEvent`s, and
  `completionEnd`. A `contentEnd` carries `stopReason`: `END_TURN` ends the assistant's turn,
  `INTERRUPTED` says it was cut off (Pipecat's AWS Nova Sonic service branches on both: a reference,
  pipecat-ai/pipecat src/pipecat/services/aws/nova_sonic/llm.py @acead050).
- Barge-in: the server stops generating and sends the assistant a `textOutput` whose content is
  `{ "interrupted" : true }` (aws-samples/amazon-nova-samples ... conversation-transfer/tests/
  test_response_parser.py @18839bc9, test_barge_in), or ends the content with stopReason INTERRUPTED.
- Failures: a refused request is an HTTP status with `x-amzn-ErrorType` and a JSON `message`; mid-stream,
  an exception message (`:message-type` exception, its name in `:exception-type`) of the service's
  errors (service-2.json): validationException 400, throttlingException 429, modelTimeoutException 408,
  modelStreamErrorException 424, internalServerException 500, serviceUnavailableException 503.
- "The response is returned in a stream that remains open for 8 minutes" (service-2.json).

Credentials: VOXWATCH_BEDROCK_API_KEY is `<access key id>:<secret access key>` (optionally
`:<session token>`); the region is the endpoint host's (`bedrock-runtime.<region>.amazonaws.com`,
us-east-1 by default or for any other host). The registry id's model part is Bedrock's modelId as is
(`amazon.nova-2-sonic-v1:0`). Every output event is marked at the stamp of the socket read that
completed it; the timeline computes nothing here.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import datetime as dt
import json
import re
import uuid
from urllib.parse import quote, urlsplit

from voxwatch.foundation.events import AUDIO, CLOSED, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.aws_event_stream import (STREAMING_EVENTS, Decoder, EventSigner, EventStreamError,
                                                         encode, sign_request)
from voxwatch.providers.session.aws_event_stream import key_credentials as credentials
from voxwatch.providers.session.endpoints import base_url, http_failure, http_url, is_loopback, require_key
from voxwatch.providers.session.h2_duplex import H2Duplex
from voxwatch.providers.session.live_line import keep_line_open

VENDOR = "Bedrock"
SERVICE = "bedrock"
DEFAULT_REGION = "us-east-1"
DEFAULT_URL = f"https://bedrock-runtime.{DEFAULT_REGION}.amazonaws.com"
INPUT_RATE = 16000
OUTPUT_RATE = 24000
DEFAULT_VOICE = "matthew"  # the official sample's voice
SYSTEM_PROMPT = "You are a friendly assistant. Keep your responses short."
CLOSE_WAIT_S = 1.0
# service-2.json's errors, as exception events: the row status each one is
EXCEPTIONS = {"throttlingException": "rate_limited", "serviceUnavailableException": "server_error",
              "internalServerException": "server_error", "modelStreamErrorException": "server_error",
              "validationException": "error", "modelTimeoutException": "error"}
BARGE_IN = '{ "interrupted" : true }'  # Nova Sonic's barge-in text (the official sample's parser tests)
MALFORMED = (ValueError, KeyError, TypeError, AttributeError, binascii.Error)


def region_of(url: str) -> str:
    match = re.match(r"bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com$", urlsplit(url).hostname or "")
    return match.group(1) if match else DEFAULT_REGION


def chunk(event: dict) -> bytes:
    """One input event as the body carries it: a `chunk` message whose payload holds its JSON, base64."""
    body = json.dumps({"bytes": base64.b64encode(json.dumps({"event": event}).encode()).decode()}).encode()
    return encode({":message-type": "event", ":event-type": "chunk", ":content-type": "application/json"}, body)


def opening(prompt: str, voice: str) -> tuple[list[dict], str, str]:
    """The events before the caller's audio (the official sample's order), the prompt's and the audio content's names."""
    name, system, audio = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
    events = [
        {"sessionStart": {"inferenceConfiguration": {"maxTokens": 1024, "topP": 0.9, "temperature": 0.7}}},
        {"promptStart": {"promptName": name, "textOutputConfiguration": {"mediaType": "text/plain"},
                         "audioOutputConfiguration": {"mediaType": "audio/lpcm", "sampleRateHertz": OUTPUT_RATE,
                                                      "sampleSizeBits": 16, "channelCount": 1, "voiceId": voice,
                                                      "encoding": "base64", "audioType": "SPEECH"}}},
        {"contentStart": {"promptName": name, "contentName": system, "type": "TEXT", "interactive": False,
                          "role": "SYSTEM", "textInputConfiguration": {"mediaType": "text/plain"}}},
        {"textInput": {"promptName": name, "contentName": system, "content": prompt}},
        {"contentEnd": {"promptName": name, "contentName": system}},
        {"contentStart": {"promptName": name, "contentName": audio, "type": "AUDIO", "interactive": True,
                          "role": "USER", "audioInputConfiguration": {
                              "mediaType": "audio/lpcm", "sampleRateHertz": INPUT_RATE, "sampleSizeBits": 16,
                              "channelCount": 1, "audioType": "SPEECH", "encoding": "base64"}}},
    ]
    return events, name, audio


class NovaSonicS2S:
    sample_rate = INPUT_RATE

    def __init__(self, model: ModelInfo) -> None:
        self.model, self.url = model, http_url(base_url(model.vendor, DEFAULT_URL))
        self.emulator = is_loopback(self.url)
        self.model_id = model.id.split("/", 1)[1]  # Bedrock's modelId, `:0` and all

    async def connect(self, timeline: Timeline) -> "NovaSonicSession":
        """Sign and open the stream, and send everything before the caller's audio (before t0)."""
        creds, region = credentials(require_key(self.model.vendor).reveal()), region_of(self.url)
        path = f"/model/{quote(self.model_id, safe='')}/invoke-with-bidirectional-stream"
        host = urlsplit(self.url).netloc
        headers = {"host": host, "content-type": "application/vnd.amazon.eventstream",
                   "x-amz-content-sha256": STREAMING_EVENTS}
        signed = sign_request("POST", path, "", headers, STREAMING_EVENTS, creds, region, SERVICE,
                              dt.datetime.now(dt.timezone.utc))
        sent = [(k, v) for k, v in {**headers, **signed.headers}.items() if k != "host"]
        duplex = await H2Duplex.open(self.url + path, sent, VENDOR, clock=timeline.clock)
        session = NovaSonicSession(duplex, timeline, EventSigner(creds, region, SERVICE, signed.signature))
        try:
            await session.open(self.model.voice or DEFAULT_VOICE)
        except BaseException:
            await duplex.aclose()
            raise
        return session


class NovaSonicSession:
    """The caller's audio content and the assistant's reply on one open stream."""

    def __init__(self, duplex: H2Duplex, timeline: Timeline, signer: EventSigner) -> None:
        self.duplex, self.timeline, self.signer = duplex, timeline, signer
        self._offset = 0
        self._names: tuple[str, str] = ("", "")
        self._done = asyncio.Event()
        self._error: ProviderError | None = None
        self._line: asyncio.Task | None = None
        self._reader: asyncio.Task | None = None
        self._closed_at: int | None = None

    async def _send(self, event: dict) -> None:
        await self.duplex.send(self.signer.sign(chunk(event), dt.datetime.now(dt.timezone.utc)))

    async def open(self, voice: str) -> None:
        """Send the opening events, then read the response's head: a refusal is its HTTP status (a server
        that refuses may cut the body off first, so the head is read even when a send failed)."""
        events, prompt, audio = opening(SYSTEM_PROMPT, voice)
        self._names = (prompt, audio)
        cut: ProviderError | None = None
        try:
            for event in events:
                await self._send(event)
        except ProviderError as exc:
            cut = exc
        status, headers = await self.duplex.head()
        if status != 200:
            raise http_failure(status, headers, VENDOR)
        if cut is not None:
            raise cut
        self._reader = asyncio.create_task(self._receive())

    async def _receive(self) -> None:
        try:
            await self._read()
        except ProviderError as exc:
            self._error = exc
        except MALFORMED as exc:  # EventStreamError is a ValueError
            self._error = ProviderError(f"malformed message from {VENDOR} ({type(exc).__name__})", "malformed")
        finally:
            self.timeline.mark(CLOSED, self._closed_at)
            self._done.set()

    async def _read(self) -> None:
        decoder = Decoder()
        async for data, at in self.duplex.received():
            decoder.feed(data)
            for message in decoder:
                if self._on(message, at):
                    return
        raise ProviderError(f"{VENDOR} ended the stream before the assistant's turn was over", "disconnected")

    def _on(self, message, at: int) -> bool:
        """One output message; True when the assistant's turn is over."""
        kind = message.headers.get(":message-type")
        if kind == "exception":
            name = str(message.headers.get(":exception-type") or message.headers.get(":event-type"))
            text = str(json.loads(message.payload or b"{}").get("message", ""))[:300]
            raise ProviderError(f"{VENDOR} {name}: {text}", EXCEPTIONS.get(name, "error"))
        if kind != "event" or message.headers.get(":event-type") != "chunk":
            raise EventStreamError(f"unexpected message {kind!r} / {message.headers.get(':event-type')!r}")
        event = json.loads(base64.b64decode(json.loads(message.payload)["bytes"], validate=True))["event"]
        if "audioOutput" in event:
            pcm = base64.b64decode(event["audioOutput"]["content"], validate=True)
            if len(pcm) % 2:
                raise ValueError("an audio chunk ended mid-sample")
            n = len(pcm) // 2
            self.timeline.mark(AUDIO, at, sample_offset=self._offset, n_samples=n, sample_rate=OUTPUT_RATE, audio=pcm)
            self._offset += n
        elif "textOutput" in event and BARGE_IN in str(event["textOutput"].get("content")):
            raise ProviderError(f"{VENDOR}: the assistant's turn was interrupted (barge-in)")
        elif "contentEnd" in event:
            end = event["contentEnd"]
            if end.get("stopReason") == "INTERRUPTED":
                raise ProviderError(f"{VENDOR}: the assistant's turn was interrupted")
            if end.get("type") == "AUDIO" and end.get("stopReason") == "END_TURN":
                self._closed_at = at
                return True
        return False

    async def send_audio(self, pcm16: bytes) -> None:
        if self._error is not None:
            raise self._error
        prompt, audio = self._names
        await self._send({"audioInput": {"promptName": prompt, "contentName": audio,
                                         "content": base64.b64encode(pcm16).decode()}})

    async def end_audio(self) -> None:
        """The model finds the turn's end itself: the line goes on, silent, as a live call's would."""
        self._line = asyncio.create_task(keep_line_open(self.send_audio, self._done, INPUT_RATE, (ProviderError,)))

    async def wait_response(self) -> None:
        await self._done.wait()
        if self._error is not None:
            raise self._error

    async def aclose(self) -> None:
        """End the audio content, the prompt and the session (the official sample's close), then the stream."""
        if self._line is not None:
            self._line.cancel()
        prompt, audio = self._names
        try:
            if self._error is None and prompt:
                for event in ({"contentEnd": {"promptName": prompt, "contentName": audio}},
                              {"promptEnd": {"promptName": prompt}}, {"sessionEnd": {}}):
                    await self._send(event)
                await self.signer_end()
        except ProviderError:
            pass
        finally:
            if self._reader is not None:
                self._reader.cancel()
            await self.duplex.aclose()

    async def signer_end(self) -> None:
        """The end of input: an empty payload, signed, then the body's end; the server then ends the
        response (read to its end, briefly: the turn is already measured)."""
        await self.duplex.send(self.signer.sign(b"", dt.datetime.now(dt.timezone.utc)))
        await self.duplex.end()

        async def drained() -> None:
            async for _ in self.duplex.received():
                pass

        try:
            await asyncio.wait_for(drained(), CLOSE_WAIT_S)
        except asyncio.TimeoutError:
            pass
