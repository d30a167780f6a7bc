"""Google Cloud Speech-to-Text v2 streaming recognition (`google.cloud.speech.v2.Speech/StreamingRecognize`,
gRPC over HTTP/2), as Google publishes it.

Protocol facts followed (googleapis/googleapis google/cloud/speech/v2/cloud_speech.proto, read
2026-12-07: the stored copy @189bdfa7 and the field list of RecognitionConfig as the Java reference
docs.cloud.google.com/java/docs/reference/google-cloud-speech/4.54.0 RecognitionConfigOrBuilder gives it;
docs/vendor-notes/stt-google.md):
- "This method is only available via the gRPC API (not REST)": a bidirectional stream, POST
  `/google.cloud.speech.v2.Speech/StreamingRecognize`, `content-type: application/grpc`, `te: trailers`.
  Host `{location}-speech.googleapis.com` (chirp_3 is served in the `us` and `eu` multi-regions:
  docs.cloud.google.com/speech-to-text/docs/models/chirp-3); the recognizer's location must match it.
- The first StreamingRecognizeRequest carries `recognizer` (3) =
  `projects/{project}/locations/{location}/recognizers/_` (the implicit recognizer) and
  `streaming_config` (6), and no audio: StreamingRecognitionConfig {config (1) = RecognitionConfig
  {explicit_decoding_config (8) = {encoding (1) = LINEAR16 (1), sample_rate_hertz (2) = 16000,
  audio_channel_count (3) = 1} ("required if using headerless PCM audio"), model (9), language_codes
  (10)}, streaming_features (2) = {interim_results (2) = true}} (the phone line: MULAW (2) at 8000 Hz,
  "headerless 8-bit companded mulaw samples"). Every later request carries only
  `audio` (5): "Maximum size for this field is 15 KB per request".
- The end of audio is the client's half-close (no end message); the server then sends what finals
  remain and ends the call with grpc-status 0.
- StreamingRecognizeResponse: results (6) of StreamingRecognitionResult {alternatives (1) of
  {transcript (1), confidence (2)}, is_final (2), stability (3), result_end_offset (4)}, speech_event_type
  (3), metadata (5). A response holds at most one final result (the newly settled words) and interim
  results after it, an interim hypothesis split into a stable prefix and an unstable suffix: the
  interims of one response are joined for the partial, and the finals, one per segment, make the
  transcript (the proto's comment on StreamingRecognizeResponse, its seven-response example).
- Failures are the call's grpc-status (google/rpc/code.proto), read by session/grpc_status.py:
  INVALID_ARGUMENT, UNAUTHENTICATED, PERMISSION_DENIED, RESOURCE_EXHAUSTED (its wait, when given, a
  google.rpc.RetryInfo in `grpc-status-details-bin`), UNAVAILABLE; the stream limit is ABORTED "Max
  duration of 5 minutes reached for stream." (GoogleCloudPlatform/python-docs-samples#11596).

Auth: an OAuth2 access token as gRPC metadata `authorization: Bearer <token>`, the project the recognizer
names beside it: VOXWATCH_GOOGLE_API_KEY is `<project id>:<access token>` (for example from `gcloud auth
print-access-token`; tokens expire within the hour, so a long-running service renews the variable).
"""

from __future__ import annotations

import asyncio
import copy
import re
from urllib.parse import quote, urlsplit

from voxwatch.foundation.events import FINAL, PARTIAL, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session import grpc_wire as pb
from voxwatch.providers.session.endpoints import base_url, http_url, is_loopback, require_key
from voxwatch.providers.session.h2_duplex import H2Duplex
from voxwatch.providers.session.ws_session import MALFORMED, malformed

VENDOR = "Google Cloud Speech-to-Text"
DEFAULT_LOCATION = "us"
DEFAULT_URL = f"https://{DEFAULT_LOCATION}-speech.googleapis.com"
PATH = "/google.cloud.speech.v2.Speech/StreamingRecognize"
LINEAR16 = 1  # ExplicitDecodingConfig.AudioEncoding
ENCODINGS = {"mulaw": 2}
"""Each wire encoding voxwatch sends (datasets.wire) and its ExplicitDecodingConfig.AudioEncoding: MULAW = 2,
"headerless 8-bit companded mulaw samples" (the proto)."""
MAX_AUDIO = 15 * 1024  # "Maximum size for this field is 15 KB per request"
EMULATOR_PROJECT = "voxwatch-emulator"
STATUS_WAIT_S = 1.0  # a send that fails waits this long for the call's status


def project_and_token(key: str, emulator: bool = False) -> tuple[str, str]:
    """`<project id>:<access token>` (a token has no colon; a legacy domain-scoped project id may); a
    loopback emulator takes a bare token, its recognizer in EMULATOR_PROJECT."""
    project, _, token = key.rpartition(":")
    project = project or (EMULATOR_PROJECT if emulator else "")
    if not project or not token:
        raise ProviderError(f"the {VENDOR} key must be <project id>:<access token>", "auth_error")
    return project, token


