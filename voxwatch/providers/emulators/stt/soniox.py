"""A loopback emulator of Soniox's real-time speech-to-text WebSocket (`/transcribe-websocket`), and
the one Soniox emulator: it serves Soniox's real-time TTS (`/tts-websocket`, emulators/tts/soniox.py)
on the same port. Soniox serves STT and TTS from two hosts, but voxwatch points a vendor at one base
URL (`VOXWATCH_SONIOX_BASE_URL`), so one emulator answers both paths, each from its own board's
scenario (a path whose board has no scenario is 404).

What it speaks (sources in voxwatch/providers/stt/soniox.py, read 2026-12-07):
- Auth: `Authorization: Bearer <key>` on the upgrade; a wrong key there is refused with HTTP 401
  (the status is this emulator's choice: Soniox does not document how a bad header key is refused).
  Without the header, the deprecated `api_key` of the config is checked, as Soniox still accepts it
  until 15 January 2027; a missing or wrong one is an error 401 message and a close. The browser form
  (the key in the WebSocket protocols list) is not emulated.
- The first message is the config: a known `model` (`MODELS`), `audio_format` `auto` or a raw
  encoding, and for raw audio `sample_rate` and `num_channels`; otherwise the documented error shape
  `{"error_code": 400, "error_message": ...}` and a close (Soniox closes "immediately" after an
  error; the close code is not documented, so it is 1000 here).
- Concurrency: Soniox allows 10 concurrent requests by default (soniox.com/docs/stt/rt/limits-and-
  quotas); the 11th session open at once gets an error 429 and a close.
- From the first audio frame's arrival (the emulator's t0) it sends results on the STTScenario
  cadence from `first_partial_ms` after the start of speech: every word but the newest final once,
  the newest non-final (re-sent until it settles), as Soniox does; words are tokens with their
  leading space, `start_ms`/`end_ms` spread over the speech, `confidence`, `final_audio_proc_ms`
  and `total_audio_proc_ms`. The last word goes final `final_ms` after the end of speech.
- `{"type": "finalize"}` does not move the scenario's timing (the scenario is the truth): the
  remaining tokens come final at the final's time, followed in the same message by `<fin>`; a
  finalize that comes after the final gets `<fin>` alone at once. `{"type": "keepalive"}` is
  accepted; any other text is an error 400.
- The empty text frame `""` ends the audio: it notes the audio_format, rate and every byte received
  (ledger `seen:stream`), lets a final not yet sent go (at the scenario's time), sends `{"tokens": [], "finished": true}` and
  closes normally. (A zero-length *binary* frame is only audio, as Coval observed of Soniox.)
- Faults (faults.py): the handshake ones; `malformed`, `disconnect`, `close:<code>` at the first
  partial; `no_final` (the last word never goes final, no `<fin>`).

`SDK_CASES` is a message sequence from Soniox's own SDK test fixtures, replayed by the contract test
through the adapter (`SonioxEmulator(scenario, replay=...)`).
"""

from __future__ import annotations

import asyncio
import json
import time
from http import HTTPStatus
from urllib.parse import urlsplit

import websockets

from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.emulators.faults import break_off, breaks, websocket_refusal
from voxwatch.providers.emulators.ledger import record, saw
from voxwatch.providers.emulators.scenario import STTScenario, scenario_for
from voxwatch.providers.emulators.tts.soniox import PATH as TTS_PATH, SonioxTTSEndpoint

PATH = "/transcribe-websocket"
MODELS = ("stt-rt-v6", "stt-rt-v5", "stt-rt-v4")  # stt-rt-v4 is an alias of stt-rt-v5 (soniox.com/docs/stt/models)
RAW = {"pcm_s16le": 2, "pcm_s16be": 2, "pcm_f32le": 4, "pcm_f32be": 4, "pcm_s32le": 4, "pcm_s32be": 4,
       "mulaw": 1, "alaw": 1}  # raw encodings and their bytes a sample
MAX_CONCURRENT = 10

