"""The reference agent (`voxwatch emulate agent`): a deployed voice agent on loopback that needs no
account, so that every part of testing a team's own agent runs and is tested with none. It serves:

- `/twilio`: the Twilio Media Streams protocol, as an agent behind a phone network hears it
  (providers/agent_twilio.py has the facts): it waits for `connected` and `start`, hears the
  caller's `media` (8 kHz mu-law), answers with `media`, a `mark` after each reply, and `clear`
  when the caller talks over it;
- `/pcm`: binary frames of 16-bit PCM at the scenario's `pcm_rate`, both ways;
- `/state`: an HTTP GET answering the records its last call changed, as JSON (table -> records): the
  state endpoint a scenario names (conversations/state_endpoint.py).

Behind either transport sits the scripted baseline's agent (providers/scripted_responder.py), not a
language model: no local one installs within voxwatch's constraints, and it keeps the tests fast.
Its turn-taking is its own, as a deployed agent's is: the caller's turn ends after
`end_of_turn_ms` without a voiced frame (a frame above VOICED_DBFS), then, `reply_delay_ms` later,
it makes the turn's expected calls against its own backend (what `/state` reports) and says the
turn's reply in real time, one 20 ms frame at a time. A voiced frame while it speaks is a
barge-in: it stops (`barge_in`), sends `clear` on the Twilio transport, and listens.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import json
import time
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import numpy as np
import websockets

from voxwatch.foundation.clock import sleep_until
from voxwatch.foundation.mulaw import RATE as MULAW_RATE, from_wire, to_wire
from voxwatch.foundation.scenario import Scenario
from voxwatch.providers.emulators.speech import speech_pcm
from voxwatch.providers.scripted_responder import ScriptedResponder

TWILIO, PCM, STATE = "/twilio", "/pcm", "/state"
FRAME_MS = 20
VOICED_DBFS = -45.0  # a frame louder than this is the caller speaking (the bundled silence floor is -72 dBFS)


@dataclass(frozen=True)
class AgentScenario:
    """What the reference agent says and keeps: `script` (the scenario it follows), `backend` (an
    object with `call(tool, args, scripted)` and `state`, copied fresh for each call: the
    conversations' simulated backend, handed in by `voxwatch emulate`), and its behaviour."""

    script: Scenario
    backend: Any
    reply_delay_ms: float = 300.0
    end_of_turn_ms: float = 800.0  # the bundled callers pause up to 0.48 s between sentences
    barge_in: bool = True
    voice: str = "espeak"  # or "tone": a 600 ms tone per reply (fast; no words)
    pcm_rate: int = 16000
    token: str | None = None  # when set, every request must carry `Authorization: Bearer <token>`


def voiced(pcm16: np.ndarray) -> bool:
    """Whether a frame holds the caller's voice (its RMS above VOICED_DBFS)."""
    if pcm16.size == 0:
        return False
    rms = float(np.sqrt(np.mean((pcm16.astype(np.float64) / 32768.0) ** 2)))
    return rms > 10 ** (VOICED_DBFS / 20)


class _Call:
    """One call to the agent, whichever the transport: it hears frames (`heard`), ends the caller's
    turns by silence, answers each, and stops when talked over. `say` writes one frame of its audio."""

    def __init__(self, agent: "ReferenceAgent", ws, rate: int) -> None:
        self.agent, self.ws, self.rate = agent, ws, rate
        self.script: AgentScenario = agent.scenario
        self.responder = ScriptedResponder(self.script.script)
        self.backend = copy.deepcopy(self.script.backend)
        agent.latest = self.backend  # /state reports the last call's records
        self.turn = 0
        self.speaking = False
        self.last_voiced: int | None = None  # the caller's last voiced frame this turn (None: silent)
        self.reply: asyncio.Task | None = None
        self.watch = asyncio.create_task(self._end_of_turn())

    def heard(self, pcm16: np.ndarray) -> None:
        if not voiced(pcm16):
            return
        self.last_voiced = time.perf_counter_ns()
        if self.speaking and self.script.barge_in and self.reply is not None:
            self.reply.cancel()  # talked over: stop at once
            self.speaking = False
            self.reply = asyncio.create_task(self._clear())

    async def cleared(self) -> None:
        """What the transport says when the agent stops talking over the caller (Twilio: clear)."""

    async def _clear(self) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            await self.cleared()

    async def say(self, pcm16: bytes) -> None:
        raise NotImplementedError

    async def replied(self, turn: int) -> None:
        """What the transport says after a reply (Twilio: a mark)."""

    async def _end_of_turn(self) -> None:
        eot = int(self.script.end_of_turn_ms * 1e6)
        while True:
            await asyncio.sleep(FRAME_MS / 1000)
            if self.last_voiced is not None and time.perf_counter_ns() - self.last_voiced >= eot:
                self.last_voiced = None
                turn, self.turn = self.turn, self.turn + 1
                if self.reply is not None:
                    self.reply.cancel()
                self.reply = asyncio.create_task(self._answer(turn))

    async def _answer(self, index: int) -> None:
        """The turn's calls against this call's backend, then its reply, in real time."""
        script = self.script.script
        if index >= len(script.turns):
            return
        for call, expected in zip(self.responder.calls_for(index), script.turns[index].expected_calls):
            self.backend.call(script.tool(call.name), call.arguments, expected.result)
        start = time.perf_counter_ns() + int(self.script.reply_delay_ms * 1e6)
        pcm, _ = speech_pcm(script.turns[index].reply, self.rate, self.script.voice)
        step = self.rate * FRAME_MS // 1000
        await sleep_until(start)
        self.speaking = True
        try:
            with contextlib.suppress(websockets.ConnectionClosed):  # the caller hung up
                for k in range(0, pcm.size, step):
                    await sleep_until(start + (k // step) * FRAME_MS * 1_000_000)
                    await self.say(pcm[k:k + step].tobytes())
                await self.replied(index)
        finally:
            self.speaking = False

    def close(self) -> None:
        self.watch.cancel()
        if self.reply is not None:
            self.reply.cancel()


class _TwilioCall(_Call):
    def __init__(self, agent: "ReferenceAgent", ws, stream_sid: str) -> None:
        super().__init__(agent, ws, MULAW_RATE)
        self.stream_sid = stream_sid

    async def say(self, pcm16: bytes) -> None:
        payload = base64.b64encode(to_wire(pcm16)).decode()
        await self.ws.send(json.dumps({"event": "media", "streamSid": self.stream_sid, "media": {"payload": payload}}))

    async def replied(self, turn: int) -> None:
        await self.ws.send(json.dumps({"event": "mark", "streamSid": self.stream_sid, "mark": {"name": f"reply-{turn}"}}))

    async def cleared(self) -> None:
        await self.ws.send(json.dumps({"event": "clear", "streamSid": self.stream_sid}))


class _PcmCall(_Call):
    async def say(self, pcm16: bytes) -> None:
        await self.ws.send(pcm16)


class ReferenceAgent:
    """The emulator (served by emulators/server.py): one call per WebSocket, `/state` over HTTP."""

    def __init__(self, scenario: AgentScenario) -> None:
        self.scenario = scenario
        self.latest = copy.deepcopy(scenario.backend)  # before any call: the initial state
        self.ledger = None
        for rate in (MULAW_RATE, scenario.pcm_rate):  # load the speech engine and resampler before any call:
            speech_pcm("ready", rate, scenario.voice)  # the first reply would otherwise be late by their start

    def process_request(self, connection, request):
        path = request.path.split("?")[0]
        token = self.scenario.token
        if path not in (TWILIO, PCM, STATE):
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        if token is not None and request.headers.get("Authorization") != f"Bearer {token}":
            return connection.respond(HTTPStatus.UNAUTHORIZED, "invalid credentials\n")
        if path == STATE:
            response = connection.respond(HTTPStatus.OK, json.dumps(self.latest.state))
            del response.headers["Content-Type"]
            response.headers["Content-Type"] = "application/json"
            return response
        return None

    async def handle(self, ws) -> None:
        calls: list[_Call] = []  # the call, once it has begun
        try:
            if ws.request.path.split("?")[0] == TWILIO:
                await self._twilio(ws, calls)
            else:
                calls.append(call := _PcmCall(self, ws, self.scenario.pcm_rate))
                async for message in ws:
                    if isinstance(message, bytes):
                        call.heard(np.frombuffer(message, dtype="<i2"))
        except websockets.ConnectionClosed:
            pass  # the caller hung up
        finally:
            for call in calls:
                call.close()

    async def _twilio(self, ws, calls: list[_Call]) -> None:
        """A Media Stream: `connected`, `start` (its streamSid), then `media` until `stop`."""
        async for message in ws:
            data = json.loads(message)
            event = data.get("event")
            if event == "start" and not calls:
                calls.append(_TwilioCall(self, ws, data["start"]["streamSid"]))
            elif event == "media" and calls:
                calls[0].heard(from_wire_array(data["media"]["payload"]))
            elif event == "stop":
                await ws.close()
                return


def from_wire_array(payload: str) -> np.ndarray:
    """A `media` payload (base64 mu-law) as int16 samples."""
    return np.frombuffer(from_wire(base64.b64decode(payload)), dtype="<i2")
