"""Soniox's real-time text to speech (`/tts-websocket`), as Soniox documents it (sources in
voxwatch/providers/tts/soniox.py, read 2026-12-07).

`SonioxTTSEndpoint` is the TTS half of the one Soniox emulator (`stt.soniox.SonioxEmulator`, which
routes `/tts-websocket` here): Soniox serves STT and TTS from two hosts, but voxwatch points a vendor
at one base URL, so one emulator serves both paths.

- The upgrade carries no key (Soniox's key is in-band); the handshake faults refuse it all the same.
- Each stream starts with its config, checked for the documented required fields (a missing one is
  `{"stream_id", "error_code": 400, "error_message": "Missing required field: <name>"}`, Soniox's
  wording, then `terminated`), a known model (`MODELS`), `audio_format` `pcm_s16le` (the lossy and
  wav formats are not emulated) at a documented rate, and the scenario's key (else error 401). A
  second config for a live stream_id is refused (400) and a sixth live stream on one connection too
  (429: the limit is 5 streams a connection; the code is this emulator's choice).
- Text is buffered per stream; the text with `text_end: true` has the stream spoken: base64 pcm16
  `audio` messages (leading silence, then the speech) from `ttfb_ms` after that text arrived, one
  every `send_every_ms`, the last with `audio_end: true`, then `{"terminated": true}`; the socket
  stays open. `{"stream_id", "cancel": true}` ends a stream with `terminated` at once; `{"keep_alive":
  true}` is accepted.
- Faults: the handshake ones; `malformed` (a broken message at the second audio), `disconnect` /
  `close:<code>` (at the third), `no_final` (no `audio_end`, no `terminated`), `inaudible`.

The cited sequences, quoted from Soniox's docs: DOC_CONFIG is the API reference's config example
(https://soniox.com/docs/api-reference/tts/websocket-api); DOC_ERROR_TERMINATION is the error
termination of "Stream termination" (https://soniox.com/docs/tts/rt/termination), which
`SonioxTTSScenario(refuse=True)` replays in place of a reply; its normal termination (the final text
with `text_end`, the audio with `audio_end`, then `terminated`) is the shape every reply here takes.
"""

from __future__ import annotations

import dataclasses
import json
import time
from http import HTTPStatus

from voxwatch.providers.emulators.faults import websocket_refusal
from voxwatch.providers.emulators.ledger import saw
from voxwatch.providers.emulators.scenario import TTSScenario
from voxwatch.providers.emulators.speech import b64, paced, warmed

PATH = "/tts-websocket"
MODELS = ("tts-rt-v1", "tts-rt-v1-preview")  # the preview id is an alias of tts-rt-v1 (soniox.com/docs/tts/models)
RATES = (8000, 16000, 24000, 44100, 48000)
REQUIRED = ("api_key", "model", "language", "voice", "audio_format", "stream_id")
STREAMS_PER_CONNECTION = 5

DOC_CONFIG = {
    "api_key": "<SONIOX_API_KEY|SONIOX_TEMPORARY_API_KEY>",
    "model": "tts-rt-v1",
    "language": "en",
    "voice": "Adrian",
    "audio_format": "wav",
    "sample_rate": 24000,
    "stream_id": "stream-001",
}
DOC_ERROR_TERMINATION = (
    {"stream_id": "stream-001", "error_code": 400, "error_message": "Missing required field: model"},
    {"terminated": True, "stream_id": "stream-001"},
)


@dataclasses.dataclass(frozen=True)
class SonioxTTSScenario(TTSScenario):
    """A TTSScenario that can answer every stream with DOC_ERROR_TERMINATION (`refuse`)."""

    refuse: bool = False


