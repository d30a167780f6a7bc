"""A loopback emulator of Amazon Polly's `SynthesizeSpeech` (`POST /v1/speech`), an ASGI app.

Speaks what voxwatch/providers/tts/polly.py cites. The request must be signed with Signature Version 4
under the service `polly`, its payload hash the SHA-256 of the body (checked against the scenario's key,
`<access key id>:<secret>`: else 403 UnrecognizedClientException / InvalidSignatureException). The JSON
body is checked as service-2.json gives it: `Text`, `VoiceId` and `OutputFormat` required; `Engine` one
of standard, neural, long-form, generative (else a 400 ValidationException); `TextType` text or ssml;
text over 3000 characters is TextLengthExceededException; pcm `SampleRate` "8000" or "16000" (default
"16000"; anything else, 24000 too, is InvalidSampleRateException). This emulator serves pcm only: the
other documented formats are refused with a 400 that says so, never served as something else.

The answer is 200 with `Content-Type: audio/pcm`, `x-amzn-RequestCharacters` (the characters of the
text) and the samples as a chunked body - leading silence, then the speech (a sharp-onset tone or eSpeak
NG) - the first chunk `ttfb_ms` after the request arrived, the rest every `send_every_ms`; the end of
the body is the end of synthesis. Errors are rest-json's: the status, `x-amzn-ErrorType` and a JSON
`message`. The handshake faults answer with their status, but `rate_limited`, which Polly answers as
"HTTP status 400, and a response header indicating ThrottlingException" (limits.html; with the shared
`Retry-After`, which Polly does not document). `malformed` is a body that ends mid-sample,
`disconnect` drops the connection after two chunks, `no_final` never ends the body.

The cited sequence (DOCUMENTED_*): botocore's own example of the operation, boto/botocore
botocore/data/polly/2016-06-10/examples-1.json "to-synthesize-speech-1482186064046"
@0e6e2404b85dc336dd2889814e089bde7d1a4c55 (read 2026-12-07): its input (LexiconNames ["example"],
OutputFormat mp3, SampleRate "8000", Text "All Gaul is divided into three parts", TextType text,
VoiceId Joanna) and output (ContentType audio/mpeg, RequestCharacters 37), verbatim. The example's own
request is answered as the example says (`audio/mpeg`, `x-amzn-RequestCharacters: 37`; its lexicon is
taken as existing); `PollyScenario.documented` answers every request so, whatever format it asked for.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.emulators.aws_h2 import Verified, verify_request
from voxwatch.providers.emulators.faults import HANDSHAKE
from voxwatch.providers.emulators.ledger import saw
from voxwatch.providers.emulators.scenario import TTSScenario, scenario_for
from voxwatch.providers.emulators.speech import warmed
from voxwatch.providers.emulators.stamped_h11 import record_at_write

DOCUMENTED_REQUEST = {"LexiconNames": ["example"], "OutputFormat": "mp3", "SampleRate": "8000",
                      "Text": "All Gaul is divided into three parts", "TextType": "text", "VoiceId": "Joanna"}
DOCUMENTED_RESPONSE = {"AudioStream": "TEXT", "ContentType": "audio/mpeg", "RequestCharacters": 37}
ENGINES = ("standard", "neural", "long-form", "generative")
FORMATS = ("json", "mp3", "ogg_opus", "ogg_vorbis", "pcm", "mulaw", "alaw")
PCM_RATES = ("8000", "16000")
MAX_BILLED = 3000


@dataclass(frozen=True)
class PollyScenario:
    """Polly's own behaviour on top of the shared TTS scenario (`scenario`)."""

    scenario: object
    documented: bool = False  # answer every request as examples-1.json's example answers


def _error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"message": message}, status, headers={"x-amzn-ErrorType": kind, **(headers or {})})


