"""Amazon Polly text-to-speech (`SynthesizeSpeech`, `POST /v1/speech`: a signed JSON request answered by
the audio as a streamed body), as AWS documents it.

Protocol facts followed (read 2026-12-07):
- Endpoint, auth and request (boto/botocore botocore/data/polly/2016-06-10/service-2.json
  @f725d8518de022a1ce28df7b520c22ff909d7997, 2026-03-25; endpoint-rule-set-1.json): the host
  `https://polly.<region>.amazonaws.com`; protocol rest-json; Signature Version 4 under the signing name
  `polly`, the payload hash the SHA-256 of the JSON body. `SynthesizeSpeech` is `POST /v1/speech` with
  a JSON body: `Engine` (standard | neural | long-form | generative), `OutputFormat` (json | mp3 |
  ogg_opus | ogg_vorbis | pcm | mulaw | alaw), `SampleRate` (a string), `Text`, `TextType` (text | ssml),
  `VoiceId`, and optional `LanguageCode`, `LexiconNames`, `SpeechMarkTypes`.
- Audio (the same model's SampleRate documentation, API_SynthesizeSpeech): pcm is signed 16-bit, mono,
  little-endian, headerless; "Valid values for pcm are "8000" and "16000" The default value is
  "16000"" (24000 is a rate of mp3 and ogg_vorbis only): the adapter asks for pcm at 16000 Hz.
- The response: 200, `Content-Type` of the audio (`audio/pcm` for pcm), `x-amzn-RequestCharacters`
  (the characters billed) and the `AudioStream` body, streamed; the end of the body is the end of the
  synthesis. SynthesizeSpeech takes the whole text at once (no incremental input).
- Failures (service-2.json errors; rest-json: the HTTP status, the error code in `x-amzn-ErrorType`,
  whose value may carry a `:<namespace>` tail, and a JSON `message`): TextLengthExceededException,
  InvalidSampleRateException, InvalidSsmlException, LexiconNotFoundException,
  MarksNotSupportedForFormatException, SsmlMarksNotSupportedForTextTypeException,
  LanguageNotSupportedException, EngineNotSupportedException (400 each), ServiceFailureException (500).
  Throttling: "HTTP status 400, and a response header indicating ThrottlingException"
  (docs.aws.amazon.com/polly/latest/dg/limits.html), so a 400 whose error type is ThrottlingException
  is a rate limit, never a refused request. No Retry-After is documented; one that comes is read.
- Quotas (limits.html): SynthesizeSpeech 8 transactions a second for the generative, long-form and
  neural engines, 80 for standard; text at most 6000 characters, 3000 of them billed.

Credentials: VOXWATCH_POLLY_API_KEY is `<access key id>:<secret access key>[:<session token>]`; the region
is the endpoint host's (us-east-1 by default, or for any other host). Polly has no model id: the engine
(the registry id's model part) and the voice choose the model. The voices registered speak English, so
the adapter takes English datasets only.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from urllib.parse import urlsplit

from voxwatch.foundation.events import CLOSED, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session import stamped_http
from voxwatch.providers.session.aws_event_stream import key_credentials, sign_request
from voxwatch.providers.session.endpoints import (WarmClient, WarmClients, base_url, http_errors, http_failure,
                                                  is_loopback, require_key, retry_after_s)
from voxwatch.providers.session.pcm import PCMMarks

VENDOR = "Polly"
SERVICE = "polly"
DEFAULT_REGION = "us-east-1"
DEFAULT_URL = f"https://polly.{DEFAULT_REGION}.amazonaws.com"
PATH = "/v1/speech"
SAMPLE_RATE = 16000
ENGINES = ("standard", "neural", "long-form", "generative")
THROTTLED = "ThrottlingException"
SERVER_ERRORS = ("ServiceFailureException",)


def region_of(url: str) -> str:
    match = re.match(r"polly(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com$", urlsplit(url).hostname or "")
    return match.group(1) if match else DEFAULT_REGION


def error_type(headers) -> str:
    """The rest-json error code: `x-amzn-ErrorType` up to any `:<namespace>` tail."""
    return str(headers.get("x-amzn-errortype") or "").split(":", 1)[0].strip()


def failure(status: int, headers, body: bytes) -> ProviderError:
    """A refused SynthesizeSpeech by kind: throttling is a 400 that names ThrottlingException."""
    kind = error_type(headers)
    try:
        message = str(json.loads(body or b"{}").get("message", ""))[:200]
    except (ValueError, AttributeError):
        message = ""
    if kind == THROTTLED:
        wait = retry_after_s(headers)
        hint = f"; Retry-After {wait:g} s" if wait is not None else ""
        return ProviderError(f"{VENDOR} rate limit: HTTP {status} {kind}{hint}", "rate_limited", wait)
    if kind in SERVER_ERRORS:
        return ProviderError(f"{VENDOR} server error: HTTP {status} {kind}", "server_error")
    base = http_failure(status, headers, VENDOR)
    detail = f" {kind}: {message}" if kind else ""
    return ProviderError(f"{base}{detail}", base.status, base.retry_after_s)


class PollyTTS:
    """One warmed HTTP client per adapter, reused across items; each request signed as it is sent."""

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)
        self.engine = model.vendor_model
        if self.engine not in ENGINES:
            raise ProviderError(f"{model.id}: Polly has no engine {self.engine!r}", "error")
        self._clients = WarmClients(self.url, VENDOR, lambda: {})

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "PollySession":
        key = key_credentials(require_key(self.model.vendor).reveal())  # a missing key fails every item
        return PollySession(await self._clients.get(), timeline, self, voice or self.model.voice or "", key)

    async def aclose(self) -> None:
        await self._clients.aclose()

    def close(self) -> None:
        """For the runner's synchronous clean-up."""
        self._clients.close()


