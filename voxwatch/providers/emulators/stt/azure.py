"""A loopback emulator of Azure AI Speech: real-time speech to text over the WebSocket speech
protocol and text to speech over the REST API, on one port (an ASGI app for uvicorn; Azure serves them
from `{region}.stt.speech.microsoft.com` and `{region}.tts.speech.microsoft.com`, one resource and key).

Sources (docs/vendor-notes/stt-azure.md and tts-azure.md quote them):
- [W1] "Speech Service WebSocket protocol", MicrosoftDocs/azure-docs
  articles/cognitive-services/Speech/API-Reference-REST/websocketprotocol.md @05ec75e1bc144c593db1a3bd07958514934395bc
  (ms.date 2017-09-15): the framing, the messages and their order, the sample messages quoted in
  DOC_TURN below, the closes (1002 a missing or malformed header, 1007 a bad payload such as audio
  without its RIFF header, 1011 a server error) and the 400 of a handshake without X-ConnectionId.
- [S1] microsoft/cognitive-services-speech-sdk-js src/common.speech/ServiceMessages/Enums.ts
  (RecognitionStatus, with TooManyRequests), read 2026-12-07.
- [T1] "Text to speech REST API", MicrosoftDocs/azure-ai-docs
  articles/ai-services/speech-service/rest-text-to-speech.md @050f1826a81fc90c310be2d8916739ae500a525c
  (https://learn.microsoft.com/azure/ai-services/speech-service/rest-text-to-speech): the request
  quoted in DOC_TTS_REQUEST, its required headers, the `raw-*-16bit-mono-pcm` output formats,
  and the statuses 400, 401, 415 and 429.

STT (`/speech/recognition/{interactive|conversation|dictation}/cognitiveservices/v1`): the upgrade
needs `Ocp-Apim-Subscription-Key` (401 when wrong) and `X-ConnectionId` (400 without it). The first
message must be `speech.config` (else close 1002); audio messages are binary with `Path: audio`
and a no-dash X-RequestId (else 1002), the first of the turn opening with a RIFF header for 16 kHz
16-bit mono PCM (else 1007). The first audio message starts the turn: `turn.start` at once,
`speech.startDetected` and `speech.hypothesis` snapshots from `first_partial_ms` after the start of
speech, the `speech.phrase` (Success) `final_ms` after the end of speech, then, once the
zero-length audio message has ended the input, `speech.endDetected` and `turn.end`. The client's
`telemetry` after `turn.end` is noted (ledger `seen:telemetry`). With `AzureScenario.max_sessions`,
a session beyond that many at once gets a phrase with RecognitionStatus `TooManyRequests` [S1]
between its `turn.start` and `turn.end` (how that reply is laid out is not documented: inferred
from the message order of [W1]). With `AzureScenario.replay_docs`, the turn is DOC_TURN verbatim.

TTS (`POST /cognitiveservices/v1`): the key header, `Content-Type: application/ssml+xml` (else
415), `X-Microsoft-OutputFormat` one of the 16-bit PCM formats, `raw-*` or `riff-*` (else 400; the
emulator speaks no compressed format) and a `User-Agent` (else 400), and an SSML body with one
`<voice name>` (else 400). The body is the PCM (after a WAV header for `riff-*`), chunked: leading
silence, then the speech, the first chunk `ttfb_ms` after the request arrived and the rest every
`send_every_ms`. The content type of a raw format's response is not documented; the emulator sends
application/octet-stream.
"""

from __future__ import annotations

import asyncio
import json
import re
import struct
import time
import uuid
from dataclasses import dataclass
from xml.etree import ElementTree

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.emulators.faults import break_off, breaks, http_refusal
from voxwatch.providers.emulators.ledger import record, saw
from voxwatch.providers.emulators.scenario import STTScenario, TTSScenario, scenario_for
from voxwatch.providers.emulators.speech import warmed
from voxwatch.providers.emulators.stamped_h11 import record_at_write

STT_PATH = "/speech/recognition/{mode}/cognitiveservices/v1"
TTS_PATH = "/cognitiveservices/v1"
MODES = ("interactive", "conversation", "dictation")  # [W1] "Speech endpoints"
NO_DASH_UUID = re.compile(r"[0-9a-fA-F]{32}")
RIFF_PCM_16K = struct.pack("<HHIIHH", 1, 1, 16000, 32000, 2, 16)  # fmt chunk: PCM, mono, 16 kHz, 16-bit [W1]
RAW_RATES = {"8khz": 8000, "16khz": 16000, "22050hz": 22050, "24khz": 24000, "44100hz": 44100, "48khz": 48000}
SSML = "{http://www.w3.org/2001/10/synthesis}"

