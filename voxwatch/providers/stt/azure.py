"""Azure AI Speech real-time speech to text over its WebSocket speech protocol, as the Speech SDK speaks it.

Protocol facts followed (docs/vendor-notes/stt-azure.md has the quotes):
- [W1] Microsoft's "Speech Service WebSocket protocol" (MicrosoftDocs/azure-docs
  articles/cognitive-services/Speech/API-Reference-REST/websocketprotocol.md @05ec75e1, ms.date
  2017-09-15), the only published description of the protocol the Speech SDKs still speak;
- [S1] the official JavaScript Speech SDK (MIT), microsoft/cognitive-services-speech-sdk-js
  src/common.speech/ServiceMessages/Enums.ts (RecognitionStatus) and SimpleSpeechPhrase.ts (read 2026-12-07);
- [R1] Coval's runner (Apache-2.0), coval-ai/benchmarks runner/src/coval_bench/providers/stt/azure.py
  @bf95d1b1, which drives today's service over this raw protocol: the host
  `{region}.stt.speech.microsoft.com`, the `conversation` path and the key header.

The facts:
- `GET wss://{region}.stt.speech.microsoft.com/speech/recognition/conversation/cognitiveservices/v1
  ?language=en-US&format=simple` with `Ocp-Apim-Subscription-Key: <key>` and `X-ConnectionId: <UUID,
  no dashes>` (missing or invalid: HTTP 400) [W1][R1]. The `conversation` mode recognises across
  pauses: one `speech.phrase` per phrase [W1][R1]. The region comes from VOXWATCH_AZURE_REGION.
- Text messages are HTTP-style headers (`Path`, `X-RequestId` as a UUID without dashes,
  `X-Timestamp` ISO 8601, `Content-Type`), a blank line, then the body. Binary messages are a 2-byte
  big-endian header length, US-ASCII headers, then the payload [W1].
- First `speech.config` (JSON client context; no X-RequestId), once per connection, before any
  audio [W1]: sent in `connect`, before t0.
- Audio: binary `Path: audio`, `Content-Type: audio/x-wav`, at most 8,192 bytes a message; the
  first of a turn starts with a RIFF header; PCM is 16 kHz, 16-bit, mono [W1]. A zero-length
  `audio` body ends the input: the client's end of speech [W1]. That is `end_audio`.
- The service answers `turn.start` (always first), `speech.startDetected`, `speech.hypothesis`
  snapshots (~every 300 ms; not cumulative), `speech.phrase` with `RecognitionStatus` and
  `DisplayText`, `speech.endDetected`, and `turn.end` (always last) [W1]. RecognitionStatus is one
  of Success, NoMatch, InitialSilenceTimeout, BabbleTimeout, Error, EndOfDictation,
  TooManyRequests [S1]: the last is how throttling shows in-band (no Retry-After is documented).
- After `turn.end` the client acknowledges the turn with one `telemetry` message listing when it
  received each message, or the service may end the connection [W1].
- Closes [W1]: 1000 normal, 1002 protocol error (a missing or malformed header), 1007 invalid
  payload (bad framing, a bad audio format), 1011 server error: the RFC readings of close_codes.

So a hypothesis is a partial, each successful phrase a final (the hypothesis is their join), and
the turn ends at `turn.end`; a close before it is a failure (the docs: no `turn.end` means the
connection is in an invalid state).
"""

from __future__ import annotations

import json
import os
import struct
import uuid
from datetime import datetime, timezone
from urllib.parse import urlencode

from voxwatch.foundation.events import FINAL, PARTIAL, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.keys import vendor_variable
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.providers.session.stamped import received
from voxwatch.providers.session.ws_session import ReaderSession

VENDOR = "Azure"
DEFAULT_REGION = "eastus"
PATH = "/speech/recognition/conversation/cognitiveservices/v1"
SAMPLE_RATE = 16000
MAX_CHUNK = 8192  # [W1]: the largest audio message body
FAILED = {"TooManyRequests": "rate_limited", "Error": "error"}  # RecognitionStatus -> row status [S1]


def region() -> str:
    """The Speech resource's region (VOXWATCH_AZURE_REGION), which names the host."""
    return os.environ.get(vendor_variable("azure", "REGION"), "").strip() or DEFAULT_REGION


def stamp() -> str:
    """An X-Timestamp: UTC, ISO 8601 with milliseconds [W1]."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def text_message(path: str, body: str, content_type: str, request_id: str | None = None) -> str:
    headers = [f"Path: {path}"] + ([f"X-RequestId: {request_id}"] if request_id else [])
    headers += [f"X-Timestamp: {stamp()}", f"Content-Type: {content_type}"]
    return "\r\n".join(headers) + "\r\n\r\n" + body


def audio_message(request_id: str, payload: bytes) -> bytes:
    """A binary `audio` message: the header block's length (2 bytes, big-endian), the headers, the audio."""
    head = (f"Path: audio\r\nX-RequestId: {request_id}\r\nX-Timestamp: {stamp()}\r\n"
            "Content-Type: audio/x-wav").encode("ascii")
    return struct.pack(">H", len(head)) + head + payload


