"""A loopback emulator of Google Cloud's speech APIs over gRPC (HTTP/2 with prior knowledge, no TLS), one
port for both as one Google front end serves both: Speech-to-Text v2 `StreamingRecognize` and
Text-to-Speech v1 `StreamingSynthesize`. The sources are those of voxwatch/providers/stt/google.py and
tts/google.py; messages are read and written by field number (session/grpc_wire.py).

Every call: `content-type: application/grpc` (else HTTP 415), `authorization: Bearer <token>` (the
scenario key's token part; else UNAUTHENTICATED), a known method (else UNIMPLEMENTED). A refusal or a
handshake fault is a Trailers-Only answer (HTTP 200 whose head carries `grpc-status`, as gRPC's
PROTOCOL-HTTP2.md allows): unauthorized UNAUTHENTICATED (16), forbidden PERMISSION_DENIED (7),
rate_limited RESOURCE_EXHAUSTED (8) with a google.rpc.RetryInfo of the scenario's wait in
`grpc-status-details-bin` (google/rpc/error_details.proto), server_error UNAVAILABLE (14), bad_request
INVALID_ARGUMENT (3).

StreamingRecognize: the first request must carry `recognizer` (projects/*/locations/{us|eu}/recognizers/*,
chirp_3's multi-regions) and a streaming config with explicit LINEAR16 / MULAW / ALAW decoding, 1 channel,
8000-48000 Hz, a known model and a language; later requests only `audio` of at most 15 KB (else
INVALID_ARGUMENT); the decoding and the audio received are noted at the half-close (`saw`: "stream"). The
transcript's partials go on the scenario's cadence from the first audio's arrival (one interim result
each), its final at the scenario's time; after the client's half-close the call ends with status 0 once
the final is sent. DOCUMENTED replays the proto's own example instead (googleapis/googleapis
google/cloud/speech/v2/cloud_speech.proto, the comment on StreamingRecognizeResponse, read 2026-12-07):
seven responses, interims with their stability, two finals with two alternatives each.

StreamingSynthesize: the first request a `streaming_config` with a Chirp 3 HD voice ("only compatible
with Chirp 3: HD voices") and PCM audio (the emulator speaks PCM only; "All other encodings return an
error"), later requests only `input` text. Audio (`audio_content` of 24 kHz pcm16, or the rate asked)
starts `ttfb_ms` after the first text arrives (Chirp 3 HD answers while the input goes on), each input's
text spoken in turn, and the call ends with status 0 after the half-close. The official sample's requests
(python-docs-samples texttospeech/snippets/streaming_tts_quickstart.py @0ef3b45e: a config with voice
en-US-Chirp3-HD-Charon and no audio config, then four text inputs) are accepted as they are.

Faults: `malformed` (a message whose protobuf runs past its end), `disconnect` (the connection dropped),
`no_final` (neither the final nor the call's end), `inaudible` (TTS: silent audio).
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import re
from urllib.parse import quote

from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.emulators.faults import HANDSHAKE, RETRY_AFTER_S
from voxwatch.providers.emulators.h2_server import H2Connection, H2Stream
from voxwatch.providers.emulators.ledger import record, saw
from voxwatch.providers.emulators.scenario import STTScenario, TTSScenario, scenario_as, scenario_for, send_partials
from voxwatch.providers.emulators.speech import ChunkCache, paced
from voxwatch.providers.session import grpc_wire as pb

RECOGNIZE = "/google.cloud.speech.v2.Speech/StreamingRecognize"
SYNTHESIZE = "/google.cloud.texttospeech.v1.TextToSpeech/StreamingSynthesize"
MODELS = ("chirp_3",)
RECOGNIZER = re.compile(r"^projects/[^/]+/locations/(us|eu)/recognizers/[^/]+$")
MAX_AUDIO = 15 * 1024
DECODINGS = {1: "linear16", 2: "mulaw", 3: "alaw"}  # ExplicitDecodingConfig.AudioEncoding
PCM = 7
STREAMING_ENCODINGS = (PCM, 5, 6, 3)  # PCM, MULAW, ALAW, OGG_OPUS: "Streaming supports" these
OK, INVALID_ARGUMENT, PERMISSION_DENIED, RESOURCE_EXHAUSTED, UNIMPLEMENTED, UNAVAILABLE, UNAUTHENTICATED = \
    0, 3, 7, 8, 12, 14, 16
REFUSALS = {"unauthorized": UNAUTHENTICATED, "forbidden": PERMISSION_DENIED, "rate_limited": RESOURCE_EXHAUSTED,
            "server_error": UNAVAILABLE, "bad_request": INVALID_ARGUMENT}
BROKEN = pb.frame(b"\x0a\x05to")  # a length-delimited field that claims 5 bytes and has 2


def _alternative(transcript: str, confidence: float | None = None) -> bytes:
    """A SpeechRecognitionAlternative: transcript (1), confidence (2)."""
    return pb.message(pb.field(1, transcript), pb.float_field(2, confidence) if confidence else None)


def result(alternatives: list[bytes], final: bool = False, stability: float | None = None,
           end_s: float | None = None) -> bytes:
    """A StreamingRecognitionResult: alternatives (1), is_final (2), stability (3), result_end_offset (4)."""
    return pb.message(*(pb.field(1, a) for a in alternatives), pb.field(2, True) if final else None,
                      pb.float_field(3, stability) if stability else None,
                      pb.field(4, pb.duration(end_s)) if end_s else None)


def response(*results: bytes) -> bytes:
    """A StreamingRecognizeResponse carrying `results` (6)."""
    return pb.message(*(pb.field(6, r) for r in results))


# The proto's example, response for response (cloud_speech.proto, StreamingRecognizeResponse's comment):
#   1. results { alternatives { transcript: "tube" } stability: 0.01 }
#   2. results { alternatives { transcript: "to be a" } stability: 0.01 }
#   3. results { alternatives { transcript: "to be" } stability: 0.9 }
#      results { alternatives { transcript: " or not to be" } stability: 0.01 }
#   4. results { alternatives { transcript: "to be or not to be" confidence: 0.92 }
#                alternatives { transcript: "to bee or not to bee" } is_final: true }
#   5. results { alternatives { transcript: " that's" } stability: 0.01 }
#   6. results { alternatives { transcript: " that is" } stability: 0.9 }
#      results { alternatives { transcript: " the question" } stability: 0.01 }
#   7. results { alternatives { transcript: " that is the question" confidence: 0.98 }
#                alternatives { transcript: " that was the question" } is_final: true }
# "Concatenating these together generates the full transcript: "to be or not to be that is the question"."
DOCUMENTED = [
    response(result([_alternative("tube")], stability=0.01)),
    response(result([_alternative("to be a")], stability=0.01)),
    response(result([_alternative("to be")], stability=0.9), result([_alternative(" or not to be")], stability=0.01)),
    response(result([_alternative("to be or not to be", 0.92), _alternative("to bee or not to bee")], final=True)),
    response(result([_alternative(" that's")], stability=0.01)),
    response(result([_alternative(" that is")], stability=0.9), result([_alternative(" the question")], stability=0.01)),
    response(result([_alternative(" that is the question", 0.98), _alternative(" that was the question")], final=True)),
]
DOCUMENTED_TRANSCRIPT = "to be or not to be that is the question"


@dataclasses.dataclass(frozen=True)
class GoogleSTTScenario(STTScenario):
    """An STTScenario that can replay the proto's documented responses (DOCUMENTED) in place of its own."""

    documented: bool = False


