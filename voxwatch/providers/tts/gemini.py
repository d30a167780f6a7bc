"""Gemini text to speech (the Gemini API's TTS models over `streamGenerateContent`, server-sent events),
as Google documents it. Its Live API speech to speech is s2s/gemini.py; the two share only the host.

Protocol facts followed (docs/vendor-notes/tts-gemini.md quotes them; read 2026-12-07):
- [DOC] https://ai.google.dev/gemini-api/docs/speech-generation: the request is `contents` (the text)
  with `generationConfig.responseModalities: ["AUDIO"]` and
  `speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName` (every sample uses `Kore`); the audio is
  `candidates[0].content.parts[0].inlineData.data` (base64), 24 kHz 16-bit mono PCM; input text only,
  output audio only.
- [API] the Gemini API's REST methods: `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`
  answers with server-sent events, each `data:` line one GenerateContentResponse, the last with the
  candidate's `finishReason`; auth `x-goog-api-key: <key>`; errors are Google's JSON error object
  with the HTTP status (429 RESOURCE_EXHAUSTED for a rate limit; Retry-After is not documented and is
  read when sent); a bad key is 400 INVALID_ARGUMENT "API key not valid" (reason API_KEY_INVALID), as
  the Live API's close reason names it too (s2s/gemini.py): a refused key, whatever its status.
- [CB] google-gemini/cookbook quickstarts/Get_started_TTS.ipynb @05f13174: for Gemini 3.8 TTS the
  streamed chunks are raw 16-bit PCM (`AUDIO_L16`), where the unary call returns WAV bytes; each
  blob's `mimeType` (`audio/L16;codec=pcm;rate=24000`) is read for its rate.

The model needs the whole text before it speaks (no input streaming): TTFB runs from the request to
the first event, and streaming is what lets first audio come before the whole clip is made.
"""

from __future__ import annotations

import base64
import json
import re

from voxwatch.foundation.events import AUDIO, CLOSED, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session import stamped_http
from voxwatch.providers.session.endpoints import (WarmClient, WarmClients, base_url, http_errors, http_failure,
                                                  is_loopback, require_key)

VENDOR = "Gemini"
DEFAULT_URL = "https://generativelanguage.googleapis.com"
DEFAULT_VOICE = "Kore"
SAMPLE_RATE = 24000  # [DOC]; each blob's mimeType may say otherwise, and is read


def tts_request(text: str, voice: str) -> dict:
    """The generateContent body [DOC]: the text, audio out, one prebuilt voice."""
    return {"contents": [{"parts": [{"text": text}]}],
            "generationConfig": {"responseModalities": ["AUDIO"],
                                 "speechConfig": {"voiceConfig": {"prebuiltVoiceConfig": {"voiceName": voice}}}}}


def events(buffer: bytes) -> tuple[list[bytes], bytes]:
    """The complete server-sent events' `data` in `buffer`, and what is left of an event still coming."""
    *complete, rest = re.split(rb"\r?\n\r?\n", buffer)
    out = []
    for event in complete:
        data = b"\n".join(line[5:].lstrip(b" ") for line in event.splitlines() if line.startswith(b"data:"))
        if data:
            out.append(data)
    return out, rest


def refusal(status: int, body: bytes, headers) -> ProviderError:
    """A refused request, by kind: Google answers a bad key with 400 INVALID_ARGUMENT whose message
    is "API key not valid" (reason API_KEY_INVALID), a refused key for all that; else by status."""
    try:
        error = json.loads(body)["error"]
        said = f"{error.get('message', '')} {json.dumps(error.get('details', []))}"
    except (ValueError, KeyError, TypeError, AttributeError):
        said = ""
    if status == 400 and ("API key not valid" in said or "API_KEY_INVALID" in said):
        return ProviderError(f"{VENDOR} refused the key: HTTP 400 (API key not valid)", "auth_error")
    return http_failure(status, headers, VENDOR)


class GeminiTTS:
    """One warmed HTTP client per adapter, reused across items (a connection per item would time TLS)."""

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)
        self._clients = WarmClients(self.url, VENDOR, lambda: {"x-goog-api-key": require_key(model.vendor).reveal()})

    async def connect(self, timeline: Timeline, voice: str | None = None) -> "GeminiTTSSession":
        require_key(self.model.vendor)  # a missing key fails every item, not only the first
        return GeminiTTSSession(await self._clients.get(), timeline, self.model.vendor_model,
                                voice or self.model.voice or DEFAULT_VOICE)

    async def aclose(self) -> None:
        await self._clients.aclose()

    def close(self) -> None:
        """For the runner's synchronous clean-up."""
        self._clients.close()


class GeminiTTSSession:
    def __init__(self, client: WarmClient, timeline: Timeline, model: str, voice: str) -> None:
        self.client, self.timeline, self.model, self.voice = client, timeline, model, voice
        self._offset = 0

    async def synthesize(self, text: str) -> None:
        cold, buffer, finished = [False], b"", False
        path = f"/v1beta/models/{self.model}:streamGenerateContent"
        with http_errors(VENDOR, "events"):
            async with self.client.stream("POST", path, cold, params={"alt": "sse"},
                                          json=tts_request(text, self.voice)) as response:
                stamped_http.mark_exchange(self.timeline, response, cold[0])
                if response.status_code != 200:
                    raise refusal(response.status_code, await response.aread(), response.headers)
                async for chunk, at in stamped_http.received(response):
                    complete, buffer = events(buffer + chunk)
                    for data in complete:
                        finished = self._event(data, at) or finished
        if not finished:
            raise ProviderError(f"{VENDOR} ended the stream before a finishReason", "disconnected")
        self.timeline.mark(CLOSED)

    def _event(self, data: bytes, at: int) -> bool:
        """Mark one GenerateContentResponse's audio; True when it finishes the candidate."""
        try:
            candidate = json.loads(data)["candidates"][0]
            parts = candidate.get("content", {}).get("parts", [])
            blobs = [(p["inlineData"]["mimeType"], base64.b64decode(p["inlineData"]["data"], validate=True))
                     for p in parts if "inlineData" in p]
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ProviderError(f"malformed event from {VENDOR} ({type(exc).__name__})", "malformed") from None
        for mime, pcm in blobs:
            rate = re.search(r"rate=(\d+)", mime)
            if not mime.lower().startswith("audio/l16") or len(pcm) % 2:
                raise ProviderError(f"malformed audio from {VENDOR} ({mime[:60]!r}, {len(pcm)} bytes)", "malformed")
            self.timeline.mark(AUDIO, at_ns=at, sample_offset=self._offset, n_samples=len(pcm) // 2,
                               sample_rate=int(rate.group(1)) if rate else SAMPLE_RATE, audio=pcm)
            self._offset += len(pcm) // 2
        return bool(candidate.get("finishReason"))

    async def aclose(self) -> None:
        """The client stays open for the next item."""