def location_of(url: str) -> str:
    """The recognizer's location, as the regional host names it (`us-speech.googleapis.com`: us)."""
    match = re.match(r"([a-z0-9-]+)-speech\.googleapis\.com$", urlsplit(url).hostname or "")
    if match:
        return match.group(1)
    return "global" if (urlsplit(url).hostname or "") == "speech.googleapis.com" else DEFAULT_LOCATION


def config_request(recognizer: str, model: str, language: str, sample_rate: int, encoding: int = LINEAR16) -> bytes:
    """The first StreamingRecognizeRequest: the recognizer and the streaming config, no audio."""
    decoding = pb.message(pb.field(1, encoding), pb.field(2, sample_rate), pb.field(3, 1))
    config = pb.message(pb.field(8, decoding), pb.field(9, model), pb.field(10, language))
    features = pb.message(pb.field(2, True))
    return pb.message(pb.field(3, recognizer), pb.field(6, pb.message(pb.field(1, config), pb.field(2, features))))


def results(response: bytes) -> list[tuple[bool, str]]:
    """A StreamingRecognizeResponse's results as (is_final, top transcript), in order."""
    out = []
    for result in pb.decode(response).get(6, []):
        fields = pb.decode(result)
        top = fields.get(1, [b""])[0]
        out.append((bool(pb.first(fields, 2, 0)), pb.text(pb.decode(top), 1)))
    return out


class GoogleSTT:
    sample_rate = 16000
    encoding = LINEAR16
    wire_encodings = tuple(ENCODINGS)
    language = "en-US"

    def __init__(self, model: ModelInfo) -> None:
        self.model, self.url = model, http_url(base_url(model.vendor, DEFAULT_URL))
        self.emulator = is_loopback(self.url)

    def on_wire(self, wire) -> "GoogleSTT":
        """A copy that declares the wire format (the phone line's 8 kHz mu-law) in its decoding config."""
        wired = copy.copy(self)
        wired.encoding, wired.sample_rate = ENCODINGS[wire.encoding], wire.sample_rate
        return wired

    async def connect(self, timeline: Timeline) -> "GoogleSTTSession":
        """Open the call and send the config request (before t0)."""
        project, token = project_and_token(require_key(self.model.vendor).reveal(), self.emulator)
        recognizer = f"projects/{project}/locations/{location_of(self.url)}/recognizers/_"
        headers = pb.request_headers(token, ("x-goog-request-params", f"recognizer={quote(recognizer, safe='')}"))
        duplex = await H2Duplex.open(self.url + PATH, headers, VENDOR, clock=timeline.clock)
        session = GoogleSTTSession(duplex, timeline)
        try:
            await duplex.send(pb.frame(config_request(recognizer, self.model.vendor_model, self.language,
                                                      self.sample_rate, self.encoding)))
        except BaseException:
            await session.aclose()
            raise
        return session


class GoogleSTTSession:
    """One StreamingRecognize call: audio requests out, responses marked as they arrive."""

    def __init__(self, duplex: H2Duplex, timeline: Timeline) -> None:
        self.duplex, self.timeline = duplex, timeline
        self._error: ProviderError | None = None
        self._reader = asyncio.create_task(self._receive())

    async def _receive(self) -> None:
        """Read the call to its end; a failure waits in `_error` for the next send or wait."""
        try:
            await self._read()
        except (ProviderError, *MALFORMED) as exc:
            self._error = exc if isinstance(exc, ProviderError) else malformed(VENDOR, exc)

    async def _read(self) -> None:
        async for response, at in pb.responses(self.duplex, VENDOR):
            marked = results(response)
            for text in (t for final, t in marked if final):
                self.timeline.mark(FINAL, at, text=text)
            interim = "".join(t for final, t in marked if not final)
            if interim:
                self.timeline.mark(PARTIAL, at, text=interim)

    async def send_audio(self, pcm16: bytes) -> None:
        if self._error is not None:
            raise self._error
        try:
            for at in range(0, len(pcm16), MAX_AUDIO):
                await self.duplex.send(pb.frame(pb.message(pb.field(5, pcm16[at:at + MAX_AUDIO]))))
        except ProviderError as exc:  # the call may have ended with its status first: that says why
            await asyncio.wait({self._reader}, timeout=STATUS_WAIT_S)
            raise (self._error or exc) from None

    async def end_audio(self) -> None:
        """The half-close: the audio is over; the server sends the finals left and ends the call."""
        if self._error is None:
            await self.duplex.end()

    async def wait_final(self) -> None:
        """The call's end (every final is in), or its failure."""
        await asyncio.shield(self._reader)
        if self._error is not None:
            raise self._error

    async def aclose(self) -> None:
        self._reader.cancel()
        await self.duplex.aclose()
