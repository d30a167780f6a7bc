"""OpenAI Realtime as a multi-turn voice agent (voxwatch/providers/conversation.py's ConversationSession).

Protocol facts (GA interface; the `realtime` client and server events of the API reference and
openai-python src/openai/types/realtime/):
- `session.update` carries `instructions`, `tools` ([{type: "function", name, description,
  parameters}]) and `tool_choice: "auto"`; server VAD stays off as in the single-turn adapter, so a
  caller turn ends with `input_audio_buffer.commit` + `response.create`. With
  `audio.input.transcription.model` set, what the API heard comes as
  `conversation.item.input_audio_transcription.completed`, transcribed asynchronously (it may come
  after the reply): its `item_id`, named by `input_audio_buffer.committed`, says which turn it is.
- A function call is an output item of type `function_call` (`call_id`, `name`, `arguments`: a JSON
  string), streamed by `response.function_call_arguments.delta` / `.done` and complete at
  `response.output_item.done`; that response ends with `response.done` and the model says nothing
  more until the client answers: `conversation.item.create` with {type: "function_call_output",
  call_id, output: JSON string}, then `response.create`. So a response that only calls tools is not
  the end of the turn; the turn ends with a `response.done` that made no call.
- The model's words: `response.output_audio_transcript.delta` / `.done`.
- History on rotation: `conversation.item.create` per item: user messages (`input_text`), assistant
  messages (`output_text`), `function_call` items and their `function_call_output`.
- Sessions last at most 60 minutes (the registry's `session_limit_s`), then the server sends an
  `error` with code `session_expired` and closes with 1001 (openai_realtime.py): the session asks to
  be rotated ROTATION_MARGIN_S before that (`rotation_due`).
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from voxwatch.providers.session.agent_turn import AgentTurns, TurnRecord, output_json, parse_call
from voxwatch.providers.base import ProviderError
from voxwatch.providers.session.close_codes import closed
from voxwatch.foundation.conversation import AgentSetup, HistoryItem, ToolCall
from voxwatch.foundation.events import Timeline
from voxwatch.providers.stt.openai_batch import VENDOR
from voxwatch.providers.s2s.openai_realtime import (AUDIO_DELTAS, DEFAULT_VOICE, PCM_24K, TRANSCRIPT_DONE,
                                                   RealtimeConversation, Upsampler, _unfinished, mark_audio_delta)

CALLER_TRANSCRIPTION = "gpt-4o-transcribe"  # what the API heard the caller say (CALLER_TEXT)


def session_config(setup: AgentSetup, voice: str | None) -> dict:
    """The `session.update` of a conversation: the agent's instructions and tools, manual turns, and
    the reasoning effort (`reasoning.effort`) when the setup names one."""
    config: dict[str, Any] = {
        "type": "realtime", "output_modalities": ["audio"], "instructions": setup.instructions,
        "tools": [{"type": "function", "name": t["name"], "description": t.get("description", ""),
                   "parameters": t.get("parameters") or {"type": "object", "properties": {}}} for t in setup.tools],
        "tool_choice": "auto",
        "audio": {"input": {"format": PCM_24K, "turn_detection": None,
                            "transcription": {"model": CALLER_TRANSCRIPTION}},
                  "output": {"format": PCM_24K, "voice": setup.voice or voice or DEFAULT_VOICE}}}
    if setup.thinking is not None:
        config["reasoning"] = {"effort": setup.thinking}
    return config


def history_items(history: Sequence[HistoryItem]) -> list[dict]:
    """The conversation so far as Realtime conversation items, in order."""
    items: list[dict] = []
    for h in history:
        if h.call is not None:
            items.append({"type": "function_call", "call_id": h.call.call_id, "name": h.call.name,
                          "arguments": json.dumps(h.call.arguments)})
            items.append({"type": "function_call_output", "call_id": h.call.call_id, "output": output_json(h.output)})
        elif h.role == "user":
            items.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": h.text}]})
        elif h.role == "assistant":
            items.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": h.text}]})
    return items


class RealtimeAgentSession(AgentTurns, RealtimeConversation):
    """One Realtime session across many caller turns (each ended as RealtimeConversation ends its
    one); `start_turn` moves it to the next turn's timeline."""

    def __init__(self, ws, timeline: Timeline, limit_s: float | None) -> None:
        self._init_turns(timeline, limit_s)
        self._calls: list[ToolCall] = []  # the current response's calls
        self._said = ""  # the current response's transcript
        self._turn_of: dict[str, TurnRecord] = {}  # committed input item id -> its turn
        super().__init__(ws, timeline)

    def start_turn(self, timeline: Timeline) -> None:
        super().start_turn(timeline)
        self._upsampler = Upsampler()  # each turn's input buffer starts afresh

    async def replay(self, history: Sequence[HistoryItem]) -> None:
        for item in history_items(history):
            await self._create(item)

    async def _create(self, item: dict) -> None:
        """`conversation.item.create`, with an event_id an error about it will name."""
        self._requests.add("voxwatch_conversation_item_create")
        await self._send({"event_id": "voxwatch_conversation_item_create", "type": "conversation.item.create",
                          "item": item})

    def _reader_ended(self) -> None:
        super()._reader_ended()
        self._session_ended()

    def _on(self, kind: str, data: dict, at: int) -> bool:
        if kind in AUDIO_DELTAS:
            self._offset = mark_audio_delta(self.timeline, data, at, self._offset)
        elif kind == "response.output_audio_transcript.delta":
            self._said += str(data.get("delta") or "")
        elif kind == "response.output_audio_transcript.done":
            self._said = str(data.get("transcript") or self._said)
        elif kind == "input_audio_buffer.committed":
            self._turn_of[str(data.get("item_id"))] = self._record
        elif kind == TRANSCRIPT_DONE:  # it may come after the turn is over: it goes to the turn it transcribes
            record = self._turn_of.pop(str(data.get("item_id")), self._record)
            record.heard(str(data.get("transcript") or ""), at)
        elif kind == "response.output_item.done" and (data.get("item") or {}).get("type") == "function_call":
            item = data["item"]
            call = parse_call(item["call_id"], item["name"], item.get("arguments"))
            self._record.call(call, at)
            self._calls.append(call)
        elif kind == "response.done":
            self._response_done(data["response"], at)
        return False

    def _response_done(self, response: dict, at: int) -> None:
        """A response that made calls waits for their outputs; one that made none ends the turn."""
        said, calls, self._said, self._calls = self._said, self._calls, "", []
        self._record.said(said + " " if said else "")
        if response.get("status") != "completed":
            self._turn_failed(_unfinished(response), at)
        elif calls:
            self._turn_calls(calls, at)
        else:
            self._turn_done(at)

    async def _answer(self, outputs: list[tuple[ToolCall, Any]]) -> None:
        """Each output as a `function_call_output` item, then `response.create` for the model's next words."""
        for call, output in outputs:
            await self._create({"type": "function_call_output", "call_id": call.call_id, "output": output_json(output)})
        await self._request("response.create")

    def _end_error(self) -> ProviderError:
        return self._error or closed(VENDOR, self.ws.close_code, "before the turn was complete")

