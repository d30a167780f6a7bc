"""Google Cloud Text-to-Speech streaming synthesis (`google.cloud.texttospeech.v1.TextToSpeech/
StreamingSynthesize`, gRPC over HTTP/2), as Google publishes it.

Protocol facts followed (googleapis/googleapis google/cloud/texttospeech/v1/cloud_tts.proto, last changed
@a481d8bc 2026-03-31, read at f8291d2b; docs/vendor-notes/tts-google.md):
- A bidirectional stream, POST `/google.cloud.texttospeech.v1.TextToSpeech/StreamingSynthesize` on
  `texttospeech.googleapis.com` (gRPC only, no REST binding), `content-type: application/grpc`.
- "The first message must contain a `streaming_config` that fully specifies the request configuration
  and must not contain `input`. All subsequent messages must only have `input` set."
  StreamingSynthesizeRequest {streaming_config (1) = StreamingSynthesizeConfig {voice (1) =
  VoiceSelectionParams {language_code (1), name (2)}, streaming_audio_config (4) = StreamingAudioConfig
  {audio_encoding (1) = PCM (7, headerless 16-bit little-endian), sample_rate_hertz (2) = 24000}},
  input (2) = StreamingSynthesisInput {text (1)}}. The official sample
  (GoogleCloudPlatform/python-docs-samples texttospeech/snippets/streaming_tts_quickstart.py
  @0ef3b45e) sends the config, then the text requests, then ends the request stream.
- StreamingSynthesizeResponse {audio_content (1)}: "headerless LINEAR16 audio with a sample rate of
  24000" by default. There is no done message: the synthesis is over when the server ends the call
  with grpc-status 0 after the client's half-close; a failure is the call's grpc-status (INVALID_ARGUMENT
  for a bad encoding or rate, RESOURCE_EXHAUSTED for a quota, UNAUTHENTICATED...).
- Streaming is "only compatible with Chirp 3: HD voices"
  (docs.cloud.google.com/text-to-speech/docs/create-audio-text-streaming); a voice name carries its
  language (`en-US-Chirp3-HD-Charon`), which goes as `language_code`.

Auth: VOXWATCH_GOOGLE_API_KEY is `<project id>:<access token>` (the Speech-to-Text adapter's form):
the token as `authorization: Bearer`, the project as `x-goog-user-project` (the quota project of a
user's credentials). The config request is sent in `connect`, before t0; REQUEST_SENT is the text's.
"""

from __future__ import annotations

from voxwatch.foundation.events import CLOSED, REQUEST_SENT, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session import grpc_wire as pb
from voxwatch.providers.session.endpoints import base_url, http_url, is_loopback, require_key
from voxwatch.providers.session.h2_duplex import H2Duplex
from voxwatch.providers.session.pcm import PCMMarks
from voxwatch.providers.session.ws_session import MALFORMED, malformed

VENDOR = "Google Cloud Text-to-Speech"
DEFAULT_URL = "https://texttospeech.googleapis.com"
PATH = "/google.cloud.texttospeech.v1.TextToSpeech/StreamingSynthesize"
PCM = 7  # AudioEncoding.PCM: headerless 16-bit signed little-endian
SAMPLE_RATE = 24000
DEFAULT_VOICE = "en-US-Chirp3-HD-Charon"  # the official streaming sample's voice


def language_of(voice: str) -> str:
    """The BCP-47 language a voice's name starts with (`en-US-Chirp3-HD-Charon`: en-US)."""
    return "-".join(voice.split("-")[:2])


def config_request(voice: str) -> bytes:
    """The first StreamingSynthesizeRequest: the voice and the audio format, no input."""
    selection = pb.message(pb.field(1, language_of(voice)), pb.field(2, voice))
    audio = pb.message(pb.field(1, PCM), pb.field(2, SAMPLE_RATE))
    return pb.message(pb.field(1, pb.message(pb.field(1, selection), pb.field(4, audio))))


class GoogleTTS:
    def __init__(self, model: ModelInfo) -> None:
        self.model, self.url = model, http_url(base_url(model.vendor, DEFAULT_URL))
        self.emulator = is_loopback(self.url)

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "GoogleTTSSession":
        """Open the call and send the config request (before t0)."""
        project, _, token = require_key(self.model.vendor).reveal().rpartition(":")
        headers = pb.request_headers(token, *([("x-goog-user-project", project)] if project else []))
        duplex = await H2Duplex.open(self.url + PATH, headers, VENDOR, clock=timeline.clock)
        try:
            await duplex.send(pb.frame(config_request(voice or self.model.voice or DEFAULT_VOICE)))
        except BaseException:
            await duplex.aclose()
            raise
        return GoogleTTSSession(duplex, timeline)


class GoogleTTSSession:
    """One StreamingSynthesize call: the text, the half-close, the audio as it arrives."""

    def __init__(self, duplex: H2Duplex, timeline: Timeline) -> None:
        self.duplex, self.timeline = duplex, timeline

    async def synthesize(self, text: str) -> None:
        self.timeline.mark(REQUEST_SENT)
        cut: ProviderError | None = None
        try:
            await self.duplex.send(pb.frame(pb.message(pb.field(2, pb.message(pb.field(1, text))))))
            await self.duplex.end()
        except ProviderError as exc:  # the call may have ended first (a refusal at once): its status says why
            cut = exc
        try:
            await self._read()
        except MALFORMED as exc:
            raise malformed(VENDOR, exc) from None
        if cut is not None:
            raise cut
        self.timeline.mark(CLOSED)

    async def _read(self) -> None:
        marks = PCMMarks(self.timeline, SAMPLE_RATE, VENDOR)
        async for response, at in pb.responses(self.duplex, VENDOR):
            marks.add(bytes(pb.first(pb.decode(response), 1, b"")), at)
        marks.end()

    async def aclose(self) -> None:
        await self.duplex.aclose()
