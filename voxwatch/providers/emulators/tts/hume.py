"""A loopback emulator of Hume's Octave TTS `/v0/tts/stream/input` WebSocket (sources in
voxwatch/providers/tts/hume.py, read 2026-12-07).

- The upgrade must carry the key as the `api_key` query parameter (else 401, as the SDK expects:
  "Websocket initialized with invalid credentials"), `format_type=pcm` (mp3 and wav are not
  emulated) and a `version` of "1" or "2" when it names one; anything else is a 400 here (how Hume
  refuses one is not documented). The handshake faults refuse it too.
- `PublishTts` messages: `text` is buffered, `voice` kept; `flush` has the buffer spoken as one snippet
  and `close` speaks what is left, then closes normally. Each snippet is `SnippetAudioChunk` messages
  (type "audio", base64 48 kHz pcm16, chunk_index, is_last_chunk on the last, snippet_id,
  generation_id, request_id, text, utterance_index, audio_format) - leading silence, then speech -
  from `ttfb_ms` after the flush or close arrived, one every `send_every_ms`. Without `no_binary=true`
  each chunk also goes as a binary frame (Hume says binary messages are sent unless no_binary; that
  both forms carry each chunk is this emulator's reading). With `instant_mode` on (the default), a
  snippet without a voice is refused with `{"status_code": 400, "message": ...}` (the HTTP reference:
  "A voice must be specified when instant mode is enabled").
- Faults: the handshake ones; `malformed` (a broken message at the second chunk), `disconnect` /
  `close:<code>` (at the third), `no_final` (the last chunk never marked, and no close), `inaudible`.
  `HumeScenario(out_of_credit=True)` answers with the error frame Coval's runner recorded from Hume
  (OUT_OF_CREDIT, a reference: `runner/tests/providers/tts/test_hume.py` @ bf95d1b).

The cited sequence: OFFICIAL_EXAMPLE is the client side of Hume's own example, HumeAI/hume-api-examples
@ c35b1cf `tts/tts-dotnet-quickstart` (StreamingTtsService.cs connects with OFFICIAL_QUERY; Program.cs
Example3Async sends these messages, serialized as `JsonSerializer.Serialize` writes them, with an 8 s
pause after the first flush). It ends on the server's close, as the example's reader does. The emulator
notes each snippet it speaks (ledger `seen:tts`) so a test can hold a client to it.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import time
import uuid
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

import websockets

from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.emulators.faults import break_off, breaks, websocket_refusal
from voxwatch.providers.emulators.ledger import record, saw
from voxwatch.providers.emulators.scenario import TTSScenario, scenario_for
from voxwatch.providers.emulators.speech import warmed

PATH = "/v0/tts/stream/input"
SAMPLE_RATE = 48000
OFFICIAL_QUERY = "no_binary=true&instant_mode=true&strip_headers=true&format_type=pcm"
OFFICIAL_EXAMPLE = ({"text": "Hello"}, {"text": " world."}, {"flush": True}, {"text": "Goodbye, world."},
                    {"flush": True}, {"close": True})
OUT_OF_CREDIT = {"status_code": 400, "message": "Exhausted credit balance. Visit platform.hume.ai/billing to manage "
                 "your account.", "details": {"type": "error", "code": "E0300", "slug": "zero_credits"}}


@dataclasses.dataclass(frozen=True)
class HumeScenario(TTSScenario):
    """A TTSScenario that can answer the first snippet with Hume's out-of-credit error frame."""

    out_of_credit: bool = False


class HumeEmulator:
    def __init__(self, scenario) -> None:
        self.scenario = scenario_for(scenario, "tts")
        self.chunks = warmed(self.scenario, SAMPLE_RATE)

    def process_request(self, connection, request):
        if urlsplit(request.path).path != PATH or self.scenario is None:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        query = {k: v[0] for k, v in parse_qs(urlsplit(request.path).query).items()}
        if query.get("api_key") != self.scenario.api_key:
            return connection.respond(HTTPStatus.UNAUTHORIZED, "invalid credentials\n")
        if query.get("format_type", "mp3") != "pcm" or query.get("version", "2") not in ("1", "2"):
            return connection.respond(HTTPStatus.BAD_REQUEST, "this emulator speaks format_type=pcm, version 1 or 2\n")
        return websocket_refusal(connection, self.scenario.fault)

    async def handle(self, ws) -> None:
        query = {k: v[0] for k, v in parse_qs(urlsplit(ws.request.path).query).items()}
        session = _Session(self, ws, binary=query.get("no_binary", "false") != "true",
                           instant=query.get("instant_mode", "true") != "false")
        try:
            await session.run()
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it


class _Session:
    """One connection: the text buffered since the last snippet, the voice, and the snippets spoken."""

    def __init__(self, emulator: HumeEmulator, ws, binary: bool, instant: bool) -> None:
        self.emulator, self.ws, self.s = emulator, ws, emulator.scenario
        self.binary, self.instant = binary, instant
        self.text, self.voice, self.snippets = "", None, 0
        self.request_id = str(uuid.uuid4())

    async def run(self) -> None:
        async for message in self.ws:
            arrived = time.perf_counter_ns()
            try:
                publish = json.loads(message)
                if not isinstance(publish, dict):
                    raise TypeError("not an object")
            except (ValueError, TypeError):
                await self.ws.send(json.dumps({"status_code": 400, "message": "could not parse the message"}))
                continue
            self.text += str(publish.get("text") or "")
            self.voice = publish.get("voice") or self.voice
            if publish.get("flush") or publish.get("close"):
                if self.text and not await self.speak(arrived):
                    return
                self.text = ""
            if publish.get("close"):
                await self.ws.close()
                return

    async def speak(self, arrived: int) -> bool:
        """One snippet of the buffered text; False when the session ended."""
        s = self.s
        if isinstance(s, HumeScenario) and s.out_of_credit:
            await self.ws.send(json.dumps(OUT_OF_CREDIT))
            return True
        if self.instant and not self.voice:
            await self.ws.send(json.dumps({"status_code": 400, "message": "A voice must be specified when instant "
                                           "mode is enabled"}))
            return True
        saw(self.emulator, "tts", {"snippet": self.snippets, "text": self.text, "voice": self.voice})
        chunks, first_speech = self.emulator.chunks.get(self.text, SAMPLE_RATE)
        ids = {"generation_id": str(uuid.uuid4()), "request_id": self.request_id, "snippet_id": str(uuid.uuid4())}
        for i, (pcm, at) in enumerate(zip(chunks, s.send_times(arrived, self.text, len(chunks), first_speech))):
            await sleep_until(at)
            if s.fault == "malformed" and i == 1:
                await self.ws.send('{"type": "audio", "audio": ')
            elif breaks(s.fault) and i == 2:
                await break_off(self.ws, s.fault)
                return False
            if i == 0:
                record(self.emulator, self.text, "first_audio")
            if i == first_speech:
                record(self.emulator, self.text, "first_speech")
            last = i == len(chunks) - 1 and s.fault != "no_final"
            await self.ws.send(json.dumps({"type": "audio", "audio": base64.b64encode(pcm).decode(), "audio_format": "pcm",
                                           "chunk_index": i, "is_last_chunk": last, "text": self.text,
                                           "transcribed_text": None, "utterance_index": 0, **ids}))
            if self.binary:
                await self.ws.send(pcm)
        self.snippets += 1
        if s.fault == "no_final":
            await self.ws.wait_closed()  # nothing more: no last chunk, no close
            return False
        return True
