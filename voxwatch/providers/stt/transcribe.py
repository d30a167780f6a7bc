"""Amazon Transcribe streaming (`StartStreamTranscription` over HTTP/2: one request whose body is an AWS
event stream of signed audio events and whose response is an event stream of transcript events, both
open at once), as AWS documents it.

Protocol facts followed (read 2026-12-07):
- Endpoint and request (AWS Transcribe Developer Guide "Setting up an HTTP/2 stream",
  awsdocs/amazon-transcribe-developer-guide doc_source/streaming-http2.md @24720afa7f80, live at
  docs.aws.amazon.com/transcribe/latest/dg/streaming-setting-up.html): `POST /stream-transcription`
  on `transcribestreaming.<region>.amazonaws.com`, HTTP/2, with `x-amz-target:
  com.amazonaws.transcribe.Transcribe.StartStreamTranscription`, `content-type:
  application/vnd.amazon.eventstream`, `x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-EVENTS`,
  `x-amzn-transcribe-language-code`, `x-amzn-transcribe-media-encoding` and
  `x-amzn-transcribe-sample-rate`, signed with Signature Version 4 under the service name
  `transcribe` (not `transcribestreaming`). The guide's `transfer-encoding: chunked` is HTTP/1.1's and
  is not a header HTTP/2 may carry (RFC 9113, 8.2.2): the body's DATA frames are its chunks.
- Audio (API reference StartStreamTranscription, doc_source/API_streaming_StartStreamTranscription.md;
  API_streaming_AudioEvent): media encoding `pcm` is signed 16-bit little-endian, no WAV header;
  sample rates 8000 to 48000 Hz; an AudioEvent holds at most one second of audio. Each AudioEvent
  (`:message-type` event, `:event-type` AudioEvent, `:content-type` application/octet-stream, the
  official SDK's serializer: awslabs/amazon-transcribe-streaming-sdk amazon_transcribe/serialize.py
  @7eae6ca0) is the payload of a signed outer message (`:date`, `:chunk-signature`), chained from the
  request's signature (providers/session/aws_event_stream.py).
- End of audio: "send an empty audio event ... Sign the event": the end frame holds only `:date` and
  `:chunk-signature` (streaming-http2.md). The service then sends what remains and ends the response.
- Results (doc_source/streaming-partial-results.md): `TranscriptEvent` messages whose JSON is
  `{"Transcript": {"Results": [{ResultId, StartTime, EndTime, IsPartial, Alternatives: [{Transcript,
  Items}]}]}}`. A segment's partial results (`IsPartial: true`) each hold the segment's whole text so
  far; its last result (`IsPartial: false`) is the segment's final text. Segments end at a pause or a
  change of speaker, chosen by the service; a stream may hold several.
- Failures: a refused request is an HTTP status with `x-amzn-ErrorType` and a JSON `message` (SDK
  tests/unit/test_deserialize.py); mid-stream, a message with `:message-type` exception naming the
  exception (`:exception-type`; the guide's HTTP/2 page prints it as `:event-type`). The exceptions
  (API reference): BadRequestException 400, ConflictException 409, LimitExceededException 429 ("the
  maximum number of concurrent transcription streams, ... starting transcription streams too quickly,
  or the maximum audio length of 4 hours"), InternalFailureException 500, ServiceUnavailableException
  503. No Retry-After is documented for streaming. A message with `:message-type` error carries
  `:error-code` and `:error-message` (the SDK's event-stream test vectors, tests/unit/test_eventstream.py).
- Quotas (docs.aws.amazon.com/transcribe/latest/dg/limits-guidelines.html): 5 concurrent HTTP/2 streams
  and 5 StartStreamTranscription transactions a second by default.

Credentials: VOXWATCH_TRANSCRIBE_API_KEY is `<access key id>:<secret access key>[:<session token>]`; the
region is the endpoint host's (us-east-1 by default, or for any other host). Transcribe has no model
parameter: the language code chooses the recogniser, so the adapter declares the dataset's language in
AWS's code (`in_language`). Every event is marked at the stamp of the socket read that completed it.
"""

