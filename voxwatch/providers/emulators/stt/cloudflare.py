"""A loopback emulator of Cloudflare Workers AI's speech recognition REST API (an ASGI app for uvicorn).

Sources (docs/vendor-notes/stt-cloudflare.md quotes them; read 2026-12-07):
- [R1] cloudflare/cloudflare-docs src/content/docs/workers-ai/get-started/rest-api.mdx @0c50ffa0:
  `POST /client/v4/accounts/{ACCOUNT_ID}/ai/run/{model}` with `Authorization: Bearer {API_TOKEN}`;
  its sample response, quoted verbatim as DOC_ENVELOPE, is the envelope every answer wears.
- [C1] cloudflare/cloudflare-docs layouts/partials/models/code-examples/automatic-speech-recognition.md:
  the speech recognition models' curl example, quoted as DOC_ASR_CURL: the audio file as the raw
  request body (`--data-binary "@talking-llama.mp3"`), which `@cf/openai/whisper` takes.
- [M1] src/content/workers-ai-models/whisper-large-v3-turbo.json @0010e3da and whisper.json
  @33c66007: each model's input (turbo: JSON with the base64 `audio`, `task`, `language`; whisper:
  the raw bytes, or `{"audio": [bytes as numbers]}`) and result (`text`, `word_count`, `segments` or
  `words` with times in seconds, `vtt`, and for turbo `transcription_info`).
- [A1] Cloudflare's API schema: a refused request is 400 `{"errors": [{"message"}], "result": {},
  "success": false}`.

Both models answer `final_ms` after the request body has arrived (STTScenario: a batch request's
processing time), the transcript and jitter keyed by the WAV's PCM samples. The audio must be a WAV
of mono 16-bit PCM here (Workers AI takes other containers; this emulator decodes WAV only); a
`task` other than transcribe, a `language` other than en, or an unknown model is a 400. With
`CloudflareScenario.replay_docs`, the answer is DOC_ENVELOPE verbatim: a text-generation result, not
a transcript. Faults: the handshake faults as HTTP statuses (`http_refusal`), `malformed` (a cut
JSON body), `disconnect` (the connection closed mid-body), `no_final` (no answer).
"""

from __future__ import annotations

import base64
import io
import json
import time
import wave
from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from voxwatch.providers.emulators.faults import http_refusal
from voxwatch.providers.emulators.ledger import saw
from voxwatch.providers.emulators.openai_compatible import TimedJSON
from voxwatch.providers.emulators.scenario import STTScenario, jitter_ms, scenario_for
from voxwatch.providers.emulators.stamped_h11 import record_at_write

TURBO, WHISPER = "@cf/openai/whisper-large-v3-turbo", "@cf/openai/whisper"

# [R1] "The API response will look like the following:", verbatim
DOC_ENVELOPE = """{
	"result": {
		"response": "Hello, World first appeared in 1974 at Bell Labs when Brian Kernighan included it in the C programming language example. It became widely used as a basic test program due to simplicity and clarity. It represents an inviting greeting from a program to the world."
	},
	"success": true,
	"errors": [],
	"messages": []
}"""

# [C1] the curl example of every speech recognition model's page, verbatim
DOC_ASR_CURL = """curl https://api.cloudflare.com/client/v4/accounts/$CLOUDFLARE_ACCOUNT_ID/ai/run/{{ .Page.Params.model.name }} \\
  -X POST \\
  -H "Authorization: Bearer $CLOUDFLARE_API_TOKEN" \\
  --data-binary "@talking-llama.mp3\""""


@dataclass(frozen=True)
class CloudflareScenario:
    """Cloudflare's own behaviour on top of the STT scenario."""

    scenario: object
    replay_docs: bool = False  # answer with DOC_ENVELOPE, verbatim


def _refused(message: str, status: int = 400) -> JSONResponse:
    return JSONResponse({"errors": [{"message": message}], "result": {}, "success": False}, status)  # [A1]


def _pcm_of(wav: bytes) -> tuple[bytes, float]:
    with wave.open(io.BytesIO(wav)) as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2:
            raise ValueError("expected mono 16-bit PCM")
        return w.readframes(w.getnframes()), w.getnframes() / w.getframerate()


def _result(model: str, text: str, seconds: float) -> dict:
    """A result in the model's published output schema [M1]: words spread evenly over the audio."""
    words = text.split()
    step = seconds / max(len(words), 1)
    timed = [{"word": w, "start": round(i * step, 3), "end": round((i + 1) * step, 3)} for i, w in enumerate(words)]
    vtt = f"WEBVTT\n\n00:00.000 --> 00:{seconds:06.3f}\n{text}"
    if model == WHISPER:
        return {"text": text, "word_count": len(words), "words": timed, "vtt": vtt}
    return {"transcription_info": {"language": "en", "language_probability": 0.99, "duration": seconds,
                                   "duration_after_vad": seconds},
            "text": text, "word_count": len(words), "vtt": vtt,
            "segments": [{"start": 0.0, "end": seconds, "text": text, "temperature": 0.0, "avg_logprob": -0.1,
                          "compression_ratio": 1.0, "no_speech_prob": 0.01, "words": timed}]}


class CloudflareEmulator:
    def __init__(self, scenario) -> None:
        self.options = scenario if isinstance(scenario, CloudflareScenario) else CloudflareScenario(scenario)
        self.stt: STTScenario | None = scenario_for(self.options.scenario, "stt")

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/client/v4/accounts/{account_id}/ai/run/{model:path}", self._run,
                                       methods=["POST"])])

    async def _run(self, request: Request) -> Response:
        s = self.stt
        if s is None:
            return _refused("this emulator serves no speech recognition here", 404)
        if request.headers.get("authorization") != f"Bearer {s.api_key}":
            return _refused("Authentication error", 401)
        refusal = http_refusal(s.fault)
        if refusal is not None:
            return refusal
        body = await request.body()
        arrived = time.perf_counter_ns()
        model = request.path_params["model"]
        if model not in (TURBO, WHISPER):
            return _refused(f"No such model {model[:60]} or task")
        try:
            request_json = json.loads(body) if body[:1] == b"{" else None
            if model == TURBO:
                if request_json is None:
                    raise ValueError("expected a JSON object with the base64 audio")  # [M1]: no raw body
                if request_json.get("task", "transcribe") != "transcribe" or request_json.get("language", "en") != "en":
                    raise ValueError("this emulator transcribes English only")
                wav = base64.b64decode(request_json["audio"], validate=True)
            else:
                wav = bytes(request_json["audio"]) if request_json is not None else body
            pcm, seconds = _pcm_of(wav)
        except (ValueError, KeyError, TypeError, EOFError, wave.Error) as exc:
            return _refused(f"could not read the input: {exc}"[:200])
        saw(self, "run", {"model": model, "account": request.path_params["account_id"],
                          "json": request_json is not None, "seconds": round(seconds, 3)})
        text = s.transcript_for(pcm)
        at = arrived + int((s.final_ms + jitter_ms(pcm, s.jitter_ms)) * 1e6)
        payload = (DOC_ENVELOPE if self.options.replay_docs else json.dumps(
            {"result": _result(model, text, seconds), "success": True, "errors": [], "messages": []})).encode()
        return TimedJSON(at, payload, s.fault, lambda: record_at_write(self, text, "final"))
