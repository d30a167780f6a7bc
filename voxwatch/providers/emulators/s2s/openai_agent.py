"""The OpenAI Realtime emulator's scripted voice agent (a ConversationScript): multi-turn sessions
with function calls, as the GA interface documents them.

- `session.update` may carry `instructions`, `tools` and `audio.input.transcription`; with a
  transcription model set, each committed turn gets
  `conversation.item.input_audio_transcription.completed` with what the script says was heard (after
  the commit, or HEARD_LATE_S after the reply with `heard_after_reply`).
- `conversation.item.create` (answered by `conversation.item.added`): a `function_call_output` for
  a call the agent made is taken as its output; any other item (user / assistant messages,
  `function_call` and its output) is replayed history, and each replayed user message counts as a
  caller turn already taken, so a rotated session continues at the right turn.
- The turn's first `response.create` (after the commit) answers with the turn's function calls:
  `response.output_item.added`, `response.function_call_arguments.delta` / `.done`,
  `response.output_item.done` (item type `function_call`: `call_id`, `name`, `arguments` as a JSON
  string) and `response.done`. Once every call has its output, the next `response.create` speaks the
  reply: `response.output_audio.delta` chunks from `response_ms` after the caller's speech end,
  `response.output_audio_transcript.delta` / `.done`, `response.done`.
- `session_expires_s`: at that age the session gets the time limit's `error` (code
  `session_expired`) and is closed with 1001, as the service does (openai.py). `drop_on_turn`: the
  reply of that turn is cut off by a dropped connection after two chunks.

What the agent received is noted in the ledger (`ledger.saw`): "tool_output", "history", "turn".
"""

from __future__ import annotations

import asyncio
import json
import time

from voxwatch.foundation.clock import sleep_until

from voxwatch.providers.emulators.faults import drop
from voxwatch.providers.emulators.ledger import record, saw
from voxwatch.providers.emulators.s2s.openai import RATE, SESSION_EXPIRED, _Conversation, _id
from voxwatch.providers.emulators.scenario import ConversationScript, ScriptedTurn

HEARD_LATE_S = 0.1  # heard_after_reply: the transcription this long after the reply's response.done