def _problem(config: dict, key: str) -> tuple[int, str] | None:
    """Why a stream's config is refused (error_code, error_message), or None."""
    missing = next((name for name in REQUIRED if name not in config), None)
    if missing:
        return 400, f"Missing required field: {missing}"
    if config["api_key"] != key:
        return 401, "Invalid API key"
    if config["model"] not in MODELS:
        return 400, f"Invalid model: {config['model']}"
    if config["audio_format"] != "pcm_s16le" or config.get("sample_rate") not in RATES:
        return 400, "this emulator speaks pcm_s16le at 8000, 16000, 24000, 44100 or 48000 Hz"
    return None


class SonioxTTSEndpoint:
    """`/tts-websocket` for the emulator `owner` (whose ledger the sends are recorded in)."""

    def __init__(self, owner, scenario: TTSScenario | None) -> None:
        self.owner, self.s = owner, scenario
        self.chunks = warmed(scenario, 24000, b64)

    def process_request(self, connection, request):
        if self.s is None:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        return websocket_refusal(connection, self.s.fault)

    async def handle(self, ws) -> None:
        streams: dict[str, dict] = {}  # live stream_id -> its config and text so far
        async for message in ws:
            arrived = time.perf_counter_ns()
            try:
                data = json.loads(message)
                stream = data.get("stream_id")
            except (ValueError, TypeError, AttributeError):
                await ws.send(json.dumps({"error_code": 400, "error_message": "could not parse the message"}))
                continue
            if data.get("keep_alive"):
                continue
            if stream is None:
                await ws.send(json.dumps({"error_code": 400, "error_message": "Missing required field: stream_id"}))
            elif "text" not in data and not data.get("cancel"):  # a config
                await self._open(ws, streams, stream, data)
            elif stream not in streams:
                await self._end(ws, stream, 400, "unknown stream_id")
            elif data.get("cancel"):
                del streams[stream]
                await ws.send(json.dumps({"terminated": True, "stream_id": stream}))
            else:
                streams[stream]["text"] += str(data["text"])
                if data.get("text_end"):
                    saw(self.owner, "tts", {"config": {**streams[stream]["config"], "api_key": "<key>"},
                                            "text": data})
                    spoken = streams.pop(stream)
                    if not await self._say(ws, arrived, stream, spoken["text"], spoken["config"]["sample_rate"]):
                        return

    async def _open(self, ws, streams: dict, stream: str, config: dict) -> None:
        if isinstance(self.s, SonioxTTSScenario) and self.s.refuse:
            for event in DOC_ERROR_TERMINATION:
                await ws.send(json.dumps({**event, "stream_id": stream}))
            return
        problem = (_problem(config, self.s.api_key) or ((400, "duplicate config for this stream_id") if stream in streams
                   else (429, "too many streams on this connection") if len(streams) >= STREAMS_PER_CONNECTION
                   else None))
        if problem is not None:
            await self._end(ws, stream, *problem)
            return
        streams[stream] = {"config": config, "text": ""}

    async def _end(self, ws, stream: str, code: int, message: str) -> None:
        """The documented error termination: the error, then `terminated` for the stream."""
        await ws.send(json.dumps({"stream_id": stream, "error_code": code, "error_message": message}))
        await ws.send(json.dumps({"terminated": True, "stream_id": stream}))

    async def _say(self, ws, arrived: int, stream: str, text: str, rate: int) -> bool:
        """One stream's audio (the last with audio_end), then `terminated`; False when a fault ended the session."""
        s = self.s
        chunks, first_speech = self.chunks.get(text, rate)
        sent = 0
        async for i in paced(self.owner, ws, s, text, len(chunks), first_speech, arrived, '{"audio": '):
            last = i == len(chunks) - 1 and s.fault != "no_final"
            end = {"audio_end": True} if last else {}
            await ws.send(json.dumps({"audio": chunks[i], "stream_id": stream, **end}))
            sent += 1
        if sent < len(chunks):
            return False
        if s.fault != "no_final":
            await ws.send(json.dumps({"terminated": True, "stream_id": stream}))
        return True

