"""A loopback emulator of Mistral's Voxtral realtime transcription WebSocket
(`/v1/audio/transcriptions/realtime`).

As Mistral documents it (docs.mistral.ai/studio/audio/speech-to-text/transcribe-in-realtime, the
limits and turn-detection pages, read 2026-12-07; the official SDK mistralai/client-python @05629d237bbd
`src/mistralai/extra/realtime/` and `docs/models/realtime*.md`): checks `Authorization: Bearer <key>`
(401 otherwise) and the required `model` query parameter (an `error` event and a close otherwise);
opens with `session.created` (the defaults); answers `session.update` with `session.updated`, or an
`error` event when `audio_format.encoding` is not one of the SDK's `AudioEncoding`s, when
`target_streaming_delay_ms` is not "Any integer from 80 to 1200, or 2400", or once audio has started
("Session fields cannot be changed after audio has started"). `input_audio.append` carries base64 PCM
of at most 262144 decoded bytes (an `error` event beyond that). `input_audio.flush` changes nothing here.

From the first append's arrival (this emulator's t0), `transcription.language` and then
`transcription.text.delta` events go out on the STTScenario cadence from `first_partial_ms` after the
start of speech, each the next word only (append-only text). The last word is held back until
`input_audio.end` ("the model holds the last 1-2 tokens until it receives `input_audio.end`":
mistralai/client-python#357); `transcription.done` (`model`, `text`, `usage`, `language`) goes out
`final_ms` after the end of speech, or at once when `input_audio.end` comes later than that, never before
it. Without `input_audio.end` the session ends with the documented timeout, an `error` with code 3804
"Timeout waiting for response from streaming transcription." `END_TIMEOUT_S` after the last append
(30 s in #357; `MistralScenario.end_timeout_s`), then a close. The server does not close after `done`
(the SDK closes); it waits for the client's close. `input_audio.end` notes the audio received in the
ledger (`seen:stream`).

Faults: the handshake ones refuse the upgrade (websocket_refusal); `malformed` sends a broken JSON
event, `disconnect` drops the connection and `close:<code>` closes it, in place of the first delta;
`no_final` never sends `transcription.done`.

Scenario keys (anchors, transcript, jitter) are the sha256 of the first append's decoded audio (the
harness's first chunk, sent as it is). Ledger: `first_partial` (the first delta) and `final` (`done`),
keyed by the transcript.

`MistralScenario(scenario, documented=True)` replays instead DOCUMENTED, the lifecycle the docs give
("connect, then session.created; session.update, then session.updated; input_audio.append and
transcription.text.delta, repeated while audio flows; then input_audio.end and transcription.done with
the full transcript") with the bodies of the SDK's message schemas: the docs show the order and no
JSON, and the SDK has no realtime test fixture, so the field names are the SDK's and the values
illustrative (no vendor-authored verbatim sequence exists in the sources read).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import time
import uuid
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

import websockets

from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.emulators.faults import break_off, breaks, websocket_refusal
from voxwatch.providers.emulators.ledger import record, saw
from voxwatch.providers.emulators.scenario import STTScenario, scenario_for

PATH = "/v1/audio/transcriptions/realtime"
MODELS = ("voxtral-mini-transcribe-realtime-2602", "voxtral-mini-transcribe-realtime-3-0",
          "voxtral-mini-transcribe-realtime-3", "voxtral-mini-transcribe-realtime-latest")
ENCODINGS = ("pcm_s16le", "pcm_s32le", "pcm_f16le", "pcm_f32le", "pcm_mulaw", "pcm_alaw")  # SDK AudioEncoding
MAX_APPEND_BYTES = 262144  # "Max decoded size: 262144 bytes" (SDK docs/models input_audio.append)
END_TIMEOUT_S = 30.0  # mistralai/client-python#357: error 3804 30 s after the audio stops without input_audio.end
TIMEOUT_CODE, TIMEOUT_MESSAGE = 3804, "Timeout waiting for response from streaming transcription."

# The documented lifecycle with the SDK schemas' bodies (mistralai/client-python @05629d237bbd
# docs/models/realtimetranscriptionsessioncreated.md, ...sessionupdated.md, transcriptionstreamlanguage.md,
# transcriptionstreamtextdelta.md, transcriptionstreamdone.md): field names exact, values illustrative.
DOCUMENTED = (
    {"type": "session.created", "session": {"request_id": "req-documented", "model": "voxtral-mini-transcribe-realtime-2602",
                                            "audio_format": {"encoding": "pcm_s16le", "sample_rate": 16000},
                                            "target_streaming_delay_ms": None}},
    {"type": "session.updated", "session": {"request_id": "req-documented", "model": "voxtral-mini-transcribe-realtime-2602",
                                            "audio_format": {"encoding": "pcm_s16le", "sample_rate": 16000},
                                            "target_streaming_delay_ms": 480}},
    {"type": "transcription.language", "audio_language": "en"},
    {"type": "transcription.text.delta", "text": "Hello"},
    {"type": "transcription.text.delta", "text": " world"},
    {"type": "transcription.done", "model": "voxtral-mini-transcribe-realtime-2602", "text": "Hello world",
     "usage": {"prompt_audio_seconds": 1}, "language": "en"},
)


@dataclass(frozen=True)
class MistralScenario:
    """Mistral's own behaviour on top of an STTScenario (or a bundle): `documented` replays DOCUMENTED;
    `end_timeout_s`: how long after the last append without `input_audio.end` the 3804 timeout comes."""

    scenario: object
    documented: bool = False
    end_timeout_s: float = END_TIMEOUT_S


def _error(message: str, code: int) -> str:
    return json.dumps({"type": "error", "error": {"message": message, "code": code}})


def _delay_ok(value) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool) and (80 <= value <= 1200 or value == 2400))


class _Stream:
    """One session's state, shared by its reader and its speaker."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.config = {"request_id": uuid.uuid4().hex, "model": model,
                       "audio_format": {"encoding": "pcm_s16le", "sample_rate": 16000}, "target_streaming_delay_ms": None}
        self.audio = bytearray()
        self.ended = asyncio.Event()
        self.ended_at: int | None = None
        self.last_append: int = 0
        self.speaker: asyncio.Task | None = None


