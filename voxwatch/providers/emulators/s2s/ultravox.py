"""A loopback emulator of Ultravox Realtime: `POST /api/calls`, then the call's WebSocket at its join URL
(an ASGI app: the REST API and the calls' sockets on one port, as one host).

The sources are those of voxwatch/providers/s2s/ultravox.py (Ultravox's documentation, from its source
repository fixie-ai/ultradox @eafa4599f69c0ec0fb5c0d837e4bc55030e295c0, and the official example client).

Creating a call takes the key in `X-API-Key` (else 401), a JSON body with a known `model` (no model:
the default, `ultravox-v0.7`) and `medium.serverWebSocket.inputSampleRate` (required, else 400), and
answers 201 with the call object: `callId`, `created`, `joinUrl` (this emulator's own
`ws://<host>/calls/<callId>/join`: a join URL's form is the server's, and a client opens it as given),
`joinTimeout` "30s", `maxDuration` "3600s", `firstSpeakerSettings`, `medium`, `model`, `voice`. The
handshake faults refuse the creation (429 and 503 with `Retry-After`, as Ultravox's concurrency page
documents); a call can be joined once, and an unknown call's join is refused with 404.

The joined call opens with `call_started` {callId} and `state` "listening", unless the agent speaks
first (`firstSpeakerSettings.agent`, or neither `firstSpeakerSettings.user` nor `firstSpeaker:
"FIRST_SPEAKER_USER"`: Ultravox's default): then it greets at once, as Ultravox does at join, and a
client that left the default hears a greeting before its caller has spoken. Binary messages are the
caller's s16le PCM at `inputSampleRate`; `ping` is answered with `pong` (the timestamp echoed).

Turn detection follows the S2SScenario and Ultravox's VAD: the caller's speech ends at the arrival of
the call's first audio message plus `speech_end_for(<that message>)` (the scenario's anchors, keyed by
its sha256: for the voxwatch adapter, the clip's first 16 kHz chunk as it is). The turn is over once
audio has come up to the speech end plus `vadSettings.turnEndpointDelay` (default 0.384 s): a client
that stops sending audio after its speech never gets an answer. Then `state` "thinking" and the
caller's final `transcript` (role user), and from `response_ms` (+ jitter) after the speech end, `state`
"speaking", then the reply at `outputSampleRate` as binary messages (leading silence, then speech,
`chunk_ms` each, every `send_every_ms` when the client's buffer holds the whole reply, else in real
time) with agent transcript deltas, then the agent's final transcript and `state` "listening". The
ledger records `first_audio` and `first_speech` by the first audio message's sha256.

Faults: the handshake ones refuse the call's creation; `malformed` (a broken data message),
`disconnect` (dropped without a close frame) and `close:<code>` mid-reply; `no_final` (no final
transcript); `inaudible` (silent audio). UltravoxScenario adds what Ultravox documents beyond them:
the call reaching its `maxDuration` mid-reply (the socket closed cleanly, as the server ends a call),
and a `playback_clear_buffer` mid-reply (the agent interrupted). `documented` replays the data
messages of Ultravox's "Protocol & Data Messages" page as that page gives them (DOCUMENTED below).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import hashlib
import json
import re
import time
import uuid

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from voxwatch.foundation.clock import sleep_until
from voxwatch.providers.emulators.faults import break_off, breaks, http_refusal
from voxwatch.providers.emulators.ledger import record
from voxwatch.providers.emulators.scenario import S2SScenario, jitter_ms, scenario_for
from voxwatch.providers.emulators.speech import ChunkCache

# changelog/news.mdx (fixie-ai/ultradox): the model strings that work, and the default (ultravox-v0.7)
MODELS = ("ultravox-v0.7", "ultravox-v0.6", "ultravox-v0.6-llama3.3-70b", "ultravox-v0.6-gemma3-27b",
          "fixie-ai/ultravox", "fixie-ai/ultravox-v0.7", "fixie-ai/ultravox-llama3.3-70b")
DEFAULT_MODEL = "ultravox-v0.7"
CLIENT_BUFFER_MS = 60  # clientBufferSizeMs's default
TURN_ENDPOINT_DELAY_S = 0.384  # vadSettings.turnEndpointDelay's default
DURATION = re.compile(r"^(\d+(?:\.\d{1,9})?)s$")  # the API's durations: "0.384s"

# apps/datamessages.mdx "Protocol & Data Messages" (fixie-ai/ultradox @eafa4599f69c0ec0fb5c0d837e4bc55030e295c0;
# https://docs.ultravox.ai/apps/datamessages), each message's "Message Structure" as the page gives it:
#   {"type": "call_started", "callId": "550e8400-e29b-41d4-a716-446655440000"}
#   {"type": "state", "state": "listening"}
#   {"type": "transcript", "role": "agent", "medium": "voice", "text": "Full transcript so far",
#    "delta": null, "final": false, "ordinal": 1}
#   {"type": "debug", "message": "Debug information here"}
#   {"type": "pong", "timestamp": 1234567890.123}
# The `documented` scenario replays them in the order the official example client
# (fixie-ai/ultravox-websocket-example-client websocket_client.py @0fb3595683f9fac2bfc2fa3b80fab2c27874bf20)
# handles a call: the call starts and listens; the agent speaks (binary audio) with its transcript so far;
# a debug message; the round's final transcript; listening again.
DOCUMENTED = {
    "call_started": {"type": "call_started", "callId": "550e8400-e29b-41d4-a716-446655440000"},
    "listening": {"type": "state", "state": "listening"},
    "transcript": {"type": "transcript", "role": "agent", "medium": "voice", "text": "Full transcript so far",
                   "delta": None, "final": False, "ordinal": 1},
    "debug": {"type": "debug", "message": "Debug information here"},
    "pong": {"type": "pong", "timestamp": 1234567890.123},
}
ENDINGS = (None, "max_duration", "clear_buffer")


@dataclasses.dataclass(frozen=True)
class UltravoxScenario(S2SScenario):
    """An S2SScenario with the Ultravox behaviours the shared faults do not cover."""

    # "max_duration": the call reaches its maxDuration mid-reply and the server closes the socket cleanly;
    # "clear_buffer": a playback_clear_buffer mid-reply (Ultravox heard the caller and cut the agent off)
    ending: str | None = None
    documented: bool = False  # the data messages as the vendor's page gives them (DOCUMENTED)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.ending not in ENDINGS:
            raise ValueError(f"unknown Ultravox behaviour {self.ending!r}")


def _error(status: int, detail: str) -> JSONResponse:
    return JSONResponse({"detail": detail}, status)


def _seconds(value, default: float) -> float:
    """An API duration ("0.384s") in seconds; `default` when absent. ValueError when it is no duration."""
    if value is None:
        return default
    match = DURATION.match(str(value))
    if match is None:
        raise ValueError(f"not a duration: {value!r}")
    return float(match.group(1))


@dataclasses.dataclass
class _Call:
    """A created call: what the client asked for."""

    call_id: str
    input_rate: int
    output_rate: int
    buffer_ms: int
    endpoint_delay_s: float
    agent_first: bool
    joined: bool = False


def _call(body) -> _Call:
    """The call a Create Call body asks for; ValueError (its message: why) when Ultravox would refuse it."""
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object")
    model = body.get("model", DEFAULT_MODEL)
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}")
    ws = (body.get("medium") or {}).get("serverWebSocket")
    if not isinstance(ws, dict):
        raise ValueError("this emulator serves medium.serverWebSocket calls only")
    rate = ws.get("inputSampleRate")
    if not isinstance(rate, int) or isinstance(rate, bool) or rate <= 0:
        raise ValueError("medium.serverWebSocket.inputSampleRate is required")
    output = ws.get("outputSampleRate", rate)
    buffer_ms = ws.get("clientBufferSizeMs", CLIENT_BUFFER_MS)
    if not isinstance(output, int) or output <= 0 or not isinstance(buffer_ms, int) or buffer_ms < 0:
        raise ValueError("outputSampleRate and clientBufferSizeMs must be positive integers")
    delay = _seconds((body.get("vadSettings") or {}).get("turnEndpointDelay"), TURN_ENDPOINT_DELAY_S)
    first = body.get("firstSpeakerSettings")
    if first is not None and not isinstance(first, dict):
        raise ValueError("firstSpeakerSettings must be an object")
    user_first = "user" in (first or {}) or (first is None and body.get("firstSpeaker") == "FIRST_SPEAKER_USER")
    return _Call(uuid.uuid4().hex, rate, output, buffer_ms, delay, not user_first)


class _Session:
    """One joined call: the caller's audio in, the agent's greeting (if it speaks first) and reply out."""

    def __init__(self, emulator: "UltravoxEmulator", ws: WebSocket, call: _Call) -> None:
        self.emulator, self.ws, self.call, self.s = emulator, ws, call, emulator.scenario
        self.t0: int | None = None  # the first audio message's arrival
        self.first = b""
        self.received = 0  # caller samples received
        self.heard = asyncio.Event()  # set as each audio message comes
        self.greeting: asyncio.Task | None = None
        self.reply: asyncio.Task | None = None
        self.ordinal = 0

    async def data(self, message: dict) -> None:
        await self.ws.send_text(json.dumps(message))

    async def state(self, state: str) -> None:
        await self.data(DOCUMENTED["listening"] if self.s.documented and state == "listening" else
                        {"type": "state", "state": state})

    async def transcript(self, role: str, final: bool, text: str | None = None, delta: str | None = None) -> None:
        await self.data({"type": "transcript", "role": role, "medium": "voice", "text": text, "delta": delta,
                         "final": final, "ordinal": self.ordinal})

    async def run(self) -> None:
        await self.data(DOCUMENTED["call_started"] if self.s.documented else
                        {"type": "call_started", "callId": self.call.call_id})
        if self.call.agent_first:
            self.greeting = asyncio.create_task(self.speak(time.perf_counter_ns(), greeting=True))
        else:
            await self.state("listening")
        try:
            while True:
                message = await self.ws.receive()
                if message["type"] == "websocket.disconnect":
                    return
                arrived = time.perf_counter_ns()
                if message.get("bytes") is not None:
                    self.audio(message["bytes"], arrived)
                elif message.get("text") is not None:
                    await self.client_message(message["text"])
        finally:
            for task in (self.greeting, self.reply):
                if task is not None:
                    task.cancel()

    def audio(self, pcm: bytes, arrived: int) -> None:
        if self.t0 is None:
            self.t0, self.first = arrived, pcm
            self.reply = asyncio.create_task(self.answer())
        self.received += len(pcm) // 2
        self.heard.set()

    async def client_message(self, text: str) -> None:
        try:
            message = json.loads(text)
            kind = message["type"]
        except (ValueError, KeyError, TypeError):
            return  # not a data message: ignored
        if kind == "ping":
            await self.data(DOCUMENTED["pong"] if self.s.documented else
                            {"type": "pong", "timestamp": message.get("timestamp")})
        elif kind == "hang_up":
            await self.ws.close(1000)

    async def answer(self) -> None:
        """The caller's turn: wait until the VAD has heard its end, then the reply."""
        s, call = self.s, self.call
        speech_end = s.speech_end_for(self.first)
        needed = int((speech_end + call.endpoint_delay_s) * call.input_rate)
        while self.received < needed:  # the VAD works on the audio it gets: no audio, no end of turn
            self.heard.clear()
            await self.heard.wait()
        await self.state("thinking")
        await self.transcript("user", True, text="(the caller's words)")
        self.ordinal += 1
        start = self.t0 + int((speech_end * 1000 + s.response_ms + jitter_ms(self.first, s.jitter_ms)) * 1e6)
        await self.speak(max(start, time.perf_counter_ns()))

    async def speak(self, start: int, greeting: bool = False) -> None:
        s, call = self.s, self.call
        text = "hello, how can i help you today" if greeting else s.reply_for(self.first)
        chunks, first_speech = await asyncio.to_thread(self.emulator.chunks.get, text, call.output_rate)
        ahead = call.buffer_ms >= len(chunks) * s.chunk_ms  # the client's buffer holds the whole reply
        every = int((s.send_every_ms if ahead else s.chunk_ms) * 1e6)
        stream = hashlib.sha256(self.first).hexdigest()  # the ledger's key: the call's first audio message
        await sleep_until(start)
        await self.state("speaking")
        for i, chunk in enumerate(chunks):
            await sleep_until(start + i * every)
            if not greeting and await self.mishap(i):
                return
            sends = () if greeting else ("first_audio",) * (i == 0) + ("first_speech",) * (i == first_speech)
            for what in sends:  # the ledger times the reply, not a greeting
                record(self.emulator, stream, what)
            await self.ws.send_bytes(chunk)
            if i == 0:
                await (self.data(DOCUMENTED["transcript"]) if s.documented and not greeting else
                       self.transcript("agent", False, delta=text.split(" ")[0]))
        if s.documented and not greeting:
            await self.data(DOCUMENTED["debug"])
        if greeting or s.fault != "no_final":
            await self.transcript("agent", True, text=text)
        self.ordinal += 1
        await self.state("listening")

    async def mishap(self, i: int) -> bool:
        """Commit the scenario's mid-reply fault or Ultravox behaviour before chunk i; True ends the reply."""
        s = self.s
        if i == 1 and s.fault == "malformed":
            await self.ws.send_text('{"type": "transcript", "role": ')
        elif i == 1 and s.ending == "clear_buffer":
            await self.data({"type": "playback_clear_buffer"})
            await self.state("listening")
            return True
        elif i == 1 and s.ending == "max_duration":
            await self.ws.close(1000)  # the call's time limit: the server ends the call
            return True
        elif i == 2 and breaks(s.fault):
            await break_off(self.ws, s.fault)
            return True
        return False