# From soniox/soniox-python tests/realtime/cases.py @ 10edf2dad625fa2b652435c73fac4e40459b4505 (the
# official SDK's test cases, which drive its mock WebSocket). Quoted as the cases give them: each
# case's `server_events`, and `expected_sent` (the config, binary audio frames, and "" the FINISH
# control message). The SDK's config adds "api_key": "test_key", the deprecated in-band key; its
# model "v1" is the SDK's placeholder, not a Soniox model (the replay accepts it).
#
#   RealtimeCase(id="happy_path_simple", config=_HAPPY_CONFIG,
#       server_events=[{"tokens": [{"text": "Hello", "is_final": True}]},
#                      {"tokens": [{"text": " world", "is_final": True}], "finished": True}],
#       expected_sent=[_config_dict(_HAPPY_CONFIG), b"audio-data", ""]),
#   RealtimeCase(id="multi_partial_then_final", config=_MIN_CONFIG,
#       server_events=[{"tokens": [{"text": "Hel", "is_final": False}]},
#                      {"tokens": [{"text": "Hello", "is_final": False}]},
#                      {"tokens": [{"text": "Hello world", "is_final": True}]},
#                      {"tokens": [], "finished": True}],
#       expected_sent=[_config_dict(_MIN_CONFIG), b"chunk-1", b"chunk-2", ""]),
#   RealtimeCase(id="server_sends_error_event", config=_MIN_CONFIG,
#       server_events=[{"tokens": [], "error_code": 400, "error_message": "Invalid audio format"}],
#       expected_sent=[_config_dict(_MIN_CONFIG), ""]),
#
# _HAPPY_CONFIG is RealtimeSTTConfig(model="v1", audio_format="pcm_s16le", sample_rate=16000,
# num_channels=1); _MIN_CONFIG is RealtimeSTTConfig(model="v1").
SDK_CASES: dict[str, dict] = {
    "happy_path_simple": {
        "server_events": [{"tokens": [{"text": "Hello", "is_final": True}]},
                          {"tokens": [{"text": " world", "is_final": True}], "finished": True}],
        "expected_sent": [b"audio-data", ""]},
    "multi_partial_then_final": {
        "server_events": [{"tokens": [{"text": "Hel", "is_final": False}]},
                          {"tokens": [{"text": "Hello", "is_final": False}]},
                          {"tokens": [{"text": "Hello world", "is_final": True}]},
                          {"tokens": [], "finished": True}],
        "expected_sent": [b"chunk-1", b"chunk-2", ""]},
    "server_sends_error_event": {
        "server_events": [{"tokens": [], "error_code": 400, "error_message": "Invalid audio format"}],
        "expected_sent": [""]},
}
"""In replay, the events before the last go out after the first audio frame, the last on "" (the
FINISH message, which is when Soniox sends `finished`); `expected_sent` leaves out the config."""


def _error(code: int, message: str) -> str:
    return json.dumps({"error_code": code, "error_message": message})


def _config_problem(config: dict) -> str | None:
    """What is wrong with a config message, or None."""
    if config.get("model") not in MODELS:
        return "Invalid model specified."
    audio_format = config.get("audio_format", "auto")
    if audio_format == "auto":
        return None
    if audio_format not in RAW:
        return "Invalid audio format."
    for name in ("sample_rate", "num_channels"):
        if not isinstance(config.get(name), int) or config[name] <= 0:
            return f"{name} is required for raw audio."
    return None


class _Stream:
    """One session's state shared by its reader and its speaker."""

    def __init__(self, config: dict) -> None:
        self.config = config
        self.audio = bytearray()
        self.transcript = ""
        self.words: list[str] = []
        self.finalized = 0  # words already sent final
        self.final_sent = False
        self.finalize = False  # a finalize is waiting for its <fin>
        self.span_ms = (0.0, 0.0)  # the speech, ms from the stream's start
        self.speaker: asyncio.Task | None = None

    def token(self, i: int, final: bool) -> dict:
        start, end = self.span_ms
        step = (end - start) / max(1, len(self.words))
        return {"text": (" " if i else "") + self.words[i], "start_ms": int(start + i * step),
                "end_ms": int(start + (i + 1) * step), "confidence": 0.97, "is_final": final}

    def result(self, tokens: list[dict], **extra) -> str:
        audio_ms = int(len(self.audio) / self.bytes_per_ms) if self.bytes_per_ms else 0
        final_ms = int(self.span_ms[1]) if self.final_sent else int(self.span_ms[0])
        return json.dumps({"tokens": tokens, "final_audio_proc_ms": min(final_ms, audio_ms),
                           "total_audio_proc_ms": audio_ms, **extra})

    @property
    def bytes_per_ms(self) -> float:
        rate, channels = self.config.get("sample_rate", 16000), self.config.get("num_channels", 1)
        return RAW.get(self.config.get("audio_format"), 2) * rate * channels / 1000


FIN = {"text": "<fin>", "is_final": True}


