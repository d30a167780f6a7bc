"""xAI's streaming text to speech (`/v1/tts` WebSocket), the TTS endpoint of the one xAI emulator
(`emulators/s2s/xai.py` serves it on the port of the Voice Agent API, as xAI serves both from
api.x.ai).

Sources (read 2026-12-07): xAI's REST reference https://docs.x.ai/developers/rest-api-reference/inference/voice
(languages, codecs, sample rates 8000-48000 with 24000 the default; its WebSocket section renders
client-side and could not be read) and, for the WebSocket messages, Pipecat
`src/pipecat/services/xai/tts.py` @ 002d791 and Coval's runner `runner/src/coval_bench/providers/tts/xai.py`
@ bf95d1b (references). What it serves:
- The upgrade needs `Authorization: Bearer <key>` (else 401), a `language`, `codec=pcm` (xAI's other
  codecs are not emulated) and a documented `sample_rate`; anything else is refused with 400 (how xAI
  refuses one is not documented). The handshake faults refuse it too.
- `text.delta` events are buffered; `text.done` has the buffer spoken: base64 pcm16 `audio.delta`
  events (leading silence, then the speech) from `ttfb_ms` after text.done arrived, one every
  `send_every_ms`, then `audio.done`; the socket stays open for the next utterance. `text.clear`
  empties the buffer. Anything else gets `{"type": "error", "message"}`.
- Faults: `malformed` (a broken event at the second delta), `disconnect` / `close:<code>` (at the
  third), `no_final` (no `audio.done`), `inaudible` (silent audio).

The cited sequence, REFERENCE_SEQUENCE: no vendor-published transcript of a session could be read (the
WebSocket spec is rendered client-side). The client half is the streaming example of the tryAGI/Xai
SDK, generated from xAI's published specs (https://tryagi.github.io/Xai/examples/text-to-speech-streaming/,
third party), with the message shapes of Pipecat and Coval; the server answers each utterance with
`audio.delta` events and `audio.done`. The emulator notes each utterance's client messages (ledger
`seen:tts`) so a test can hold the adapter's messages to it.
"""

from __future__ import annotations

import json
import time
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

from voxwatch.providers.emulators.faults import websocket_refusal
from voxwatch.providers.emulators.ledger import saw
from voxwatch.providers.emulators.scenario import TTSScenario
from voxwatch.providers.emulators.speech import b64, paced, warmed

PATH = "/v1/tts"
RATES = ("8000", "16000", "22050", "24000", "44100", "48000")
REFERENCE_SEQUENCE = (
    {"type": "text.delta", "delta": "Hello from xAI streaming text to speech."},
    {"type": "text.done"},
)


class XAITTSEndpoint:
    """`/v1/tts` for the emulator `owner` (whose ledger the sends are recorded in)."""

    def __init__(self, owner, scenario: TTSScenario | None) -> None:
        self.owner, self.s = owner, scenario
        self.chunks = warmed(scenario, 24000, b64)

    def process_request(self, connection, request):
        """The upgrade's settings and the handshake faults (the dispatcher has checked the key)."""
        query = {k: v[0] for k, v in parse_qs(urlsplit(request.path).query).items()}
        if not query.get("language") or query.get("codec") != "pcm" or query.get("sample_rate", "24000") not in RATES:
            return connection.respond(HTTPStatus.BAD_REQUEST, "language required; this emulator speaks codec=pcm "
                                                              "at a documented sample_rate\n")
        return websocket_refusal(connection, self.s.fault)

    async def handle(self, ws) -> None:
        rate = int(parse_qs(urlsplit(ws.request.path).query).get("sample_rate", ["24000"])[0])
        parts: list[dict] = []
        utterance = 0
        async for message in ws:
            arrived = time.perf_counter_ns()
            try:
                event = json.loads(message)
                kind = event["type"]
            except (ValueError, TypeError, KeyError):
                await ws.send(json.dumps({"type": "error", "message": "could not parse the message"}))
                continue
            if kind == "text.delta" and isinstance(event.get("delta"), str):
                parts.append(event)
            elif kind == "text.clear":
                parts.clear()
            elif kind == "text.done":
                saw(self.owner, "tts", {"utterance": utterance, "messages": [*parts, event]})
                utterance += 1
                if not await self._say(ws, arrived, "".join(p["delta"] for p in parts), rate):
                    return
                parts.clear()
            else:
                await ws.send(json.dumps({"type": "error", "message": f"unknown message type {kind!r}"}))

    async def _say(self, ws, arrived: int, text: str, rate: int) -> bool:
        """One utterance's audio, then `audio.done`; False when a fault ended the session."""
        s = self.s
        chunks, first_speech = self.chunks.get(text, rate)
        sent = 0
        async for i in paced(self.owner, ws, s, text, len(chunks), first_speech, arrived,
                             '{"type": "audio.delta", "delta": '):
            await ws.send(json.dumps({"type": "audio.delta", "delta": chunks[i]}))
            sent += 1
        if sent < len(chunks):
            return False
        if s.fault != "no_final":
            await ws.send(json.dumps({"type": "audio.done"}))
        return True