# [W1] "Service-originated messages": the sample message of each, in the order the section gives
# for a turn (turn.start first, turn.end last), verbatim but for the CRLF line ends the wire uses.
DOC_TURN = (
    "Path: turn.start\nContent-Type: application/json; charset=utf-8\nX-RequestId: 123e4567e89b12d3a456426655440000\n\n"
    '{\n  "context": {\n    "serviceTag": "7B33613B91714B32817815DC89633AFA"\n  }\n}',
    "Path: speech.startDetected\nContent-Type: application/json; charset=utf-8\n"
    'X-RequestId: 123e4567e89b12d3a456426655440000\n\n{\n  "Offset": 100000\n}',
    "Path: speech.hypothesis\nContent-Type: application/json; charset=utf-8\n"
    'X-RequestId: 123e4567e89b12d3a456426655440000\n\n{\n  "Text": "this is a speech hypothesis",\n'
    '  "Offset": 0,\n  "Duration": 23600000\n}',
    "Path: speech.phrase\nContent-Type: application/json; charset=utf-8\n"
    'X-RequestId: 123e4567e89b12d3a456426655440000\n\n{\n  "RecognitionStatus": "Success",\n'
    '  "DisplayText": "Remind me to buy 5 pencils.",\n  "Offset": 0,\n  "Duration": 12300000\n}',
    "Path: speech.endDetected\nContent-Type: application/json; charset=utf-8\n"
    'X-RequestId: 123e4567e89b12d3a456426655440000\n\n{\n  "Offset": 0\n}',
    "Path: turn.end\nX-RequestId: 123e4567e89b12d3a456426655440000",
)

# [T1] "Sample request", verbatim (its placeholders filled in for a request that can be sent)
DOC_TTS_REQUEST = {
    "headers": {"X-Microsoft-OutputFormat": "riff-24khz-16bit-mono-pcm", "Content-Type": "application/ssml+xml",
                "Host": "westus.tts.speech.microsoft.com", "Authorization": "Bearer [Base64 access_token]",
                "User-Agent": "<Your application name>"},
    "body": ("<speak version='1.0' xml:lang='en-US'><voice xml:lang='en-US' xml:gender='Male'\n"
             "    name='en-US-ChristopherNeural'>\n        I'm excited to try text to speech!\n</voice></speak>"),
}


@dataclass(frozen=True)
class AzureScenario:
    """Azure's own behaviour on top of the shared scenarios (`scenario`: one, or a Scenarios bundle)."""

    scenario: object
    replay_docs: bool = False  # STT: answer every turn with DOC_TURN, verbatim
    max_sessions: int | None = None  # STT: sessions at once before TooManyRequests (F0 allows 1)


def _message(path: str, request_id: str, body: dict | None = None) -> str:
    head = f"Path: {path}\r\n" + ("Content-Type: application/json; charset=utf-8\r\n" if body is not None else "")
    return head + f"X-RequestId: {request_id}" + ("\r\n\r\n" + json.dumps(body) if body is not None else "")


def _headers(block: str) -> dict[str, str] | None:
    """A header block's fields (names lower-cased); None when a line is not `name: value`."""
    out = {}
    for line in block.split("\r\n") if block else ():
        name, colon, value = line.partition(":")
        if not colon:
            return None
        out[name.strip().lower()] = value.strip()
    return out


def _binary(message: bytes) -> tuple[dict[str, str], bytes] | None:
    """A binary message's headers and payload [W1]; None when the framing is broken."""
    if len(message) < 2:
        return None
    size = struct.unpack(">H", message[:2])[0]
    if size > 8192 or len(message) < 2 + size:
        return None
    try:
        headers = _headers(message[2:2 + size].decode("ascii"))
    except UnicodeDecodeError:
        return None
    return (headers, message[2 + size:]) if headers is not None else None


def _riff_pcm(payload: bytes) -> bytes | None:
    """The PCM after a RIFF header for 16 kHz 16-bit mono (the only PCM [W1] takes); None without one."""
    if payload[:4] != b"RIFF" or payload[8:16] != b"WAVEfmt " or payload[20:36] != RIFF_PCM_16K:
        return None
    size = struct.unpack("<I", payload[16:20])[0]
    data = payload.find(b"data", 20 + size)
    return payload[data + 8:] if data >= 0 else None


