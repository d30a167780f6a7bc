"""A loopback emulator of Groq's OpenAI-compatible audio APIs, both on one host as Groq serves them.

- `POST /openai/v1/audio/transcriptions` (multipart form: `file`, `model`, optional `language`,
  `response_format` `json` | `text` | `verbose_json`: groq/groq-python @9620fde0
  src/groq/types/audio/transcription_create_params.py): `file` must be mono 16-bit WAV here and at most
  25 MB (Groq's upload limit, console.groq.com/docs/speech-text: a 413 beyond it); answers
  `{"text": ..., "x_groq": {"id": "req_..."}}` (`text/plain` for `text`; `verbose_json` adds the
  `segments` list, one segment here) `final_ms` after the request body has arrived (STTScenario: the
  processing time of a batch request). Transcript and jitter are keyed by the sha256 of the WAV's PCM
  samples.
- `POST /openai/v1/audio/speech` (JSON `input`, `model`, `voice`, `response_format`, `sample_rate`,
  `speed`: the SDK's SpeechCreateParams): Orpheus answers only `wav` ("Orpheus only emits a ``wav``
  container", Coval's reference runner/src/coval_bench/providers/tts/groq.py @bf95d1b1) at one of the
  SDK's rates (default 48000), a voice of the model's (Coval's and Pipecat's lists), and an `input` of at
  most 200 characters (Coval: "capped at 200 characters server-side"; whether Groq cuts or refuses a
  longer one is not documented: this emulator refuses it with a 400, so a client that does not split is
  seen). The body is a WAV header with placeholder sizes (0xFFFFFFFF: the length is not known when it
  is written) in the same write as the first chunk of samples, then 16-bit mono PCM at the asked rate,
  timed by the TTSScenario (first chunk `ttfb_ms` after the body arrived, then one every
  `send_every_ms`; leading silence, then speech). The request's fields are noted in the ledger
  (`seen:speech`).

Auth: `Authorization: Bearer <key>`; a wrong key is a 401 with an OpenAI-style error (`invalid_api_key`).
Handshake faults answer the request (429 with `retry-after`, as Groq sets it on 429); `malformed` (a
broken JSON body, or half a sample at the end of the audio), `disconnect` (the body cut short),
`no_final` (no answer, or an audio body that never ends), `inaudible` (silent audio). Ledger (stamped
at the socket write): the transcription's `final` (by transcript), the speech's `first_audio` and
`first_speech` (by input text).

`GroqScenario(scenario, documented=True)` answers every transcription with DOCUMENTED_TRANSCRIPTION,
the response object of Groq's API reference, verbatim. The speech request the adapter sends is checked
against the fields of the official SDK's own test (DOCUMENTED_SPEECH_REQUEST), whose response is a mock.
"""

from __future__ import annotations

import asyncio
import json
import struct
import uuid
from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from voxwatch.providers.emulators.ledger import saw
from voxwatch.providers.emulators.streamed import TimedBody
from voxwatch.providers.emulators.openai_compatible import TimedJSON, audio_form, json_body, json_error, refuse
from voxwatch.providers.emulators.scenario import STTScenario, TTSScenario, jitter_ms, scenario_for
from voxwatch.providers.emulators.speech import warmed
from voxwatch.providers.emulators.stamped_h11 import record_at_write

STT_MODELS = ("whisper-large-v3", "whisper-large-v3-turbo")  # the SDK's enum: "currently available"
VOICES = {"canopylabs/orpheus-v1-english": ("autumn", "diana", "hannah", "austin", "daniel", "troy"),
          "canopylabs/orpheus-arabic-saudi": ("abdullah", "fahad", "sultan", "lulwa", "noura", "aisha")}
RATES = (8000, 16000, 22050, 24000, 32000, 44100, 48000)  # SpeechCreateParams.sample_rate
MAX_UPLOAD_BYTES = 25 * 1024 * 1024
MAX_INPUT_CHARS = 200

# The transcription object of Groq's API reference (console.groq.com/docs/api-reference, "Returns an
# audio transcription object"; read in a stored mirror of that page,
# https://www.scribd.com/document/807023596/GroqCloud-api-reference), verbatim.
DOCUMENTED_TRANSCRIPTION = {"text": "Your transcribed text appears here...", "x_groq": {"id": "req_unique_id"}}
# The request of the official SDK's speech test, groq/groq-python
# tests/api_resources/audio/test_speech.py @9620fde0bc576d22ce7281fe0795215bc17972da (2026-08-18):
# client.audio.speech.create(input=..., model="playai-tts", voice="Fritz-PlayAI", response_format="flac",
# sample_rate=48000, speed=1), posted to /openai/v1/audio/speech; its response is a mock ({"foo": "bar"}).
DOCUMENTED_SPEECH_REQUEST = {"input": "The quick brown fox jumped over the lazy dog", "model": "playai-tts",
                             "voice": "Fritz-PlayAI", "response_format": "flac", "sample_rate": 48000, "speed": 1}