from __future__ import annotations

import asyncio
import binascii
import copy
import datetime as dt
import json
import re
from urllib.parse import urlsplit

from voxwatch.foundation.events import FINAL, PARTIAL, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.aws_event_stream import (STREAMING_EVENTS, Decoder, EventSigner, EventStreamError,
                                                         encode, key_credentials, sign_request)
from voxwatch.providers.session.endpoints import base_url, http_failure, http_url, is_loopback, require_key
from voxwatch.providers.session.h2_duplex import H2Duplex

VENDOR = "Transcribe"
SERVICE = "transcribe"
DEFAULT_REGION = "us-east-1"
DEFAULT_URL = f"https://transcribestreaming.{DEFAULT_REGION}.amazonaws.com"
PATH = "/stream-transcription"
TARGET = "com.amazonaws.transcribe.Transcribe.StartStreamTranscription"
SAMPLE_RATE = 16000
HEAD_TIMEOUT_S = 30.0
# The API reference's LanguageCode values (the streaming enum of the archived reference; the current
# supported-languages table is longer): a dataset's primary language -> the code declared for it
LANGUAGES = {"en": "en-US", "es": "es-US", "fr": "fr-FR", "it": "it-IT", "de": "de-DE", "pt": "pt-BR",
             "ja": "ja-JP", "ko": "ko-KR", "zh": "zh-CN"}
CODES = frozenset({*LANGUAGES.values(), "en-GB", "en-AU", "fr-CA"})
# the API reference's exceptions: the row status each one is
EXCEPTIONS = {"BadRequestException": "error", "ConflictException": "error", "LimitExceededException": "rate_limited",
              "InternalFailureException": "server_error", "ServiceUnavailableException": "server_error"}
MALFORMED = (ValueError, KeyError, TypeError, AttributeError, IndexError, binascii.Error)


def region_of(url: str) -> str:
    match = re.match(r"transcribestreaming(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com$", urlsplit(url).hostname or "")
    return match.group(1) if match else DEFAULT_REGION


def audio_event(pcm16: bytes) -> bytes:
    """One AudioEvent, as the official SDK's serializer writes it (before it is signed)."""
    return encode({":message-type": "event", ":event-type": "AudioEvent",
                   ":content-type": "application/octet-stream"}, pcm16)


def language_code(language: str) -> str | None:
    """AWS's code for a BCP 47 tag: the tag itself where it is one (en-GB), else its primary language's."""
    parts = language.replace("_", "-").split("-")
    exact = f"{parts[0].lower()}-{parts[1].upper()}" if len(parts) > 1 else ""
    return exact if exact in CODES else LANGUAGES.get(parts[0].lower())


def exception_from(headers: dict, payload: bytes) -> ProviderError:
    """A mid-stream exception or error message, by kind (the message text cut short, never the request)."""
    if headers.get(":message-type") == "error":
        name, text = str(headers.get(":error-code")), str(headers.get(":error-message", ""))
    else:
        name = str(headers.get(":exception-type") or headers.get(":event-type"))
        try:
            body = json.loads(payload or b"{}")
            text = str(body.get("Message") or body.get("message") or "") if isinstance(body, dict) else str(body)
        except ValueError:
            text = payload.decode("utf-8", "replace")
    return ProviderError(f"{VENDOR} {name}: {text[:300]}", EXCEPTIONS.get(name, "error"))


