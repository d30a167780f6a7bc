"""The reference agent (`voxwatch emulate agent`): a deployed voice agent on loopback that needs no
account, so that every part of testing a team's own agent runs and is tested with none. It serves:

- `/twilio`: the Twilio Media Streams protocol, as an agent behind a phone network hears it
  (providers/agents/twilio.py has the facts): it waits for `connected` and `start`, hears the
  caller's `media` (8 kHz mu-law), answers with `media`, a `mark` after each reply, and `clear`
  when the caller talks over it;
- `/pcm`: binary frames of 16-bit PCM at the scenario's `pcm_rate`, both ways;
- `/state`: an HTTP GET answering the records its last call changed, as JSON (table -> records): the
  state endpoint a scenario names (conversations/state_endpoint.py).

Behind either transport sits the scripted baseline's agent (providers/s2s/scripted_responder.py), not a
language model: no local one installs within voxwatch's constraints, and it keeps the tests fast.
Its turn-taking is its own, as a deployed agent's is: the caller's turn ends after
`end_of_turn_ms` without a voiced frame (a frame above VOICED_DBFS); it makes the turn's expected
calls against its own backend (what `/state` reports) and says the turn's reply in real time, one
20 ms frame at a time, starting `end_of_turn_ms + reply_delay_ms` after the caller's last word.
A voiced frame while it speaks is a barge-in: it stops (`barge_in`) `barge_in_stop_ms` after the
caller's first word (at once when 0), sends `clear` on the Twilio transport, and listens. With
`ahead_ms` it streams each reply that far ahead of real time, as bot frameworks do (its first frame
still at the reply's start, then each frame `ahead_ms` before it is due): talked over, the audio it
had sent past its stop is still queued at the network, which its `clear` drops on the Twilio
transport; the raw PCM transport has no clear, so the caller hears it all.

Its timing is the truth benchmarks.agent_truth holds measurements against, so the caller's first
and last word are found as voxwatch itself finds them (METHOD "Audio"): the shared VAD anchors
(voxwatch/metrics/vad.py) of the caller's audio, its frames end to end, each sample at its frame's
arrival time (voxwatch: at its chunk's write).
The reply then starts exactly then, and a barge-in's last frame is cut at the stop, to the sample.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import copy
import json
import time
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import numpy as np
import websockets

from voxwatch.foundation.audio import resample, to_pcm16
from voxwatch.foundation.clock import sleep_until
from voxwatch.metrics.vad import VAD_PARAMS, speech_anchors
from voxwatch.foundation.mulaw import RATE as MULAW_RATE, from_wire, to_wire
from voxwatch.foundation.scenario import Scenario
from voxwatch.providers.emulators.ledger import record
from voxwatch.providers.emulators.speech import speech_pcm
from voxwatch.providers.s2s.scripted_responder import ScriptedResponder

TWILIO, PCM, STATE = "/twilio", "/pcm", "/state"
FRAME_MS = 20
VOICED_DBFS = -45.0  # a frame louder than this is the caller speaking (the bundled silence floor is -72 dBFS)
HEARD_S = 30.0  # the caller's audio kept, to find its words in
LEAD_S = 0.5  # read from this long before the caller's first voiced frame
WORDS_WINDOW_S = 2.0  # the caller's last word is sought in the last this-many seconds of its voiced frames


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
    voice: str = "espeak"  # or "tone": a tone of `tone_ms` per reply (fast; no words)
    pcm_rate: int = 16000
    barge_in_stop_ms: float = 0.0  # talked over: keep talking this long after the caller's first word
    tone_ms: float = 600.0
    token: str | None = None  # when set, every request must carry `Authorization: Bearer <token>`
    ahead_ms: float = 0.0  # stream each reply this far ahead of real time (as bot frameworks do; a clear drops it)


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
        agent.calls += 1
        self.number = agent.calls  # names this call's records in a calibration ledger (benchmarks.agent_truth)
        self.script: AgentScenario = agent.scenario
        self.responder = ScriptedResponder(self.script.script)
        self.backend = copy.deepcopy(self.script.backend)
        agent.latest = self.backend  # /state reports the last call's records
        self.turn = 0
        self.speaking = False
        self.last_voiced: int | None = None  # the caller's last voiced frame this turn (None: silent)
        self.first_voiced: int | None = None  # ... and its first
        self.barged_at: int | None = None  # the first voiced frame that talked over the reply under way
        self.heard_frames: collections.deque = collections.deque(maxlen=int(HEARD_S * 1000 / FRAME_MS))
        self.reply: asyncio.Task | None = None
        self.watch = asyncio.create_task(self._end_of_turn())

    def heard(self, pcm16: np.ndarray) -> None:
        now = time.perf_counter_ns()
        self.heard_frames.append((now, pcm16))
        if not voiced(pcm16):
            return
        self.last_voiced = now
        self.first_voiced = self.first_voiced or now
        if self.speaking and self.script.barge_in and self.reply is not None:
            if self.script.barge_in_stop_ms > 0:
                self.barged_at = self.barged_at or now  # the reply stops itself, at its time
                return
            self.reply.cancel()  # talked over: stop at once
            self.speaking = False
            self.reply = asyncio.create_task(self._clear())

    def words(self, since_ns: int) -> tuple[int, int] | None:
        """When the caller's words heard since `since_ns` (less LEAD_S) start and end (perf_counter ns):
        the shared VAD anchors of the audio as heard, each sample at its frame's arrival time."""
        frames = [(t, f) for t, f in self.heard_frames if t >= since_ns - int(LEAD_S * 1e9)]
        if not frames:
            return None
        pcm = np.concatenate([f for _, f in frames])
        x = pcm if self.rate == VAD_PARAMS.sample_rate else \
            to_pcm16(resample(pcm / 32768.0, self.rate, VAD_PARAMS.sample_rate))
        anchors = speech_anchors(x)
        if anchors is None:
            return None
        starts = np.cumsum([0] + [f.size for _, f in frames])

        def at(seconds: float) -> int:
            k = min(int(round(seconds * self.rate)), int(starts[-1]) - 1)
            i = int(np.searchsorted(starts, k, side="right")) - 1
            return frames[i][0] + (k - int(starts[i])) * 1_000_000_000 // self.rate

        return at(anchors.speech_start), at(anchors.speech_end)

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
                since = max(self.first_voiced or self.last_voiced, self.last_voiced - int(WORDS_WINDOW_S * 1e9))
                words = self.words(since)  # the last word: the end of the turn is enough to read
                last_word = words[1] if words is not None else self.last_voiced + FRAME_MS * 1_000_000
                self.last_voiced = self.first_voiced = None
                turn, self.turn = self.turn, self.turn + 1
                if self.reply is not None:
                    self.reply.cancel()
                self.reply = asyncio.create_task(self._answer(turn, last_word))

    def _stop_at(self, key: str) -> int | None:
        """When a barged-in reply stops: barge_in_stop_ms after the caller's first word, once found."""
        if self.barged_at is None:
            return None
        words = self.words(self.barged_at)
        if words is None:
            return None
        record(self.agent, key, "caller_first_word", at=words[0])
        return words[0] + int(self.script.barge_in_stop_ms * 1e6)

    async def _answer(self, index: int, last_word: int) -> None:
        """The turn's calls against this call's backend, then its reply, in real time from end_of_turn_ms
        + reply_delay_ms after the caller's `last_word` (each noted in a calibration ledger, with when
        its first frame and a barge-in's cut actually went out)."""
        key = f"{self.number}:{index}"
        record(self.agent, key, "caller_last_word", at=last_word)
        start = last_word + int((self.script.end_of_turn_ms + self.script.reply_delay_ms) * 1e6)
        script = self.script.script
        if index >= len(script.turns) and self.script.voice != "tone":
            return  # past its script it has nothing to say (the tone, having no words, is said again)
        if index < len(script.turns):
            for call, expected in zip(self.responder.calls_for(index), script.turns[index].expected_calls):
                self.backend.call(script.tool(call.name), call.arguments, expected.result)
        reply = script.turns[min(index, len(script.turns) - 1)].reply
        pcm, _ = speech_pcm(reply, self.rate, self.script.voice, self.script.tone_ms)
        step = self.rate * FRAME_MS // 1000
        start = max(start, time.perf_counter_ns())
        await sleep_until(start)
        self.speaking, self.barged_at = True, None
        stop_at: int | None = None
        ahead = int(self.script.ahead_ms * 1e6)
        try:
            with contextlib.suppress(websockets.ConnectionClosed):  # the caller hung up
                for k in range(0, pcm.size, step):
                    due = start + (k // step) * FRAME_MS * 1_000_000  # when frame k is due to play
                    send = max(start, due - ahead)
                    await sleep_until(send)
                    stop_at = stop_at or self._stop_at(key)
                    if stop_at is not None and stop_at < send + FRAME_MS * 1_000_000:
                        cut = pcm[k:k + max(0, (stop_at - due) * self.rate // 1_000_000_000)]
                        if cut.size:  # what plays from `due` to the stop (none when the audio sent reaches past it)
                            await self.say(cut.tobytes())
                        await sleep_until(stop_at)  # streaming ahead, it stops at its time, not its audio's end
                        record(self.agent, key, "stop", at=max(time.perf_counter_ns(), due + cut.size * 1_000_000_000 // self.rate))
                        self.speaking = False
                        await self._clear()
                        return
                    if k == 0:
                        record(self.agent, key, "first_frame")
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
        self.calls = 0
        for rate in (MULAW_RATE, scenario.pcm_rate):  # load the speech engine and resampler before any call:
            speech_pcm("ready", rate, scenario.voice)  # the first reply would otherwise be late by their start
            resample(np.zeros(rate // 10), rate, VAD_PARAMS.sample_rate)  # and by finding the caller's words
        speech_anchors(np.zeros(VAD_PARAMS.sample_rate // 10, dtype="<i2"))

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
