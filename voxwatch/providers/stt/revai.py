"""Rev AI streaming speech-to-text (the `/speechtotext/v1/stream` WebSocket), as the vendor documents it.

Protocol facts followed (read 2026-12-07 from stored copies of docs.rev.ai/api/streaming and its
pages requests, responses, example-session and faq; revdotcom/revai-python-sdk
src/rev_ai/streamingclient.py and tests/test_streamingclient.py @ d1ddb4a7, 2024-06-17):
- `wss://api.rev.ai/speechtotext/v1/stream`. Everything is in the query string, there is no
  config message: `access_token` (the key), `content_type`
  (`audio/x-raw;layout=interleaved;rate=<8000-48000>;format=S16LE;channels=1` for raw PCM),
  `language` (default `en`), `transcriber`, `priority` (default `speed`, the one measured here).
- The server opens with `{"type": "connected", "id": ...}`; audio may not be sent before it.
- Audio goes as binary frames. Rev AI advises chunks of 250 ms or more ("less than 250ms in size
  may experience increased transcription latency"). The harness's 20 ms chunks are sent as they
  come, as a caller streaming live audio would; any latency that costs is Rev AI's to report.
- Responses are `partial` and `final` hypotheses: `ts`, `end_ts` (seconds) and `elements`, each
  `{"type": "text" | "punct", "value", "ts", "end_ts", "confidence"}` (timings on final text
  elements). Within a segment each partial repeats the whole segment so far (replace, never
  append); a `final` closes its segment for good ("the output for that section of audio will no
  longer change"), and the next segment starts afresh. Finals carry casing and punctuation as
  `punct` elements, spaces included, so a final's text is its values joined as they are.
- End of audio is the text frame `EOS` (exactly: any other text, `eos` included, is closed with
  1007, and so is a client's own close frame, without the final). "On an EOS message, Rev AI will
  return a final hypothesis along with a WebSocket close message": the normal close 1000, reason
  `End of input. Closing` (the SDK's test fixture). EOS is the only way to force the final, so it
  is sent at the end of the caller's audio and the final is the last one before the close.
- Errors are close codes, not messages: 4001 bad or missing access token, 4002 bad content type or
  request, 4013 no capacity for the request (close_codes.py VENDOR, with the page). A close before
  EOS ends the session early.
"""

from __future__ import annotations

from urllib.parse import urlencode

from voxwatch.foundation.events import FINAL, PARTIAL, Timeline
from voxwatch.providers.registry import ModelInfo
from voxwatch.providers.session.close_codes import closed
from voxwatch.providers.session.endpoints import base_url, is_loopback, open_websocket, require_key
from voxwatch.providers.session.ws_session import ReaderSession, settle, until_ready

VENDOR = "RevAI"  # close_codes.vendor_key reads it as the registry's "revai"
DEFAULT_URL = "wss://api.rev.ai"
PATH = "/speechtotext/v1/stream"
EOS = "EOS"


def content_type(sample_rate: int) -> str:
    return f"audio/x-raw;layout=interleaved;rate={sample_rate};format=S16LE;channels=1"


class RevAISTT:
    """`revai/<transcriber>` ids: the streaming `transcriber` the query names."""

    sample_rate = 16000
    language = "en"

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.url = base_url(model.vendor, DEFAULT_URL)
        self.emulator = is_loopback(self.url)

    async def connect(self, timeline: Timeline) -> "RevAISession":
        """Open the stream and wait for `connected`, so session set-up stays outside the clocks."""
        key = require_key(self.model.vendor)
        query = urlencode({"access_token": key.reveal(), "content_type": content_type(self.sample_rate),
                           "language": self.language, "transcriber": self.model.vendor_model}, safe="/;=")
        ws = await open_websocket(f"{self.url}{PATH}?{query}", {}, VENDOR, clock=timeline.clock)
        return await settle(ws, until_ready(
            ws, VENDOR, lambda data: RevAISession(ws, timeline) if data["type"] == "connected" else None,
            "before the stream was connected"))


class RevAISession(ReaderSession):
    vendor = VENDOR

    def __init__(self, ws, timeline: Timeline) -> None:
        self.timeline = timeline
        self._eos = False  # EOS sent: a close from now on is the stream's normal end
        super().__init__(ws)

    async def _read(self) -> None:
        async for data, at in self._messages():
            kind, elements = data["type"], data.get("elements", [])
            if kind == "final":
                self.timeline.mark(FINAL, at, text="".join(str(e["value"]) for e in elements).strip())
            elif kind == "partial":
                self.timeline.mark(PARTIAL, at, text=" ".join(str(e["value"]) for e in elements))
            # connected and newer kinds carry no transcript
        if not self._eos:
            raise closed(VENDOR, self.ws.close_code, "before the end of the audio")

    async def send_audio(self, pcm16: bytes) -> None:
        await self._send(pcm16)

    async def end_audio(self) -> None:
        """EOS: Rev AI returns the final hypothesis and closes the stream."""
        self._eos = True
        await self._send(EOS)

    async def wait_final(self) -> None:
        """Return once Rev AI has closed the stream after EOS (its final comes first)."""
        await self._wait()

    async def aclose(self) -> None:
        await self._close_socket()
        self._reader.cancel()