class UltravoxEmulator:
    def __init__(self, scenario) -> None:
        s2s = scenario_for(scenario, "s2s")  # a plain S2SScenario (voxwatch emulate's) has Ultravox's defaults
        self.scenario = s2s if isinstance(s2s, UltravoxScenario) else UltravoxScenario(**dataclasses.asdict(s2s))
        self.chunks = ChunkCache(self.scenario)
        self.chunks.get(self.scenario.transcript, 24000)  # paid before any stream is timed
        self.calls: dict[str, _Call] = {}

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/api/calls", self.create_call, methods=["POST"]),
            WebSocketRoute("/calls/{call_id}/join", self.join),
        ])

    async def create_call(self, request: Request) -> Response:
        if request.headers.get("x-api-key") != self.scenario.api_key:
            return _error(401, "Invalid API key.")
        refusal = http_refusal(self.scenario.fault)
        if refusal is not None:
            return refusal
        try:
            body = json.loads(await request.body())
            call = _call(body)
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            return _error(400, str(exc))
        self.calls[call.call_id] = call
        base = str(request.base_url).rstrip("/").replace("http://", "ws://", 1).replace("https://", "wss://", 1)
        first = {"agent": {}} if call.agent_first else {"user": {}}
        return JSONResponse({
            "callId": call.call_id, "created": dt.datetime.now(dt.timezone.utc).isoformat(), "joined": None,
            "ended": None, "endReason": None, "joinUrl": f"{base}/calls/{call.call_id}/join", "joinTimeout": "30s",
            "maxDuration": "3600s", "firstSpeakerSettings": first, "medium": body["medium"],
            "model": body.get("model", DEFAULT_MODEL), "voice": body.get("voice")}, 201)

    async def join(self, ws: WebSocket) -> None:
        call = self.calls.get(ws.path_params["call_id"])
        if call is None or call.joined:
            await ws.send_denial_response(_error(404, "Not found."))
            return
        call.joined = True
        await ws.accept()
        try:
            await _Session(self, ws, call).run()
        except WebSocketDisconnect:
            pass  # the client hung up; nothing is owed to it