class _Wire:
    """A call's stream as the shared fault helpers see a socket: `send` (raw bytes: a broken message)
    and `transport` (its drop)."""

    def __init__(self, stream: H2Stream) -> None:
        self.stream, self.transport = stream, stream.server.transport

    async def send(self, data: bytes) -> None:
        await self.stream.send(data)


class CallRefused(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _status(code: int, message: str) -> dict[str, str]:
    headers = {"grpc-status": str(code), "grpc-message": quote(message)}
    if code == RESOURCE_EXHAUSTED:
        retry = pb.message(pb.field(1, pb.RETRY_INFO), pb.field(2, pb.message(pb.field(1, pb.duration(RETRY_AFTER_S)))))
        status = pb.message(pb.field(1, code), pb.field(2, message), pb.field(3, retry))
        headers["grpc-status-details-bin"] = base64.b64encode(status).decode().rstrip("=")
    return headers


class GoogleEmulator:
    def __init__(self, scenario) -> None:
        self.stt = scenario_as(scenario, "stt", GoogleSTTScenario) if scenario_for(scenario, "stt") else None
        self.tts: TTSScenario | None = scenario_for(scenario, "tts")
        self.chunks = ChunkCache(self.tts) if self.tts else None

    def connection(self) -> H2Connection:
        """A protocol for one accepted TCP connection (emulators/server.py serves it)."""
        return H2Connection(self, self.serve)

    async def serve(self, stream: H2Stream) -> None:
        h = stream.headers
        scenario = {RECOGNIZE: self.stt, SYNTHESIZE: self.tts}.get(h.get(":path", ""))
        if not h.get("content-type", "").startswith("application/grpc"):
            return await stream.respond(415, {"content-type": "text/plain"}, b"gRPC requires application/grpc\n")
        try:
            if scenario is None:
                raise CallRefused(UNIMPLEMENTED, f"Method not found: {h.get(':path')}")
            if h.get("authorization") != f"Bearer {scenario.api_key.rpartition(':')[2]}":
                raise CallRefused(UNAUTHENTICATED, "Request had invalid authentication credentials.")
            if scenario.fault in HANDSHAKE:
                raise CallRefused(REFUSALS[scenario.fault], HANDSHAKE[scenario.fault][2].strip())
        except CallRefused as refused:  # before the call began: a Trailers-Only answer
            await stream.respond(200, {"content-type": "application/grpc", **_status(refused.code, refused.message)},
                                 end=True)
            return stream.stop_request()
        await stream.respond(200, {"content-type": "application/grpc"}, end=False)
        await (Recognition if scenario is self.stt else Synthesis)(self, stream, scenario).run()


class _Call:
    """One call after its head went out: requests in (whole messages, decoded, with the arrival of the
    read that completed each) until the half-close, then the call's end once the reply (`worker`) is out;
    a refusal from here on goes in the trailers."""

    def __init__(self, emulator: GoogleEmulator, stream: H2Stream, scenario) -> None:
        self.emulator, self.stream, self.wire, self.scenario = emulator, stream, _Wire(stream), scenario
        self.configured = False
        self.worker: asyncio.Task | None = None

    async def requests(self):
        """The requests, decoded (one that is not a protocol buffer: ValueError), to the half-close."""
        deframer = pb.Deframer()
        while (item := await self.stream.body.get()) is not None:
            data, arrived = item
            for message in list(deframer.feed(data)):
                yield pb.decode(message), arrived

    async def run(self) -> None:
        try:
            async for fields, arrived in self.requests():
                if self.configured:
                    self.on_request(fields, arrived)
                else:
                    self.configure(fields)
                    self.configured = True
            self.half_closed()
            if self.scenario.fault == "no_final":
                return await asyncio.sleep(60)  # neither the last of the reply nor the call's end
            if self.worker is not None and not await self.worker:
                return  # a fault ended the call
            self.end()
        except CallRefused as refused:
            self.end(refused.code, refused.message)
        except ValueError as exc:  # a request, or a message in it, that is not a protocol buffer
            self.end(INVALID_ARGUMENT, f"Invalid request: {exc}")
        finally:
            if self.worker is not None:
                self.worker.cancel()

    def configure(self, fields) -> None:
        raise NotImplementedError

    def on_request(self, fields, arrived: int) -> None:
        raise NotImplementedError

    def half_closed(self) -> None:
        """The client's requests are over."""

    def end(self, code: int = OK, message: str = "") -> None:
        self.stream.trailers(_status(code, message))
        self.stream.stop_request()


class Recognition(_Call):
    def __init__(self, emulator: GoogleEmulator, stream: H2Stream, scenario) -> None:
        super().__init__(emulator, stream, scenario)
        self.audio = bytearray()
        self.decoding: dict = {}

    def on_request(self, fields, arrived: int) -> None:
        audio = pb.first(fields, 5)
        if audio is None or 6 in fields or 3 in fields:
            raise CallRefused(INVALID_ARGUMENT, "Only the first request may carry the recognizer and config; "
                                                "every later one only audio.")
        if len(audio) > MAX_AUDIO:
            raise CallRefused(INVALID_ARGUMENT, "Audio content in a request must be at most 15 KB.")
        self.audio += audio
        if self.worker is None:
            self.worker = asyncio.create_task(self.transcribe(self.scenario, bytes(audio), arrived))

    def half_closed(self) -> None:
        saw(self.emulator, "stream", {**self.decoding, "audio": self.audio.hex()})

    def configure(self, fields) -> None:
        recognizer, config = pb.text(fields, 3), pb.first(fields, 6)
        if not RECOGNIZER.match(recognizer) or config is None or 5 in fields:
            raise CallRefused(INVALID_ARGUMENT, f"Invalid recognizer or config in the first request: {recognizer!r}")
        streaming = pb.decode(config)
        recognition, features = pb.decode(pb.first(streaming, 1, b"")), pb.decode(pb.first(streaming, 2, b""))
        decoding = pb.decode(pb.first(recognition, 8, b""))
        encoding, rate, channels = (pb.first(decoding, n, 0) for n in (1, 2, 3))
        model, languages = pb.text(recognition, 9), [bytes(v).decode() for v in recognition.get(10, [])]
        if encoding not in DECODINGS or not 8000 <= rate <= 48000 or channels not in (0, 1):
            raise CallRefused(INVALID_ARGUMENT, "Headerless audio needs explicit_decoding_config: LINEAR16, MULAW or "
                                                "ALAW, 8000-48000 Hz")
        self.decoding = {"encoding": DECODINGS[encoding], "sample_rate": rate}
        if model not in MODELS or not languages:
            raise CallRefused(INVALID_ARGUMENT, f"The model {model!r} does not exist in the location, or no language")
        saw(self.emulator, "config", {"recognizer": recognizer, "model": model, "language_codes": languages,
                                      "sample_rate_hertz": rate, "interim_results": bool(pb.first(features, 2, 0))})

    async def transcribe(self, s: GoogleSTTScenario, first_chunk: bytes, t0: int) -> bool:
        """The turn's partials and final (or the documented responses); False when a fault ended the call."""
        turn = s.turn(first_chunk, t0)
        send = self.stream.send
        if s.documented:
            for i, message in enumerate(DOCUMENTED):
                await sleep_until(turn.first_partial_at + i * turn.every_ns)
                await send(pb.frame(message))
            return True

        async def partial(k: int) -> None:
            await send(pb.frame(response(result([_alternative(" ".join(turn.words[:k]))], stability=0.01))))

        if not await send_partials(self.emulator, self.wire, turn, s.fault, BROKEN, partial):
            return False
        if s.fault == "no_final":
            return False
        await sleep_until(turn.final_at)
        record(self.emulator, turn.transcript, "final")
        await send(pb.frame(response(result([_alternative(turn.transcript, 0.92)], final=True,
                                            end_s=s.anchors_for(first_chunk)[1]))))
        return True


class Synthesis(_Call):
    def __init__(self, emulator: GoogleEmulator, stream: H2Stream, scenario) -> None:
        super().__init__(emulator, stream, scenario)
        self.rate, self.texts = 24000, asyncio.Queue()

    def on_request(self, fields, arrived: int) -> None:
        text = pb.text(pb.decode(pb.first(fields, 2, b"")), 1)
        if 1 in fields or not text:
            raise CallRefused(INVALID_ARGUMENT, "Every request after the first must only have input set.")
        self.texts.put_nowait((text, arrived))
        if self.worker is None:
            self.worker = asyncio.create_task(self.speak(self.scenario, self.rate, self.texts))

    def half_closed(self) -> None:
        self.texts.put_nowait(None)

    def configure(self, fields) -> None:
        config = pb.first(fields, 1)
        if config is None or 2 in fields:
            raise CallRefused(INVALID_ARGUMENT, "The first message must contain a streaming_config and no input.")
        config = pb.decode(config)
        voice, audio = pb.decode(pb.first(config, 1, b"")), pb.decode(pb.first(config, 4, b""))
        name, language = pb.text(voice, 2), pb.text(voice, 1)
        if "Chirp3-HD" not in name or not language:
            raise CallRefused(INVALID_ARGUMENT, f"Streaming is only supported for Chirp 3: HD voices, not {name!r}")
        encoding, rate = pb.first(audio, 1, PCM), pb.first(audio, 2, 0) or 24000
        if encoding not in STREAMING_ENCODINGS:
            raise CallRefused(INVALID_ARGUMENT, "Streaming supports PCM, ALAW, MULAW and OGG_OPUS.")
        if encoding != PCM:
            raise CallRefused(UNIMPLEMENTED, "this emulator speaks PCM only")
        saw(self.emulator, "synthesis_config", {"voice": name, "language_code": language, "sample_rate_hertz": rate})
        self.rate = rate

    async def speak(self, s: TTSScenario, rate: int, texts: asyncio.Queue) -> bool:
        """Each input's audio in turn, the first on the scenario's schedule; False when a fault ended the call."""
        while (item := await texts.get()) is not None:
            text, arrived = item
            saw(self.emulator, "input", text)
            chunks, first_speech = await asyncio.to_thread(self.emulator.chunks.get, text, rate)
            sent = 0
            async for i in paced(self.emulator, self.wire, s, text, len(chunks), first_speech, arrived, BROKEN):
                await self.stream.send(pb.frame(pb.field(1, chunks[i])))
                sent += 1
            if sent < len(chunks):
                return False
        return True