def _riff_header(rate: int) -> bytes:
    """A WAV header for a streamed body of unknown length (both sizes 0): PCM, mono, 16-bit."""
    return (b"RIFF\0\0\0\0WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16) + b"data\0\0\0\0")


def _key_refusal(headers, scenario) -> Response | None:
    if scenario is None:
        return PlainTextResponse("not found\n", 404)
    if headers.get("ocp-apim-subscription-key") != scenario.api_key:
        return PlainTextResponse("Access denied due to invalid subscription key or wrong API endpoint.\n", 401)
    return http_refusal(scenario.fault)


class AzureEmulator:
    def __init__(self, scenario) -> None:
        self.options = scenario if isinstance(scenario, AzureScenario) else AzureScenario(scenario)
        self.stt: STTScenario | None = scenario_for(self.options.scenario, "stt")
        self.tts: TTSScenario | None = scenario_for(self.options.scenario, "tts")
        self._chunks = warmed(self.tts, 24000)
        self._sessions = 0

    def app(self) -> Starlette:
        return Starlette(routes=[WebSocketRoute(STT_PATH, self._stt),
                                 Route(TTS_PATH, self._tts, methods=["POST"])])

    # --- STT: the WebSocket speech protocol ---

    async def _stt(self, ws: WebSocket) -> None:
        refusal = _key_refusal(ws.headers, self.stt)
        if refusal is None and ws.path_params["mode"] not in MODES:
            refusal = PlainTextResponse("not found\n", 404)
        if refusal is None and not NO_DASH_UUID.fullmatch(ws.headers.get("x-connectionid", "")):
            refusal = PlainTextResponse("X-ConnectionId must be a UUID\n", 400)  # [W1] "Connection identifier"
        if refusal is not None:
            await ws.send_denial_response(refusal)
            return
        await ws.accept()
        self._sessions += 1
        try:
            await self._session(ws)
        except WebSocketDisconnect:
            pass  # the client went away; nothing is owed to it
        finally:
            self._sessions -= 1

    async def _session(self, ws: WebSocket) -> None:
        first = await ws.receive_text()
        head = _headers(first.partition("\r\n\r\n")[0])
        if head is None or head.get("path") != "speech.config":
            await ws.close(1002, "speech.config must come first")
            return
        throttled = self.options.max_sessions is not None and self._sessions > self.options.max_sessions
        ended = asyncio.Event()
        speaker: asyncio.Task | None = None
        audio = bytearray()
        try:
            while True:
                message = await ws.receive()
                arrived = time.perf_counter_ns()
                if message["type"] == "websocket.disconnect":
                    return
                if message.get("bytes") is None:
                    text_head = _headers(str(message.get("text", "")).partition("\r\n\r\n")[0])
                    if text_head is not None and text_head.get("path") == "telemetry":
                        saw(self, "telemetry", json.loads(message["text"].partition("\r\n\r\n")[2]))
                    continue
                framed = _binary(message["bytes"])
                if framed is None:
                    await ws.close(1007, "malformed binary message")
                    return
                headers, payload = framed
                if headers.get("path") != "audio" or not NO_DASH_UUID.fullmatch(headers.get("x-requestid", "")):
                    await ws.close(1002, "an audio message needs Path: audio and a no-dash X-RequestId")
                    return
                if speaker is None:
                    pcm = _riff_pcm(payload)
                    if pcm is None:
                        await ws.close(1007, "the first audio message must carry a RIFF header (16 kHz 16-bit mono PCM)")
                        return
                    audio += pcm
                    turn = (self._throttled if throttled else self._doc_turn if self.options.replay_docs
                            else self._turn)
                    speaker = asyncio.create_task(turn(ws, arrived, pcm, headers["x-requestid"], ended))
                elif payload:
                    audio += payload
                else:
                    saw(self, "audio", {"bytes": len(audio), "request_id": headers["x-requestid"]})
                    ended.set()
        finally:
            if speaker is not None:
                speaker.cancel()

    async def _turn(self, ws: WebSocket, t0: int, first_chunk: bytes, request_id: str, ended: asyncio.Event) -> None:
        s = self.stt
        turn = s.turn(first_chunk, t0)
        await ws.send_text(_message("turn.start", request_id, {"context": {"serviceTag": uuid.uuid4().hex.upper()}}))
        ticks = int(turn.first_partial_at - t0) // 100  # 100-ns units from the start of the stream
        async for k in turn.partials():
            if s.fault == "malformed":
                await ws.send_text('Path: speech.hypothesis\r\n\r\n{"Text": ')
            elif breaks(s.fault):
                return await break_off(ws, s.fault)
            if k == 1:
                await ws.send_text(_message("speech.startDetected", request_id, {"Offset": ticks}))
                record(self, turn.transcript, "first_partial")
            await ws.send_text(_message("speech.hypothesis", request_id, {
                "Text": " ".join(turn.words[:k]).lower().strip(".?!,"), "Offset": ticks, "Duration": 3_000_000 * k}))
        if s.fault == "no_final":
            return
        await sleep_until(turn.final_at)
        record(self, turn.transcript, "final")
        await ws.send_text(_message("speech.phrase", request_id, {
            "RecognitionStatus": "Success", "DisplayText": turn.transcript, "Offset": ticks,
            "Duration": int(turn.final_at - turn.first_partial_at) // 100}))
        await ended.wait()  # conversation mode: the turn lasts as long as the input
        await ws.send_text(_message("speech.endDetected", request_id, {"Offset": int(time.perf_counter_ns() - t0) // 100}))
        await ws.send_text(_message("turn.end", request_id))

    async def _doc_turn(self, ws: WebSocket, t0: int, first_chunk: bytes, request_id: str, ended: asyncio.Event) -> None:
        """[W1]'s sample messages: turn.start as the audio starts, the rest once the input ends."""
        await ws.send_text(DOC_TURN[0].replace("\n", "\r\n"))
        await ended.wait()
        for sample in DOC_TURN[1:]:
            await ws.send_text(sample.replace("\n", "\r\n"))

    async def _throttled(self, ws: WebSocket, t0: int, first_chunk: bytes, request_id: str, ended: asyncio.Event) -> None:
        """A session beyond the resource's concurrency: the TooManyRequests status [S1], then the turn's end."""
        await ws.send_text(_message("turn.start", request_id, {"context": {"serviceTag": uuid.uuid4().hex.upper()}}))
        await ws.send_text(_message("speech.phrase", request_id, {"RecognitionStatus": "TooManyRequests",
                                                                  "Offset": 0, "Duration": 0}))
        await ws.send_text(_message("turn.end", request_id))

    # --- TTS: the REST API ---

    async def _tts(self, request: Request) -> Response:
        arrived = time.perf_counter_ns()
        refusal = _key_refusal(request.headers, self.tts)
        if refusal is not None:
            return refusal
        if not request.headers.get("content-type", "").startswith("application/ssml+xml"):
            return PlainTextResponse("Unsupported Media Type\n", 415)
        fmt = re.fullmatch(r"(raw|riff)-(\w+)-16bit-mono-pcm", request.headers.get("x-microsoft-outputformat", ""))
        if fmt is None or fmt.group(2) not in RAW_RATES or not request.headers.get("user-agent"):
            return PlainTextResponse("bad request: X-Microsoft-OutputFormat (16-bit PCM here) and User-Agent "
                                     "are required\n", 400)
        rate = RAW_RATES[fmt.group(2)]
        try:
            speak = ElementTree.fromstring(await request.body())
            voice = speak.find(f"{SSML}voice") if speak.find(f"{SSML}voice") is not None else speak.find("voice")
            text = " ".join("".join(voice.itertext()).split())
            saw(self, "tts", {"voice": voice.get("name"), "text": text, "format": fmt.group(0),
                              "user_agent": request.headers.get("user-agent")})
        except (ElementTree.ParseError, AttributeError):
            return PlainTextResponse("bad request: the body must be SSML with a voice\n", 400)
        s = self.tts
        if s.fault == "malformed":
            return Response('{"error": ', media_type="application/json")
        raw, first_speech = self._chunks.get(text, rate)
        riff = _riff_header(rate) if fmt.group(1) == "riff" else b""  # riff-*: a WAV header first [T1]

        async def body():
            for i, at in enumerate(s.send_times(arrived, text, len(raw), first_speech)):
                await sleep_until(at)
                if breaks(s.fault) and i == 2:
                    request.receive.__self__.transport.abort()
                    return
                if i == 0:
                    record_at_write(self, text, "first_audio")
                if i == first_speech:
                    record_at_write(self, text, "first_speech")
                yield riff + raw[i] if i == 0 else raw[i]
            if s.fault == "no_final":
                await asyncio.Event().wait()  # the body never ends

        return StreamingResponse(body(), media_type="application/octet-stream")