class TranscribeSTT:
    sample_rate = SAMPLE_RATE

    def __init__(self, model: ModelInfo) -> None:
        self.model, self.url = model, http_url(base_url(model.vendor, DEFAULT_URL))
        self.emulator = is_loopback(self.url)
        self.language = LANGUAGES["en"]

    def in_language(self, language: str) -> "TranscribeSTT | None":
        code = language_code(language)
        if code is None:
            return None
        if code == self.language:
            return self
        copied = copy.copy(self)
        copied.language = code
        return copied

    async def connect(self, timeline: Timeline) -> "TranscribeSession":
        """Sign and open the stream and read the response's head (before t0): a refusal is its HTTP status."""
        creds, region = key_credentials(require_key(self.model.vendor).reveal()), region_of(self.url)
        headers = {"host": urlsplit(self.url).netloc, "content-type": "application/vnd.amazon.eventstream",
                   "x-amz-content-sha256": STREAMING_EVENTS, "x-amz-target": TARGET,
                   "x-amzn-transcribe-language-code": self.language, "x-amzn-transcribe-media-encoding": "pcm",
                   "x-amzn-transcribe-sample-rate": str(SAMPLE_RATE)}
        signed = sign_request("POST", PATH, "", headers, STREAMING_EVENTS, creds, region, SERVICE,
                              dt.datetime.now(dt.timezone.utc))
        sent = [(k, v) for k, v in {**headers, **signed.headers}.items() if k != "host"]
        duplex = await H2Duplex.open(self.url + PATH, sent, VENDOR, clock=timeline.clock)
        try:
            status, head = await asyncio.wait_for(duplex.head(), HEAD_TIMEOUT_S)
            if status != 200:
                raise http_failure(status, head, VENDOR)
        except asyncio.TimeoutError:
            await duplex.aclose()
            raise ProviderError(f"{VENDOR} did not answer the request", "disconnected") from None
        except BaseException:
            await duplex.aclose()
            raise
        return TranscribeSession(duplex, timeline, EventSigner(creds, region, SERVICE, signed.signature))


class TranscribeSession:
    """The caller's audio events out and the transcript events in, on one open stream."""

    def __init__(self, duplex: H2Duplex, timeline: Timeline, signer: EventSigner) -> None:
        self.duplex, self.timeline, self.signer = duplex, timeline, signer
        self._error: ProviderError | None = None
        self._reader = asyncio.create_task(self._receive())

    async def _receive(self) -> None:
        try:
            decoder = Decoder()
            async for data, at in self.duplex.received():
                decoder.feed(data)
                for message in decoder:
                    self._on(message.headers, message.payload, at)
            if decoder.pending:
                raise EventStreamError("the stream ended inside a message")
        except ProviderError as exc:
            self._error = exc
        except MALFORMED as exc:  # EventStreamError is a ValueError
            self._error = ProviderError(f"malformed message from {VENDOR} ({type(exc).__name__})", "malformed")

    def _on(self, headers: dict, payload: bytes, at: int) -> None:
        kind = headers.get(":message-type")
        if kind in ("exception", "error"):
            raise exception_from(headers, payload)
        if kind != "event" or headers.get(":event-type") != "TranscriptEvent":
            raise EventStreamError(f"unexpected message {kind!r} / {headers.get(':event-type')!r}")
        for result in json.loads(payload)["Transcript"]["Results"]:
            alternatives = result.get("Alternatives") or [{}]
            text = str(alternatives[0].get("Transcript") or "")
            if not isinstance(result["IsPartial"], bool):
                raise TypeError("IsPartial is not a boolean")
            self.timeline.mark(PARTIAL if result["IsPartial"] else FINAL, at, text=text)

    async def _send(self, payload: bytes) -> None:
        if self._error is not None:
            raise self._error
        try:
            await self.duplex.send(self.signer.sign(payload, dt.datetime.now(dt.timezone.utc)))
        except ProviderError as exc:
            await asyncio.sleep(0)  # the vendor's own exception, read just before the cut, names it better
            raise self._error or exc from None

    async def send_audio(self, pcm16: bytes) -> None:
        await self._send(audio_event(pcm16))

    async def end_audio(self) -> None:
        """The signed empty frame ends the audio; the service then sends its last results and ends."""
        await self._send(b"")
        await self.duplex.end()

    async def wait_final(self) -> None:
        """Every segment's results until the service ends the response."""
        await asyncio.shield(self._reader)
        if self._error is not None:
            raise self._error

    async def aclose(self) -> None:
        self._reader.cancel()
        await self.duplex.aclose()