class PollySession:
    def __init__(self, client: WarmClient, timeline: Timeline, adapter: PollyTTS, voice: str, credentials) -> None:
        self.client, self.timeline, self.adapter, self.voice, self.credentials = client, timeline, adapter, voice, credentials

    def request(self, text: str) -> tuple[bytes, dict[str, str]]:
        """The JSON body and its signed headers (signed now: the signature carries the time)."""
        body = json.dumps({"Engine": self.adapter.engine, "OutputFormat": "pcm", "SampleRate": str(SAMPLE_RATE),
                           "Text": text, "TextType": "text", "VoiceId": self.voice}).encode()
        headers = {"host": urlsplit(self.client.base).netloc, "content-type": "application/json"}
        signed = sign_request("POST", PATH, "", headers, hashlib.sha256(body).hexdigest(), self.credentials,
                              region_of(self.adapter.url), SERVICE, dt.datetime.now(dt.timezone.utc))
        return body, {"content-type": headers["content-type"], **signed.headers}

    async def synthesize(self, text: str) -> None:
        body, headers = self.request(text)
        cold = [False]
        audio = PCMMarks(self.timeline, SAMPLE_RATE, VENDOR)
        with http_errors(VENDOR, "audio"):
            async with self.client.stream("POST", PATH, cold, content=body, headers=headers) as response:
                stamped_http.mark_exchange(self.timeline, response, cold[0])
                if response.status_code != 200:
                    raise failure(response.status_code, response.headers, await response.aread())
                kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if kind != "audio/pcm":
                    raise ProviderError(f"malformed response from {VENDOR} (content-type {kind[:60]!r}, "
                                        f"not audio/pcm)", "malformed")
                async for data, at in stamped_http.received(response):
                    audio.add(data, at)
        audio.end()
        self.timeline.mark(CLOSED)

    async def aclose(self) -> None:
        """Nothing to close: the warmed client is the adapter's, reused by the next item."""