class SonioxEmulator:
    def __init__(self, scenario, replay: str | None = None) -> None:
        self.scenario: STTScenario | None = scenario_for(scenario, "stt")
        self.tts = SonioxTTSEndpoint(self, scenario_for(scenario, "tts"))  # /tts-websocket
        self.replay = SDK_CASES[replay] if replay else None
        self.received: list[str | bytes] = []  # replay: what the client sent after its config
        self.configs: list[dict] = []  # every config received
        self.open = 0  # sessions open now

    def process_request(self, connection, request):
        path = urlsplit(request.path).path
        if path == TTS_PATH:
            return self.tts.process_request(connection, request)
        if path != PATH or self.scenario is None:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        auth = request.headers.get("Authorization")
        if auth is not None and auth != f"Bearer {self.scenario.api_key}":
            return connection.respond(HTTPStatus.UNAUTHORIZED, "invalid credentials\n")
        return websocket_refusal(connection, self.scenario.fault)

    async def handle(self, ws) -> None:
        if urlsplit(ws.request.path).path == TTS_PATH:
            try:
                await self.tts.handle(ws)
            except websockets.ConnectionClosed:
                pass  # the client went away; nothing is owed to it
            return
        self.open += 1
        stream: _Stream | None = None
        try:
            try:
                config = json.loads(await ws.recv())
                if not isinstance(config, dict):
                    raise TypeError
            except (ValueError, TypeError):
                await self._refuse(ws, 400, "The first message must be the JSON config.")
                return
            self.configs.append(config)
            if ws.request.headers.get("Authorization") is None and config.get("api_key") != self.scenario.api_key:
                await self._refuse(ws, 401, "Invalid API key.")
                return
            if self.open > MAX_CONCURRENT:
                await self._refuse(ws, 429, "Concurrent request limit reached (project).")
                return
            if self.replay is not None:
                await self._replay(ws)
                return
            problem = _config_problem(config)
            if problem:
                await self._refuse(ws, 400, problem)
                return
            stream = _Stream(config)
            await self._serve(ws, stream)
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it
        finally:
            self.open -= 1
            if stream is not None and stream.speaker is not None:
                stream.speaker.cancel()

    async def _refuse(self, ws, code: int, message: str) -> None:
        await ws.send(_error(code, message))
        await ws.close()

    async def _serve(self, ws, stream: _Stream) -> None:
        async for message in ws:
            if isinstance(message, bytes):
                stream.audio += message
                if stream.speaker is None and message:
                    stream.speaker = asyncio.create_task(self._speak(ws, time.perf_counter_ns(), message, stream))
                continue
            if message == "":
                saw(self, "stream", {"encoding": stream.config.get("audio_format"),
                                     "sample_rate": stream.config.get("sample_rate"), "audio": stream.audio.hex()})
                await self._flush(ws, stream)
                await ws.send(stream.result([], finished=True))
                await ws.close()
                return
            try:
                kind = json.loads(message).get("type")
            except (ValueError, AttributeError):
                kind = None
            if kind == "finalize":
                if stream.final_sent:
                    await ws.send(stream.result([FIN]))
                else:
                    stream.finalize = True
            elif kind != "keepalive":
                await self._refuse(ws, 400, "Invalid control message.")
                return

    async def _flush(self, ws, stream: _Stream) -> None:
        """End of audio: a final not yet sent goes at the scenario's time for it (unless the scenario
        withholds it)."""
        if stream.speaker is not None:
            if self.scenario.fault == "no_final":
                stream.speaker.cancel()
            else:
                await stream.speaker

    async def _final(self, ws, stream: _Stream) -> None:
        stream.final_sent = True
        tokens = [stream.token(i, True) for i in range(stream.finalized, len(stream.words))]
        stream.finalized = len(stream.words)
        if stream.finalize:
            stream.finalize = False
            tokens.append(FIN)
        record(self, stream.transcript, "final")
        await ws.send(stream.result(tokens))

    async def _speak(self, ws, t0: int, first_chunk: bytes, stream: _Stream) -> None:
        s = self.scenario
        turn = s.turn(first_chunk, t0)
        stream.transcript, stream.words = turn.transcript, turn.words
        start, end = s.anchors_for(first_chunk)
        stream.span_ms = (start * 1000, end * 1000)
        async for k in turn.partials():
            if s.fault == "malformed":
                await ws.send('{"tokens": [{"text": ')
            elif breaks(s.fault):
                await break_off(ws, s.fault)
                return
            settled = [stream.token(i, True) for i in range(stream.finalized, k - 1)]
            stream.finalized = max(stream.finalized, k - 1)
            if k == 1:
                record(self, stream.transcript, "first_partial")
            await ws.send(stream.result(settled + [stream.token(k - 1, False)]))
        if s.fault == "no_final":
            return
        await sleep_until(turn.final_at)
        await self._final(ws, stream)

    async def _replay(self, ws) -> None:
        """The SDK case's events: all but the last after the first audio frame, the last on ""."""
        *during, last = self.replay["server_events"]
        async for message in ws:
            self.received.append(message)
            if isinstance(message, bytes) and during:
                for event in during:
                    await ws.send(json.dumps(event))
                during = []
            elif message == "":
                await ws.send(json.dumps(last))
                await ws.close()
                return
