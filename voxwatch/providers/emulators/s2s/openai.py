"""A loopback emulator of OpenAI's audio APIs, all on one host as the vendor serves them.

- `POST /v1/audio/transcriptions` (multipart form: `file` (WAV), `model`, `response_format`, optional
  `language`, one of Whisper's ISO 639 codes, else a 400 as OpenAI answers an unknown one):
  answers `{"text": ...}` `final_ms` after the request body has arrived (STTScenario: the
  processing time of a batch request); transcript and jitter are keyed by the sha256 of the WAV's
  PCM samples.
- `POST /v1/audio/speech` (JSON: `model`, `input`, `voice`, `response_format: "pcm"`): streams raw
  24 kHz 16-bit little-endian mono PCM as a chunked body, timed as the Cartesia emulator times its
  chunks (TTSScenario: headers and the first chunk `ttfb_ms` after the body arrived, then a chunk
  every `send_every_ms`; the speech `gaming_delay_ms` after the silence, when set).
- `/v1/realtime` WebSocket, GA interface: `?intent=transcription` opens a transcription session
  (STTScenario), `?model=<id>` a speech-to-speech session (S2SScenario). Both open with
  `session.created`, answer `session.update` with `session.updated` (or an `error` event when the
  session type or the input format is wrong: 24 kHz `audio/pcm`, or for transcription also 8 kHz
  G.711 mu-law `audio/pcmu`), take base64 audio in that format in `input_audio_buffer.append`
  (a transcription session notes what it received, `seen:realtime`, at each commit), and answer `input_audio_buffer.commit` with
  `input_audio_buffer.committed` (an `error` when the buffer is empty).
  Transcription: as the service does with turn detection off, nothing is transcribed until the
  commit; then `conversation.item.input_audio_transcription.delta` events (a word each, every
  `partial_every_ms` from the commit) and `.completed` `final_ms` after the end of speech (never
  before the commit). S2S: `response.create` gets `response.created`, then the reply's audio in
  `response.output_audio.delta` events - leading silence, then speech - from `response_ms` after
  the end of the caller's speech (never before the `response.create`), a chunk every
  `send_every_ms`, then `response.output_audio.done`, `response.output_audio_transcript.done` and
  `response.done`. The reply says the stream's own line of `replies` where it has one (keyed as
  anchors are; `voxwatch emulate` gives each bundled spoken question an emulated answer), else
  `transcript`. A ConversationScript makes the S2S session a scripted multi-turn agent with
  function calls (openai_agent.py).
- `POST /v1/chat/completions`: answers from a script (chat.py), streamed as server-sent events, for
  the cascade's language model and the conversation judge (`OpenAIScenario.chat`, or a ChatScenario
  served alone).

Clocks and per-stream keys: a realtime session's clock starts when its first
`input_audio_buffer.append` arrives, and its anchors, transcript and jitter are keyed by the
sha256 of that append's decoded audio - the 24 kHz PCM exactly as the client sent it (for the
voxwatch adapter: the clip's first 16 kHz chunk through `openai_realtime.Upsampler`), not the
16 kHz clip bytes.

Calibration ledger (emulators/ledger.py), recorded just before each send: batch `final` (keyed by the
transcript), realtime transcription `first_partial` and `final` (by the transcript), TTS
`first_audio` and `first_speech` (by the input text), S2S `first_audio` and `first_speech` (by the
stream's first-append key, the sha256 hex above). The HTTP ones are stamped immediately before
uvicorn writes the bytes that carry them to the socket (emulators/stamped_h11.py): the batch response's
head, the TTS body's first chunk and first speech chunk.

OpenAI's own behaviour, beyond the shared scenarios (`OpenAIScenario`, all off by default):
- `mid_session_error`: on the caller's fifth `input_audio_buffer.append`, `"recoverable"` sends an
  `error` event that names that append's `event_id` (null when the client gave none) and changes
  nothing else - the session goes on and the turn completes, as "most errors are recoverable and the
  session will stay open" (the `error` event's reference; openai-python
  src/openai/types/realtime/realtime_error_event.py); `"session_expired"` sends the error the
  service sends at its session time limit (code `session_expired`, "Your session hit the maximum
  duration of 60 minutes.") and closes the WebSocket with 1001 and the same message
  (pollen-robotics/reachy_mini_conversation_app#134, fuwei007/OpenAIIOSRealtimeAPIDemo#4).
- `response_status`: `cancelled`, `incomplete` or `failed` ends the S2S reply after half its audio
  with a `response.done` of that status and its `status_details` (`reason` `turn_detected`,
  `max_output_tokens`; `error` for `failed`: openai-python realtime_response_status.py).
- `speech_encoding="gzip"`: the speech body goes out with `Content-Encoding: gzip` when the request's
  Accept-Encoding allows it (httpx, the official SDK's client, sends `gzip, deflate` by default),
  each chunk compressed and sync-flushed as it is written, so it can be decoded as it arrives.
  Whether OpenAI compresses speech bodies is not documented; its JSON responses have come
  brotli-encoded (ChatGPTNextWeb/NextChat#3215), and ElevenLabs compresses audio when allowed
  (elevenlabs/elevenlabs-python#369).
Every `error` event names the `event_id` of the client event that caused it (null when it had none).

Auth: `Authorization: Bearer <key>`; a wrong key is refused with 401 (HTTP and WebSocket upgrade
alike). Handshake faults refuse the request or upgrade; stream faults: `malformed` (a broken JSON
event, or an odd trailing byte in a PCM body), `disconnect` (the WebSocket dropped without a close
frame, through uvicorn's transport, or the HTTP body cut short), `close:<code>` (the WebSocket closed
with that code), `no_final`
(no `.completed` / `response.done`, an HTTP body that never ends), `inaudible` (silent audio).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import time
import uuid
from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from voxwatch.foundation.clock import sleep_until

from voxwatch.providers.stt.openai_batch import WHISPER_LANGUAGES

from voxwatch.providers.emulators.s2s.chat import ChatScenario, ChatStream, problem
from voxwatch.providers.emulators.faults import break_off, breaks
from voxwatch.providers.emulators.ledger import record, saw
from voxwatch.providers.emulators.scenario import ConversationScript, S2SScenario, STTScenario, TTSScenario, jitter_ms, scenario_for
from voxwatch.providers.emulators.speech import ChunkCache, b64
from voxwatch.providers.emulators.openai_compatible import (TimedJSON, audio_form, error_body, json_body, json_error,
                                                            refuse)
from voxwatch.providers.emulators.stamped_h11 import record_at_write
from voxwatch.providers.emulators.streamed import TimedBody

RATE = 24000  # the only PCM rate of the speech endpoint's "pcm" format and of the Realtime API
PCM_FORMAT = {"type": "audio/pcm", "rate": RATE}
PCMU_FORMAT = {"type": "audio/pcmu"}  # G.711 mu-law, 8 kHz (openai-python types/realtime/realtime_audio_formats.py)
MULAW_RATE = 8000
ERROR_ON_APPEND = 5  # mid_session_error: the append that draws it
SESSION_EXPIRED = "Your session hit the maximum duration of 60 minutes."
UNFINISHED = {  # response status -> its status_details
    "cancelled": {"type": "cancelled", "reason": "turn_detected"},
    "incomplete": {"type": "incomplete", "reason": "max_output_tokens"},
    "failed": {"type": "failed", "error": {"type": "server_error", "code": None,
                                           "message": "The server had an error while processing your request."}},
}


@dataclass(frozen=True)
class OpenAIScenario:
    """OpenAI's own behaviour on top of the shared scenarios (`scenario`: one, or a Scenarios bundle);
    see the module docstring. Each option is off by default."""

    scenario: object
    mid_session_error: str | None = None  # None, "recoverable" or "session_expired"
    response_status: str = "completed"  # or one of UNFINISHED
    speech_encoding: str | None = None  # None or "gzip"
    chat: ChatScenario | None = None  # the chat completions script (chat.py)

    def __post_init__(self) -> None:
        if self.mid_session_error not in (None, "recoverable", "session_expired"):
            raise ValueError(f"unknown mid_session_error {self.mid_session_error!r}")
        if self.response_status != "completed" and self.response_status not in UNFINISHED:
            raise ValueError(f"unknown response_status {self.response_status!r}")
        if self.speech_encoding not in (None, "gzip"):
            raise ValueError(f"unknown speech_encoding {self.speech_encoding!r}")


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:22]}"


class _Realtime:
    """One Realtime WebSocket session: the event loop shared by both session types."""

    session_type = ""

    def __init__(self, ws: WebSocket, scenario, emulator) -> None:
        self.ws, self.s, self.emulator = ws, scenario, emulator
        self.t0: int | None = None
        self.first: bytes = b""
        self.received: list[bytes] = []  # every append's audio, as decoded
        self.buffered = 0
        self.appends = 0
        self.last_item: str | None = None
        self.tasks: list[asyncio.Task] = []

    async def send(self, event: dict) -> None:
        await self.ws.send_text(json.dumps({"event_id": _id("event"), **event}))

    async def error(self, message: str, code: str, cause: dict | None = None) -> None:
        """An `error` event, naming the event_id of the client event `cause` (null when it gave none)."""
        await self.send({"type": "error", "error": {**error_body(message, "invalid_request_error", code),
                                                    "event_id": (cause or {}).get("event_id")}})

    keeps_audio = False  # whether each append's audio is kept for the ledger (a transcription turn's)
    input_formats = (PCM_FORMAT,)  # what audio.input.format may be, and so what each append carries
    input_format = PCM_FORMAT

    def config(self) -> dict:
        return {"object": "realtime.session", "type": self.session_type, "id": _id("sess"),
                "audio": {"input": {"format": self.input_format}}}

    def valid(self, session: dict) -> str | None:
        """Why a session.update is refused, or None (an accepted input format is the session's from then on)."""
        if session.get("type") != self.session_type:
            return f"session.type must be '{self.session_type}' on this connection"
        fmt = ((session.get("audio") or {}).get("input") or {}).get("format")
        if fmt is not None and fmt not in self.input_formats:
            return "audio.input.format must be one of " + ", ".join(json.dumps(f) for f in self.input_formats)
        self.input_format = fmt or self.input_format
        return None

    @property
    def bytes_per_second(self) -> int:
        return RATE * 2 if self.input_format == PCM_FORMAT else MULAW_RATE  # G.711: one byte a sample at 8 kHz

    async def run(self) -> None:
        await self.send({"type": "session.created", "session": self.config()})
        try:
            while True:
                text = await self.ws.receive_text()
                arrived = time.perf_counter_ns()
                try:
                    event = json.loads(text)
                    kind = event["type"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    await self.error("could not parse the event", "invalid_json")
                    continue
                if await self.handle(kind, event, arrived):
                    return
        except WebSocketDisconnect:
            pass
        finally:
            for task in self.tasks:
                task.cancel()

    async def handle(self, kind: str, event: dict, arrived: int) -> bool:
        """Answer one client event; True when the session has ended."""
        if kind == "session.update":
            session = event.get("session") or {}
            problem = self.valid(session)
            if problem:
                await self.error(problem, "invalid_value", event)
            else:
                await self.send({"type": "session.updated", "session": {**self.config(), **session}})
        elif kind == "input_audio_buffer.append":
            try:
                audio = base64.b64decode(event["audio"], validate=True)
            except (KeyError, TypeError, ValueError):
                await self.error("audio must be base64-encoded pcm16", "invalid_value", event)
                return False
            if self.t0 is None:
                self.t0, self.first = arrived, audio
            if self.keeps_audio:
                self.received.append(audio)
            self.buffered += len(audio)
            self.appends += 1
            if self.appends == ERROR_ON_APPEND:
                return await self.mid_session_error(event)
        elif kind == "input_audio_buffer.commit":
            if not self.buffered:
                await self.error("the input audio buffer is empty", "input_audio_buffer_commit_empty", event)
                return False
            item = _id("item")
            await self.send({"type": "input_audio_buffer.committed", "previous_item_id": self.last_item, "item_id": item})
            n_bytes, self.last_item, self.buffered = self.buffered, item, 0
            await self.committed(item, arrived, n_bytes)
        elif kind == "response.create":
            await self.respond(arrived, event)
        return False

    async def mid_session_error(self, cause: dict) -> bool:
        """The scenario's mid-session error (OpenAIScenario), about the client event `cause`; True when
        it ends the session."""
        kind = self.emulator.options.mid_session_error
        if kind == "recoverable":
            await self.error("emulated recoverable error about this event; the session continues",
                             "emulated_recoverable_error", cause)
        elif kind == "session_expired":
            await self.error(SESSION_EXPIRED, "session_expired")
            await self.ws.close(code=1001, reason=SESSION_EXPIRED)
            return True
        return False

    async def committed(self, item: str, arrived: int, n_bytes: int) -> None: ...

    async def respond(self, arrived: int, event: dict) -> None:
        await self.error("responses are not available in this session", "invalid_request", event)

    async def misbehave(self) -> bool:
        """Commit the scenario's stream fault at the first timed send; True when the stream ends here."""
        if self.s.fault == "malformed":
            await self.ws.send_text('{"type": "conversation.item.input_audio_transcription.delta", "delta": ')
        elif breaks(self.s.fault):
            await break_off(self.ws, self.s.fault)
            return True
        return False


class _Transcription(_Realtime):
    session_type = "transcription"
    input_formats = (PCM_FORMAT, PCMU_FORMAT)
    keeps_audio = True

    def valid(self, session: dict) -> str | None:
        problem = super().valid(session)
        transcription = ((session.get("audio") or {}).get("input") or {}).get("transcription") or {}
        language = transcription.get("language")
        if language is not None and language not in WHISPER_LANGUAGES:
            return problem or f"audio.input.transcription.language {language!r} is not an ISO-639-1 code it takes"
        return problem or (None if transcription.get("model") else "audio.input.transcription.model is required")

    async def committed(self, item: str, arrived: int, n_bytes: int) -> None:
        saw(self.emulator, "realtime", {"format": self.input_format, "audio": b"".join(self.received).hex()})
        self.received = []
        self.tasks.append(asyncio.create_task(self._transcribe(item, arrived, n_bytes / self.bytes_per_second)))

    async def _transcribe(self, item: str, committed_at: int, seconds: float) -> None:
        s: STTScenario = self.s
        j = jitter_ms(self.first, s.jitter_ms)
        _, speech_end = s.anchors_for(self.first)
        final_at = max(self.t0 + int((speech_end * 1000 + s.final_ms + j) * 1e6), committed_at)
        transcript = s.transcript_for(self.first)
        words = transcript.split()
        every = int(s.partial_every_ms * 1e6)
        at, k, faulted = committed_at + every, 0, False
        while at < final_at and k < len(words):
            await sleep_until(at)
            if not faulted:
                faulted = True
                if await self.misbehave():
                    return
            if k == 0:
                record(self.emulator, transcript, "first_partial")
            await self.send({"type": "conversation.item.input_audio_transcription.delta", "item_id": item,
                             "content_index": 0, "delta": (" " if k else "") + words[k]})
            k, at = k + 1, at + every
        if s.fault == "no_final":
            return
        await sleep_until(final_at)
        if not faulted and await self.misbehave():
            return
        record(self.emulator, transcript, "final")
        await self.send({"type": "conversation.item.input_audio_transcription.completed", "item_id": item,
                         "content_index": 0, "transcript": transcript,
                         "usage": {"type": "duration", "seconds": round(seconds, 3)}})


class _Conversation(_Realtime):
    session_type = "realtime"

    def __init__(self, ws: WebSocket, scenario: S2SScenario, emulator, model: str, audio: ChunkCache) -> None:
        super().__init__(ws, scenario, emulator)
        self.model, self.audio = model, audio

    def config(self) -> dict:
        config = super().config()
        config["model"] = self.model
        config["audio"]["output"] = {"format": PCM_FORMAT, "voice": "marin"}
        return config

    def valid(self, session: dict) -> str | None:
        fmt = ((session.get("audio") or {}).get("output") or {}).get("format")
        if fmt is not None and fmt != PCM_FORMAT:
            return "audio.output.format must be audio/pcm at 24000 Hz"
        return super().valid(session)

    async def respond(self, arrived: int, event: dict) -> None:
        response, item = _id("resp"), _id("item")
        await self.send({"type": "response.created", "response": {
            "object": "realtime.response", "id": response, "status": "in_progress", "output": []}})
        self.tasks.append(asyncio.create_task(self._reply(response, item, arrived)))

    async def _reply(self, response: str, item: str, requested_at: int) -> None:
        s: S2SScenario = self.s
        start = s.reply_at(self.first, self.t0, requested_at)
        every = int(s.send_every_ms * 1e6)
        ids = {"response_id": response, "item_id": item, "output_index": 0, "content_index": 0}
        stream = hashlib.sha256(self.first).hexdigest()  # the ledger's key: the stream's first-append key
        status = self.emulator.options.response_status
        said = s.reply_for(self.first)
        whole, first_speech = self.audio.get(said, RATE)  # made before any clock (OpenAIEmulator)
        chunks = whole if status == "completed" else whole[:len(whole) // 2]
        for i, data in enumerate(chunks):
            await sleep_until(start + i * every)
            if i == 1 and s.fault == "malformed":
                await self.ws.send_text('{"type": "response.output_audio.delta", "delta": ')
            elif i == 2 and breaks(s.fault):
                await break_off(self.ws, s.fault)
                return
            if i == 0:
                record(self.emulator, stream, "first_audio")
            if i == first_speech:
                record(self.emulator, stream, "first_speech")
            await self.send({"type": "response.output_audio.delta", **ids, "delta": data})
        await self.send({"type": "response.output_audio.done", **ids})
        await self.send({"type": "response.output_audio_transcript.done", **ids, "transcript": said})
        if s.fault == "no_final":
            return
        await self.send({"type": "response.done", "response": {
            "object": "realtime.response", "id": response, "status": status, "status_details": UNFINISHED.get(status),
            "output": [{"id": item, "type": "message", "role": "assistant",
                        "status": "completed" if status == "completed" else "incomplete",
                        "content": [{"type": "output_audio", "transcript": said}]}]}})


class OpenAIEmulator:
    def __init__(self, scenario) -> None:
        self.options = scenario if isinstance(scenario, OpenAIScenario) else OpenAIScenario(scenario)
        scenario = self.options.scenario
        self.stt: STTScenario | None = scenario_for(scenario, "stt")
        self.tts: TTSScenario | None = scenario_for(scenario, "tts")
        self.s2s: S2SScenario | None = scenario_for(scenario, "s2s")
        self.chat: ChatScenario | None = self.options.chat or (scenario if isinstance(scenario, ChatScenario) else None)
        self._tts_audio = ChunkCache(self.tts) if self.tts is not None else None
        if self._tts_audio is not None:
            self._tts_audio.get("", RATE)  # first-use costs paid before any stream is timed
        self._s2s_audio = ChunkCache(self.s2s, b64) if self.s2s is not None else None
        for said in {self.s2s.transcript, *(text for _, text in self.s2s.replies)} if self.s2s is not None else ():
            self._s2s_audio.get(said, RATE)  # every reply made and encoded once, before any clock
        self._agent_audio = ChunkCache(self.s2s, b64) if isinstance(self.s2s, ConversationScript) else None
        for turn in self.s2s.turns if self._agent_audio is not None else ():  # every reply made before any clock
            self._agent_audio.get(turn.reply, RATE)

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/v1/audio/transcriptions", self.transcriptions, methods=["POST"]),
            Route("/v1/audio/speech", self.speech, methods=["POST"]),
            Route("/v1/chat/completions", self.chat_completions, methods=["POST"]),
            WebSocketRoute("/v1/realtime", self.realtime),
        ])

    @staticmethod
    def _refusal(scenario, headers) -> Response | None:
        return refuse(scenario, headers, "Incorrect API key provided.")

    async def transcriptions(self, request: Request) -> Response:
        problem, form = await audio_form(self.stt, request, "Incorrect API key provided.")
        if problem is not None:
            return problem
        model, response_format, language = (form.values["model"], form.values.get("response_format", "json"),
                                            form.values.get("language"))
        pcm, seconds, arrived = form.pcm, form.seconds, form.arrived
        if model not in ("whisper-1", "gpt-4o-transcribe", "gpt-4o-mini-transcribe", "gpt-transcribe"):  # SDK AudioModel
            return json_error(400, f"unknown model {model!r}", code="model_not_found")
        if response_format != "json":
            return json_error(400, "this emulator answers response_format json only")
        if language is not None and language not in WHISPER_LANGUAGES:
            return json_error(400, f"Invalid language {language!r}: language must be in ISO-639-1 format",
                               code="invalid_language_format")
        s = self.stt
        text = s.transcript_for(pcm)
        at = arrived + int((s.final_ms + jitter_ms(pcm, s.jitter_ms)) * 1e6)
        payload = json.dumps({"text": text, "usage": {"type": "duration", "seconds": round(seconds, 3)}}).encode()
        return TimedJSON(at, payload, s.fault, lambda: record_at_write(self, text, "final"))

    async def _json_request(self, scenario, request: Request) -> tuple[Response | None, dict, int]:
        """(a refusal or None, the JSON request, when its body arrived): the start of every JSON endpoint."""
        refusal = self._refusal(scenario, request.headers)
        if refusal is not None:
            return refusal, {}, 0
        return await json_body(request)

    async def speech(self, request: Request) -> Response:
        refusal, req, arrived = await self._json_request(self.tts, request)
        if refusal is not None:
            return refusal
        try:
            text, _model, _voice = str(req["input"]), req["model"], req["voice"]
        except (KeyError, TypeError) as exc:
            return json_error(400, f"could not read the request: {type(exc).__name__}")
        if req.get("response_format", "mp3") != "pcm":
            return json_error(400, "this emulator answers response_format pcm only")
        s = self.tts
        chunks, first_speech = await asyncio.to_thread(self._tts_audio.get, text, RATE)  # eSpeak must finish within ttfb_ms
        accepted = {part.split(";")[0].strip().lower() for part in request.headers.get("accept-encoding", "").split(",")}
        return TimedBody(chunks, first_speech, s.send_times(arrived, text, len(chunks), first_speech), s,
                         lambda what: record_at_write(self, text, what),
                         gzip=self.options.speech_encoding == "gzip" and "gzip" in accepted)

    async def chat_completions(self, request: Request) -> Response:
        refusal, req, arrived = await self._json_request(self.chat, request)
        if refusal is not None:
            return refusal
        refused = problem(self.chat, req)
        if refused is not None:
            return json_error(400, refused)
        if req.get("stream") is not True:
            return json_error(400, "this emulator answers stream: true only")
        return ChatStream(self.chat, self.chat.step_for(req["messages"]), str(req["model"]), arrived)

    async def realtime(self, websocket: WebSocket) -> None:
        params = websocket.query_params
        if params.get("intent") == "transcription":
            scenario = self.stt
        elif params.get("model"):
            scenario = self.s2s
        else:
            await websocket.send_denial_response(json_error(400, "give ?model= or ?intent=transcription"))
            return
        refusal = self._refusal(scenario, websocket.headers)
        if refusal is not None:
            await websocket.send_denial_response(refusal)
            return
        await websocket.accept()
        if scenario is self.stt:
            await _Transcription(websocket, scenario, self).run()
        elif self._agent_audio is not None:  # the scripted multi-turn agent (openai_agent.py)
            from voxwatch.providers.emulators.s2s.openai_agent import ScriptedConversation

            await ScriptedConversation(websocket, scenario, self, params["model"], self._agent_audio).run()
        else:
            await _Conversation(websocket, scenario, self, params["model"], self._s2s_audio).run()