def _refused(fault: str | None) -> JSONResponse | None:
    """A handshake fault as Polly answers it: throttling is a 400 naming ThrottlingException."""
    if fault not in HANDSHAKE:
        return None
    status, headers, body = HANDSHAKE[fault]
    if fault == "rate_limited":
        return _error(400, "ThrottlingException", "Rate exceeded", dict(headers))
    kinds = {401: "UnrecognizedClientException", 403: "AccessDeniedException", 503: "ServiceFailureException",
             400: "ValidationException"}
    return _error(int(status), kinds.get(int(status), "ServiceFailureException"), body.strip())


def _invalid(body: object) -> JSONResponse | None:
    """The 400 that refuses a SynthesizeSpeech body, or None."""
    if not isinstance(body, dict):
        return _error(400, "SerializationException", "the body is not a JSON object")
    text, voice, fmt = body.get("Text"), body.get("VoiceId"), body.get("OutputFormat")
    if not (isinstance(text, str) and text) or not (isinstance(voice, str) and voice) or fmt not in FORMATS:
        return _error(400, "ValidationException", "Text, VoiceId and a valid OutputFormat are required")
    if body.get("Engine", "standard") not in ENGINES or body.get("TextType", "text") not in ("text", "ssml"):
        return _error(400, "ValidationException", "invalid Engine or TextType")
    if len(text) > MAX_BILLED:
        return _error(400, "TextLengthExceededException", f"more than {MAX_BILLED} billed characters")
    return None


class PollyEmulator:
    def __init__(self, scenario) -> None:
        self.options = scenario if isinstance(scenario, PollyScenario) else PollyScenario(scenario)
        self.tts: TTSScenario | None = scenario_for(self.options.scenario, "tts")
        self._raw = warmed(self.tts, 16000)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/speech", self._speech, methods=["POST"])])

    async def _speech(self, request: Request) -> Response:
        arrived = time.perf_counter_ns()
        s = self.tts
        if s is None:
            return _error(404, "UnknownOperationException", "not found")
        raw_body = await request.body()
        signed = {k.lower(): v for k, v in request.headers.items()}
        signed.update({":path": request.url.path, "x-amz-content-sha256": hashlib.sha256(raw_body).hexdigest()})
        verified = verify_request(signed, "polly", s.api_key)
        if not isinstance(verified, Verified):
            status, kind, message = verified
            return _error(status, kind, message)
        refusal = _refused(s.fault)
        if refusal is not None:
            return refusal
        try:
            body = json.loads(raw_body)
        except (ValueError, UnicodeDecodeError):
            return _error(400, "SerializationException", "the body is not JSON")
        invalid = _invalid(body)
        if invalid is not None:
            return invalid
        saw(self, "request", {"body": body})
        text = body["Text"]
        if self.options.documented or body == DOCUMENTED_REQUEST:
            return Response(b"", media_type=DOCUMENTED_RESPONSE["ContentType"],
                            headers={"x-amzn-RequestCharacters": str(DOCUMENTED_RESPONSE["RequestCharacters"])})
        if body["OutputFormat"] != "pcm":
            return _error(400, "ValidationException", f"this emulator serves pcm only, not {body['OutputFormat']}")
        rate = body.get("SampleRate", "16000")
        if rate not in PCM_RATES:
            return _error(400, "InvalidSampleRateException", f"{rate!r} is not a pcm sample rate (8000, 16000)")
        raw, first_speech = self._raw.get(text, int(rate))

        async def audio():
            for i, at in enumerate(s.send_times(arrived, text, len(raw), first_speech)):
                await sleep_until(at)
                if s.fault == "disconnect" and i == 2:
                    request.receive.__self__.transport.abort()
                    return
                if i == 0:
                    record_at_write(self, text, "first_audio")
                if i == first_speech:
                    record_at_write(self, text, "first_speech")
                yield raw[i]
            if s.fault == "malformed":
                yield b"\x00"  # the pcm ends mid-sample
            if s.fault == "no_final":
                await asyncio.Event().wait()  # the body never ends

        return StreamingResponse(audio(), media_type="audio/pcm", headers={"x-amzn-RequestCharacters": str(len(text))})