def wav_header(sample_rate: int = SAMPLE_RATE) -> bytes:
    """The RIFF header the first audio message opens with: PCM, mono, 16-bit; the stream's length is
    not known, so both size fields are 0."""
    return (b"RIFF" + struct.pack("<I", 0) + b"WAVEfmt " +
            struct.pack("<IHHIIHH", 16, 1, 1, sample_rate, sample_rate * 2, 2, 16) + b"data" + struct.pack("<I", 0))


def parse_text(message: str) -> tuple[dict[str, str], str]:
    """A text message's headers (names lower-cased) and body (none: `turn.end` has only headers); a
    header line that is not `name: value` is malformed (ValueError)."""
    head, _, body = message.partition("\r\n\r\n")
    headers = {}
    for line in head.split("\r\n"):
        name, colon, value = line.partition(":")
        if not colon:
            raise ValueError("a header line without a colon")
        headers[name.strip().lower()] = value.strip()
    return headers, body


def phrase_text(body: dict) -> str:
    """A phrase's text: `DisplayText` (format=simple), or the best of `NBest` (format=detailed)."""
    if "DisplayText" in body:
        return str(body["DisplayText"])
    return str(body["NBest"][0]["Display"])


class AzureSTT:
    sample_rate = SAMPLE_RATE

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, f"wss://{region()}.stt.speech.microsoft.com")
        self.emulator = is_loopback(self.url)

    async def connect(self, timeline: Timeline) -> "AzureSession":
        key = require_key(self.model.vendor)
        query = urlencode({"language": "en-US", "format": "simple"})
        ws = await open_websocket(f"{self.url}{PATH}?{query}", {"Ocp-Apim-Subscription-Key": key.reveal(),
                                                                 "X-ConnectionId": uuid.uuid4().hex},
                                  VENDOR, clock=timeline.clock)
        config = {"context": {"system": {"name": "voxwatch", "version": "1.0.0"},
                              "os": {"platform": "Linux", "name": "voxwatch", "version": "1"},
                              "device": {"manufacturer": "voxwatch", "model": "harness", "version": "1"}}}
        await ws.send(text_message("speech.config", json.dumps(config), "application/json; charset=utf-8"))
        return AzureSession(ws, timeline)


class AzureSession(ReaderSession):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline) -> None:
        self.timeline = timeline
        self.request_id = uuid.uuid4().hex  # one turn: one request
        self._opened = False  # the RIFF header went with the first chunk
        self._received: dict[str, list[str]] = {}  # path -> when each message came (the telemetry)
        super().__init__(ws)

    async def _read(self) -> None:
        async for message, at in received(self.ws):
            if isinstance(message, bytes):
                continue  # the recognizer sends no audio
            headers, body = parse_text(message)
            path = headers["path"]
            self._received.setdefault(path, []).append(stamp())
            if path == "speech.hypothesis":
                self.timeline.mark(PARTIAL, at, text=str(json.loads(body)["Text"]))
            elif path == "speech.phrase":
                data = json.loads(body)
                status = data["RecognitionStatus"]
                if status in FAILED:
                    raise ProviderError(f"{VENDOR} recognition status {status}", FAILED[status])
                if status == "Success":
                    self.timeline.mark(FINAL, at, text=phrase_text(data))
            elif path == "turn.end":
                await self._acknowledge()
                return
        raise closed(VENDOR, self.ws.close_code, "before turn.end")

    async def _acknowledge(self) -> None:
        """The turn's telemetry: when each message arrived [W1]."""
        body = {"ReceivedMessages": [{path: times[0] if len(times) == 1 else times}
                                     for path, times in self._received.items()]}
        await self.ws.send(text_message("telemetry", json.dumps(body), "application/json", self.request_id))

    def _failed(self) -> None:
        """Raise the reader's failure, if any: audio sent into a failed turn would only queue replies
        nobody reads, and hold up the close behind them."""
        if self._error is not None:
            raise self._error

    async def send_audio(self, pcm16: bytes) -> None:
        self._failed()
        if not self._opened:
            self._opened = True
            pcm16 = wav_header() + pcm16
        for i in range(0, len(pcm16), MAX_CHUNK):
            await self.ws.send(audio_message(self.request_id, pcm16[i:i + MAX_CHUNK]))

    async def end_audio(self) -> None:
        """A zero-length audio message: the client's end of speech [W1]."""
        self._failed()
        await self.ws.send(audio_message(self.request_id, b""))

    async def wait_final(self) -> None:
        await self._wait()
