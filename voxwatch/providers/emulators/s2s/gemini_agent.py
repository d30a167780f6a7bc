"""The Gemini Live emulator's scripted voice agent (a ConversationScript): multi-turn sessions with
function calls, as the Live API documents them (voxwatch/providers/s2s/gemini_agent.py has the facts).

- A turn is `activityStart`, audio, `activityEnd`; turn k of the conversation (the turns ended in
  this session plus the user turns with text replayed by `clientContent`) answers with
  `serverContent.inputTranscription` (what the script says was heard, when the setup asked for
  `inputAudioTranscription`), then `toolCall {functionCalls: [{id, name, args}]}` when the turn
  makes calls, and, once a `toolResponse` has answered every call, the reply: audio parts from
  `response_ms` after the caller's speech end (anchored on the turn's first audio chunk), the
  `outputTranscription` of the reply, `generationComplete`, `turnComplete`, and a
  `sessionResumptionUpdate` when the setup asked for `sessionResumption`. With `heard_after_reply`
  the `inputTranscription` comes instead HEARD_LATE_S after `turnComplete`, a word a message; with
  `turn_complete_after_call` a `turnComplete` follows the `toolCall` at once.
- `session_expires_s`: a `goAway` with the time left GO_AWAY_LEAD_S before, then the connection is
  closed with 1011 "Deadline expired before operation could complete." (what a Live session's end
  was reported to look like: discuss.ai.google.dev, "Live sessions are closed at exactly 58:00 with
  1011"). `drop_on_turn`: that turn's reply is cut off by a dropped connection after two chunks.

What the agent received is noted in the ledger (`ledger.saw`): "tool_output", "history", "turn".
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
import uuid

import websockets

from voxwatch.foundation.clock import sleep_until

from voxwatch.providers.emulators.faults import drop
from voxwatch.providers.emulators.s2s.gemini import BAD_REQUEST, RATE, _field, _message
from voxwatch.providers.emulators.ledger import record, saw
from voxwatch.providers.emulators.scenario import ConversationScript, ScriptedTurn

GO_AWAY_LEAD_S = 0.5
HEARD_LATE_S = 0.1  # heard_after_reply: the transcription this long after the reply's turnComplete
EXPIRED = "Deadline expired before operation could complete."


class ScriptedGeminiAgent:
    """One Live session of the scripted agent."""

    def __init__(self, emulator, ws) -> None:
        self.emulator, self.ws = emulator, ws
        self.script: ConversationScript = emulator.scenario
        self.replayed = 0  # user turns replayed into this session
        self.taken = 0  # caller turns ended in this session
        self.first: bytes | None = None  # the current turn's first audio chunk, and its arrival
        self.t0: int | None = None
        self.answered = asyncio.Event()
        self.pending: set[str] = set()
        self.setup: dict = {}
        self.tasks: list[asyncio.Task] = []

    async def run(self) -> None:
        try:
            setup = await self.emulator.accept(self.ws)
            if setup is None:
                return
            self.setup = setup
            if self.script.session_expires_s is not None:
                self.tasks.append(asyncio.create_task(self.expire(time.perf_counter_ns())))
            async for message in self.ws:
                arrived = time.perf_counter_ns()
                try:
                    data = json.loads(message)
                except ValueError:
                    await self.ws.close(1007, BAD_REQUEST)
                    return
                await self.on(data, arrived)
        except websockets.ConnectionClosed:
            pass  # the client went away; nothing is owed to it
        finally:
            for task in self.tasks:
                task.cancel()

    async def expire(self, opened: int) -> None:
        s = self.script
        lead = min(GO_AWAY_LEAD_S, s.session_expires_s / 2)
        await sleep_until(opened + int((s.session_expires_s - lead) * 1e9))
        await self.ws.send(_message({"goAway": {"timeLeft": f"{lead:g}s"}}))
        await sleep_until(opened + int(s.session_expires_s * 1e9))
        await self.ws.close(1011, EXPIRED)

    async def on(self, data: dict, arrived: int) -> None:
        content = _field(data, "clientContent")
        if isinstance(content, dict):
            for turn in content.get("turns") or []:
                if turn.get("role") == "user" and any("text" in part for part in turn.get("parts") or []):
                    self.replayed += 1
                saw(self.emulator, "history", {"n": self.replayed + self.taken, "turn": turn})
        response = _field(data, "toolResponse")
        if isinstance(response, dict):
            for answer in _field(response, "functionResponses") or []:
                if answer.get("id") in self.pending:
                    self.pending.discard(answer["id"])
                    saw(self.emulator, "tool_output", {"id": answer["id"], "name": answer.get("name"),
                                                       "response": answer.get("response")})
            if not self.pending:
                self.answered.set()
        realtime = _field(data, "realtimeInput")
        if not isinstance(realtime, dict):
            return
        if _field(realtime, "activityStart") is not None:
            self.first, self.t0 = None, None
        audio = _field(realtime, "audio")
        if audio and self.first is None:
            self.first, self.t0 = base64.b64decode(audio["data"]), arrived
        if _field(realtime, "activityEnd") is not None:
            index = self.replayed + self.taken
            self.taken += 1
            saw(self.emulator, "turn", {"index": index, "replayed": self.replayed})
            self.tasks.append(asyncio.create_task(self.answer(index, self.script.turn_at(index), self.first or b"",
                                                              self.t0, arrived)))

    async def answer(self, index: int, turn: ScriptedTurn, first: bytes, t0: int | None, ended: int) -> None:
        if not self.script.heard_after_reply:
            await self.transcription(turn.heard)
        if turn.calls:
            calls = [{"id": f"call_{uuid.uuid4().hex[:12]}", "name": name, "args": args} for name, args in turn.calls]
            self.pending, self.answered = {c["id"] for c in calls}, asyncio.Event()
            await self.ws.send(_message({"toolCall": {"functionCalls": calls}}))
            if self.script.turn_complete_after_call:
                await self.ws.send(_message({"serverContent": {"turnComplete": True}}))
            await self.answered.wait()
        await self.speak(index, turn, first, t0, ended)
        if self.script.heard_after_reply:
            await asyncio.sleep(HEARD_LATE_S)
            for i, word in enumerate(turn.heard.split()):
                await self.transcription(word if i == 0 else f" {word}")

    async def transcription(self, text: str) -> None:
        """What the API heard the caller say (when the setup asked for `inputAudioTranscription`)."""
        if _field(self.setup, "inputAudioTranscription") is not None and text:
            await self.ws.send(_message({"serverContent": {"inputTranscription": {"text": text}}}))

    async def speak(self, index: int, turn: ScriptedTurn, first: bytes, t0: int | None, ended: int) -> None:
        s = self.script
        chunks, _ = self.emulator.agent_audio.get(turn.reply, RATE)
        start = s.reply_at(first, t0, ended)
        every = int(s.send_every_ms * 1e6)
        for i, data in enumerate(chunks):
            await sleep_until(start + i * every)
            if index == s.drop_on_turn and i == 2:
                await drop(self.ws)
                return
            if i == 0:
                record(self.emulator, f"turn{index}", "first_audio")
            message = {"modelTurn": {"role": "model", "parts": [
                {"inlineData": {"mimeType": f"audio/pcm;rate={RATE}", "data": data}}]}}
            if i == 0 and _field(self.setup, "outputAudioTranscription") is not None:
                message["outputTranscription"] = {"text": turn.reply}
            await self.ws.send(_message({"serverContent": message}))
        await self.ws.send(_message({"serverContent": {"generationComplete": True}}))
        await self.ws.send(_message({"serverContent": {"turnComplete": True}}))
        if _field(self.setup, "sessionResumption") is not None:
            await self.ws.send(_message({"sessionResumptionUpdate": {"newHandle": f"handle_{index}", "resumable": True}}))