class MistralEmulator:
    def __init__(self, scenario) -> None:
        options = scenario if isinstance(scenario, MistralScenario) else MistralScenario(scenario)
        self.documented, self.end_timeout_s = options.documented, options.end_timeout_s
        self.scenario: STTScenario = scenario_for(options.scenario, "stt")

    def process_request(self, connection, request):
        if urlsplit(request.path).path != PATH:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        if request.headers.get("Authorization") != f"Bearer {self.scenario.api_key}":
            return connection.respond(HTTPStatus.UNAUTHORIZED, '{"message": "Unauthorized"}\n')
        return websocket_refusal(connection, self.scenario.fault)

    async def handle(self, ws) -> None:
        model = parse_qs(urlsplit(ws.request.path).query).get("model", [""])[-1]
        if model not in MODELS:
            with contextlib.suppress(websockets.ConnectionClosed):
                await ws.send(_error(f"Invalid model: {model!r}" if model else "The model query parameter is required", 1002))
                await ws.close(1008, "invalid model")
            return
        stream = _Stream(model)
        watchdog = asyncio.create_task(self._watch(ws, stream))
        try:
            await ws.send(json.dumps(DOCUMENTED[0] if self.documented
                                     else {"type": "session.created", "session": stream.config}))
            async for message in ws:
                event = json.loads(message)
                kind = event.get("type")
                if kind == "session.update":
                    await ws.send(self._update(stream, event.get("session")))
                elif kind == "input_audio.append":
                    arrived = time.perf_counter_ns()
                    chunk = base64.b64decode(event["audio"], validate=True)
                    if len(chunk) > MAX_APPEND_BYTES:
                        await ws.send(_error(f"audio chunk exceeds {MAX_APPEND_BYTES} bytes", 1002))
                        continue
                    stream.last_append = arrived
                    if stream.speaker is None:
                        stream.speaker = asyncio.create_task(self._speak(ws, arrived, chunk, stream))
                    stream.audio += chunk
                elif kind == "input_audio.end":
                    stream.ended_at = time.perf_counter_ns()
                    stream.ended.set()
                    saw(self, "stream", {"model": model, "config": stream.config,
                                         "audio": hashlib.sha256(stream.audio).hexdigest()})
                elif kind != "input_audio.flush":
                    await ws.send(_error(f"Unknown message type: {str(kind)[:40]}", 1002))
        except (ValueError, TypeError, KeyError, AttributeError):
            with contextlib.suppress(websockets.ConnectionClosed):
                await ws.send(_error("Invalid message", 1002))
                await ws.close(1007, "invalid message")
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it
        finally:
            watchdog.cancel()
            if stream.speaker is not None:
                stream.speaker.cancel()

    def _update(self, stream: _Stream, session) -> str:
        """`session.updated` with the new settings, or the `error` that refuses them."""
        if stream.audio:
            return _error("Session fields cannot be changed after audio has started", 1002)
        if not isinstance(session, dict):
            return _error("session must be an object", 1002)
        audio_format = session.get("audio_format", stream.config["audio_format"])
        if not isinstance(audio_format, dict) or audio_format.get("encoding") not in ENCODINGS \
                or not isinstance(audio_format.get("sample_rate"), int):
            return _error(f"Invalid audio_format: {str(audio_format)[:80]}", 1002)
        delay = session.get("target_streaming_delay_ms", stream.config["target_streaming_delay_ms"])
        if not _delay_ok(delay):
            return _error("target_streaming_delay_ms must be any integer from 80 to 1200, or 2400", 1002)
        stream.config.update(audio_format=audio_format, target_streaming_delay_ms=delay)
        return json.dumps(DOCUMENTED[1] if self.documented else {"type": "session.updated", "session": stream.config})

    async def _watch(self, ws, stream: _Stream) -> None:
        """The documented timeout: audio stopped and no `input_audio.end` within `end_timeout_s`."""
        with contextlib.suppress(websockets.ConnectionClosed):
            while not stream.ended.is_set():
                await asyncio.sleep(min(1.0, self.end_timeout_s / 4))
                if stream.last_append and time.perf_counter_ns() - stream.last_append > self.end_timeout_s * 1e9 \
                        and not stream.ended.is_set():
                    await ws.send(_error(TIMEOUT_MESSAGE, TIMEOUT_CODE))
                    await ws.close(1011, "timeout")
                    return

    async def _speak(self, ws, t0: int, first: bytes, stream: _Stream) -> None:
        s = self.scenario
        turn = s.turn(first, t0)
        words = turn.words
        if self.documented:
            words = [DOCUMENTED[3]["text"], DOCUMENTED[4]["text"].strip()]
        sent = 0  # words sent as deltas
        async for k in turn.partials():
            if s.fault == "malformed":
                await ws.send('{"type": "transcription.text.delta", "text": ')
            elif breaks(s.fault):
                await break_off(ws, s.fault)
                return
            sent = await self._deltas(ws, words, sent, min(k, len(words) - 1), turn.transcript)  # the tail waits
        if s.fault == "no_final":
            return
        await stream.ended.wait()
        await sleep_until(turn.final_at)  # at once when input_audio.end came after the final's time
        await self._deltas(ws, words, sent, len(words), turn.transcript)
        record(self, turn.transcript, "final")
        text = " ".join(words)
        await ws.send(json.dumps(DOCUMENTED[5] if self.documented else {
            "type": "transcription.done", "model": stream.model, "text": text,
            "usage": {"prompt_audio_seconds": round(len(stream.audio) / 32000)}, "language": "en"}))

    async def _deltas(self, ws, words: list[str], sent: int, upto: int, key: str) -> int:
        """Send words[sent:upto] a delta each (the stream's first preceded by `transcription.language`);
        how many words have been sent."""
        for i in range(sent, upto):
            if i == 0:
                await ws.send(json.dumps(DOCUMENTED[2] if self.documented
                                         else {"type": "transcription.language", "audio_language": "en"}))
                record(self, key, "first_partial")
            await ws.send(json.dumps(DOCUMENTED[3 + i] if self.documented else
                                     {"type": "transcription.text.delta", "text": words[i] if i == 0 else " " + words[i]}))
        return max(sent, upto)