class ScriptedConversation(_Conversation):
    """One Realtime session of the scripted agent."""

    def __init__(self, ws, script: ConversationScript, emulator, model: str, cache) -> None:
        super().__init__(ws, script, emulator, model, cache)
        self.script = script
        self.opened = time.perf_counter_ns()
        self.replayed = 0  # user messages replayed into this session
        self.taken = 0  # caller turns committed in this session
        self.turn: ScriptedTurn | None = None
        self.turn_first, self.turn_t0 = b"", None
        self.pending: set[str] = set()  # call_ids of the turn still waiting for their output
        self.called = False  # the turn's calls have been made
        self.transcribe = False
        self.input_item = ""  # the current turn's committed input item
        if script.session_expires_s is not None:
            self.tasks.append(asyncio.create_task(self._expire()))

    async def _expire(self) -> None:
        await sleep_until(self.opened + int(self.script.session_expires_s * 1e9))
        await self.error(SESSION_EXPIRED, "session_expired")
        await self.ws.close(code=1001, reason=SESSION_EXPIRED)

    async def handle(self, kind: str, event: dict, arrived: int) -> bool:
        if kind == "session.update":
            transcription = (((event.get("session") or {}).get("audio") or {}).get("input") or {}).get("transcription")
            self.transcribe = bool((transcription or {}).get("model"))
        elif kind == "conversation.item.create":
            await self.item(event)
            return False
        return await super().handle(kind, event, arrived)

    async def item(self, event: dict) -> None:
        item = dict(event.get("item") or {})
        item.setdefault("id", _id("item"))
        if item.get("type") == "function_call_output" and item.get("call_id") in self.pending:
            self.pending.discard(item["call_id"])
            saw(self.emulator, "tool_output", {"call_id": item["call_id"], "output": item.get("output")})
        else:
            if item.get("type") == "message" and item.get("role") == "user":
                self.replayed += 1
            saw(self.emulator, "history", {"n": self.replayed + self.taken, "item": item})
        await self.send({"type": "conversation.item.added", "previous_item_id": self.last_item, "item": item})
        self.last_item = item["id"]

    async def committed(self, item: str, arrived: int, n_bytes: int) -> None:
        """A caller turn is over: which turn of the script it is, and (if enabled) what was heard."""
        index = self.replayed + self.taken
        self.taken += 1
        self.turn, self.called, self.pending = self.script.turn_at(index), False, set()
        self.turn_first, self.turn_t0, self.t0 = self.first, self.t0, None  # the next turn has its own clock
        saw(self.emulator, "turn", {"index": index, "replayed": self.replayed})
        self.input_item = item
        if not self.script.heard_after_reply:
            await self.transcription()

    async def transcription(self) -> None:
        """What the API heard the caller say in the turn's committed input (when transcription is on)."""
        if self.transcribe:
            await self.send({"type": "conversation.item.input_audio_transcription.completed",
                             "item_id": self.input_item, "content_index": 0, "transcript": self.turn.heard})

    async def respond(self, arrived: int, event: dict) -> None:
        turn = self.turn
        if turn is None:
            await self.error("no committed turn to respond to", "invalid_request", event)
            return
        response = _id("resp")
        await self.send({"type": "response.created", "response": {
            "object": "realtime.response", "id": response, "status": "in_progress", "output": []}})
        if turn.calls and not self.called:
            self.called = True
            await self.call(response, turn)
        elif self.pending:
            await self.error("the function calls have no output yet", "invalid_request", event)
        else:
            self.tasks.append(asyncio.create_task(self.speak(response, turn, arrived)))

    async def call(self, response: str, turn: ScriptedTurn) -> None:
        output = []
        for index, (name, args) in enumerate(turn.calls):
            arguments = json.dumps(args)
            item = {"id": _id("item"), "object": "realtime.item", "type": "function_call", "status": "in_progress",
                    "call_id": _id("call"), "name": name, "arguments": ""}
            ids = {"response_id": response, "item_id": item["id"], "output_index": index}
            await self.send({"type": "response.output_item.added", "response_id": response, "output_index": index,
                             "item": item})
            await self.send({"type": "response.function_call_arguments.delta", **ids, "call_id": item["call_id"],
                             "delta": arguments})
            await self.send({"type": "response.function_call_arguments.done", **ids, "call_id": item["call_id"],
                             "name": name, "arguments": arguments})
            item = {**item, "status": "completed", "arguments": arguments}
            await self.send({"type": "response.output_item.done", "response_id": response, "output_index": index,
                             "item": item})
            self.pending.add(item["call_id"])
            output.append(item)
        await self.send({"type": "response.done", "response": {
            "object": "realtime.response", "id": response, "status": "completed", "status_details": None,
            "output": output}})

    async def speak(self, response: str, turn: ScriptedTurn, requested_at: int) -> None:
        s = self.script
        chunks, _ = self.audio.get(turn.reply, RATE)
        start = s.reply_at(self.turn_first, self.turn_t0, requested_at)
        every = int(s.send_every_ms * 1e6)
        item = _id("item")
        ids = {"response_id": response, "item_id": item, "output_index": 0, "content_index": 0}
        cut = self.replayed + self.taken - 1 == s.drop_on_turn
        for i, data in enumerate(chunks):
            await sleep_until(start + i * every)
            if cut and i == 2:
                await drop(self.ws)
                return
            if i == 0:
                record(self.emulator, f"turn{self.replayed + self.taken - 1}", "first_audio")
                await self.send({"type": "response.output_audio_transcript.delta", **ids, "delta": turn.reply})
            await self.send({"type": "response.output_audio.delta", **ids, "delta": data})
        await self.send({"type": "response.output_audio.done", **ids})
        await self.send({"type": "response.output_audio_transcript.done", **ids, "transcript": turn.reply})
        await self.send({"type": "response.done", "response": {
            "object": "realtime.response", "id": response, "status": "completed", "status_details": None,
            "output": [{"id": item, "type": "message", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_audio", "transcript": turn.reply}]}]}})
        if s.heard_after_reply:
            await asyncio.sleep(HEARD_LATE_S)
            await self.transcription()
