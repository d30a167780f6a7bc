"""Cloudflare Workers AI speech recognition (`@cf/openai/whisper-large-v3-turbo`) over the REST API, as
the vendor documents it. Batch: Workers AI's Whisper models take a whole recording and answer once.

Protocol facts followed (docs/vendor-notes/stt-cloudflare.md has the quotes; read 2026-12-07):
- [R1] cloudflare/cloudflare-docs src/content/docs/workers-ai/get-started/rest-api.mdx @0c50ffa0: a
  model runs at `POST https://api.cloudflare.com/client/v4/accounts/{ACCOUNT_ID}/ai/run/{model}` with
  `Authorization: Bearer {API_TOKEN}`, and the answer is the envelope `{"result": {...}, "success":
  true, "errors": [], "messages": []}`.
- [M1] cloudflare/cloudflare-docs src/content/workers-ai-models/whisper-large-v3-turbo.json @0010e3da:
  the input is a JSON object whose `audio` (required) is the base64 of the audio data, with `task`
  (default transcribe), `language` (default en) and `vad_filter` (default false); the result has
  `text` (required), `word_count`, `segments` (with word times in seconds), `transcription_info`
  and `vtt`.
- [A1] Cloudflare's API schema (operation "Execute @cf/openai/whisper-large-v3-turbo model"): a
  refused request is `400` with `{"errors": [{"message"}], "result": {}, "success": false}`.
- [L1] cloudflare/cloudflare-docs src/content/docs/workers-ai/platform/limits.mdx @12de1227: 720
  requests a minute for Automatic Speech Recognition; a 429's Retry-After is not documented (read
  when sent).

The account comes from VOXWATCH_CLOUDFLARE_ACCOUNT_ID (not a secret; a loopback emulator takes any).
Cloudflare's model names (`@cf/openai/...`) do not fit the registry's id grammar: the registry
names the model by its last part, and MODELS gives its Workers AI name.
"""

from __future__ import annotations

import base64
import json
import os

from voxwatch.foundation.audio import wav_bytes
from voxwatch.foundation.events import FINAL, Timeline
from voxwatch.providers.base import ProviderError
from voxwatch.providers.keys import vendor_variable
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session import stamped_http
from voxwatch.providers.session.endpoints import (WarmClient, WarmClients, base_url, http_errors, http_failure, is_loopback,
                                                  require_key)

VENDOR = "Cloudflare"
DEFAULT_URL = "https://api.cloudflare.com"
MODELS = {"whisper-large-v3-turbo": "@cf/openai/whisper-large-v3-turbo"}
EMULATOR_ACCOUNT = "emulator-account"


def run_path(account: str, model: str) -> str:
    return f"/client/v4/accounts/{account}/ai/run/{model}"


def transcript(body: bytes) -> str:
    """The `result.text` of a successful envelope [R1][M1]; anything else breaks the protocol."""
    try:
        envelope = json.loads(body)
        if envelope["success"] is not True:
            raise ProviderError(f"{VENDOR} answered success false: {str(envelope.get('errors'))[:200]}", "error")
        text = envelope["result"]["text"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ProviderError(f"malformed response from {VENDOR} ({type(exc).__name__})", "malformed") from None
    if not isinstance(text, str):
        raise ProviderError(f"malformed response from {VENDOR} (text is not a string)", "malformed")
    return text


class CloudflareSTT:
    sample_rate = 16000
    language = "en"  # [M1]'s default

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)
        self._clients = WarmClients(self.url, VENDOR, lambda: {
            "Authorization": f"Bearer {require_key(model.vendor).reveal()}"})
        self._warm: WarmClient | None = None

    def _path(self) -> str:
        account = os.environ.get(vendor_variable("cloudflare", "ACCOUNT_ID"), "").strip()
        if not account and not self.emulator:
            raise ProviderError(f"{vendor_variable('cloudflare', 'ACCOUNT_ID')} is not set", "error")
        return run_path(account or EMULATOR_ACCOUNT, MODELS[self.model.vendor_model])

    async def connect(self, timeline: Timeline) -> "CloudflareSTT":
        require_key(self.model.vendor)
        self._warm = await self._clients.get()
        return self

    async def transcribe(self, pcm16: bytes, timeline: Timeline) -> None:
        # the JSON body is encoded before the clock starts, so the request goes out in one piece
        request = {"audio": base64.b64encode(wav_bytes(pcm16, self.sample_rate)).decode("ascii"),
                   "task": "transcribe", "language": self.language}
        body, path, cold = json.dumps(request).encode(), self._path(), [False]
        with http_errors(VENDOR, "response"):
            async with self._warm.stream("POST", path, cold, content=body,
                                         headers={"content-type": "application/json"}) as response:
                stamped_http.mark_exchange(timeline, response, cold[0])
                if response.status_code >= 400:
                    raise http_failure(response.status_code, response.headers, VENDOR)
                body = await response.aread()
        timeline.mark(FINAL, text=transcript(body))

    def close(self) -> None:
        """For the runner's synchronous clean-up."""
        self._clients.close()