@dataclass(frozen=True)
class GroqScenario:
    """Groq's own behaviour on top of the shared scenarios: `documented` answers every transcription
    with DOCUMENTED_TRANSCRIPTION."""

    scenario: object
    documented: bool = False


def wav_header(rate: int) -> bytes:
    """A streamed mono 16-bit PCM WAV header: RIFF and data sizes unknown when written (0xFFFFFFFF)."""
    return (b"RIFF" + struct.pack("<I", 0xFFFFFFFF) + b"WAVE" + b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16)
            + b"data" + struct.pack("<I", 0xFFFFFFFF))


class GroqEmulator:
    def __init__(self, scenario) -> None:
        options = scenario if isinstance(scenario, GroqScenario) else GroqScenario(scenario)
        self.documented = options.documented
        self.stt: STTScenario | None = scenario_for(options.scenario, "stt")
        self.tts: TTSScenario | None = scenario_for(options.scenario, "tts")
        self._audio = warmed(self.tts, 24000)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/openai/v1/audio/transcriptions", self.transcriptions, methods=["POST"]),
                                 Route("/openai/v1/audio/speech", self.speech, methods=["POST"])])

    @staticmethod
    def _refusal(scenario, headers) -> Response | None:
        return refuse(scenario, headers, "Invalid API Key")

    async def transcriptions(self, request: Request) -> Response:
        problem, form = await audio_form(self.stt, request, "Invalid API Key")
        if problem is not None:
            return problem
        if len(form.file) > MAX_UPLOAD_BYTES:
            return json_error(413, "Request Entity Too Large", code="request_too_large")
        model, response_format = form.values["model"], form.values.get("response_format", "json")
        pcm, seconds, arrived = form.pcm, form.seconds, form.arrived
        if model not in STT_MODELS:
            return json_error(404, f"The model `{model}` does not exist or you do not have access to it.",
                              code="model_not_found")
        if response_format not in ("json", "text", "verbose_json"):
            return json_error(400, f"response_format must be json, text or verbose_json, not {response_format!r}")
        s = self.stt
        text = s.transcript_for(pcm)
        at = arrived + int((s.final_ms + jitter_ms(pcm, s.jitter_ms)) * 1e6)
        answer = {"text": text, "x_groq": {"id": f"req_{uuid.uuid4().hex[:26]}"}}
        if self.documented:
            answer = DOCUMENTED_TRANSCRIPTION
        elif response_format == "verbose_json":
            answer = {"task": "transcribe", "language": "english", "duration": round(seconds, 3), "text": text,
                      "segments": [{"id": 0, "start": 0.0, "end": round(seconds, 3), "text": text}], **answer}
        payload = text.encode() if response_format == "text" else json.dumps(answer).encode()
        return TimedJSON(at, payload, s.fault, lambda: record_at_write(self, text, "final"))

    async def speech(self, request: Request) -> Response:
        refused = self._refusal(self.tts, request.headers)
        if refused is not None:
            return refused
        refused, req, arrived = await json_body(request)
        if refused is not None:
            return refused
        saw(self, "speech", req)
        missing = [name for name in ("input", "model", "voice") if not isinstance(req.get(name), str)]
        if missing:
            return json_error(400, f"missing or invalid: {', '.join(missing)}")
        text, model, voice = req["input"], req["model"], req["voice"]
        if model not in VOICES:
            return json_error(404, f"The model `{model}` does not exist or you do not have access to it.",
                              code="model_not_found")
        if voice not in VOICES[model]:
            return json_error(400, f"voice must be one of {', '.join(VOICES[model])}")
        if req.get("response_format", "wav") != "wav":
            return json_error(400, "this model supports response_format wav only")
        rate = req.get("sample_rate", 48000)
        if rate not in RATES:
            return json_error(400, f"sample_rate must be one of {', '.join(map(str, RATES))}")
        if len(text) > MAX_INPUT_CHARS:
            return json_error(400, f"input must be at most {MAX_INPUT_CHARS} characters")
        s = self.tts
        chunks, first_speech = await asyncio.to_thread(self._audio.get, text, rate)  # eSpeak must finish within ttfb_ms
        return TimedBody(chunks, first_speech, s.send_times(arrived, text, len(chunks), first_speech), s,
                         lambda what: record_at_write(self, text, what), header=wav_header(rate),
                         content_type="audio/wav")

