"""What the speech-to-speech conversation sessions (OpenAI Realtime, Gemini Live) share per turn:
parsing a function call, marking it and its result on the turn's timeline, answering it through
the runner's handler (one `respond` loop, AgentTurns), collecting the turn's words, and knowing
when the session must be rotated.

Kept apart from the vendor adapters so both mark TOOL_CALL / TOOL_RESULT / MODEL_TEXT /
CALLER_TEXT identically: the scoring reads these events the same way for every vendor.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any, Sequence

from voxwatch.providers.base import ProviderError
from voxwatch.foundation.conversation import (CALLER_TEXT, MODEL_TEXT, TOOL_CALL, TOOL_RESULT, HistoryItem, ModelTurn,
                                              ToolCall, ToolHandler)
from voxwatch.foundation.events import CLOSED, Timeline

ROTATION_MARGIN_S = 120.0
"""Rotate this long before a documented session limit: a turn (the caller's audio, the tool round
trips, the reply) must never run into the limit."""


def parse_call(call_id: str, name: str, arguments: Any) -> ToolCall:
    """A call as the API sent it: `arguments` a JSON string (OpenAI) or an object (Gemini). Invalid
    JSON, or JSON that is not an object, is kept raw under "_raw" (scored as wrong arguments)."""
    if isinstance(arguments, dict):
        return ToolCall(str(call_id), str(name), arguments)
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) and arguments.strip() else {}
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        return ToolCall(str(call_id), str(name), {"_raw": arguments})
    return ToolCall(str(call_id), str(name), parsed)


def output_json(output: Any) -> str:
    """A handler's result as the JSON text the APIs take as a function's output."""
    return json.dumps(output, separators=(",", ":"), default=str)


@dataclass
class TurnRecord:
    """One turn's marks and its ModelTurn, built as the session's reader sees the events."""

    timeline: Timeline
    turn: ModelTurn = field(default_factory=ModelTurn)

    def call(self, call: ToolCall, at: int | None) -> None:
        """A function call arrived (at `at`, its socket arrival stamp)."""
        self.turn.calls.append(call)
        self.timeline.mark(TOOL_CALL, at, text=json.dumps({"call_id": call.call_id, "name": call.name,
                                                           "arguments": call.arguments}, default=str))

    def written(self, call: ToolCall, output: Any) -> None:
        """The runner's result for `call` has been written to the API."""
        self.timeline.mark(TOOL_RESULT, text=json.dumps({"call_id": call.call_id, "output": output}, default=str))

    def heard(self, text: str, at: int | None) -> None:
        """What the API heard the caller say (its input transcription), once complete."""
        text = text.strip()
        self.turn.caller_transcript = f"{self.turn.caller_transcript} {text}".strip() \
            if self.turn.caller_transcript else text
        self.timeline.mark(CALLER_TEXT, at, text=text)

    def said(self, text: str) -> None:
        """Append the model's own transcript of its speech."""
        if text:
            self.turn.transcript += text

    def complete(self, at: int | None) -> ModelTurn:
        """The model's spoken turn is over: mark its words once, whole."""
        self.turn.transcript = " ".join(self.turn.transcript.split())
        self.timeline.mark(MODEL_TEXT, at, text=self.turn.transcript)
        return self.turn


class Rotation:
    """When a session must be rotated (a new one opened with the history replayed): before the
    vendor's documented session limit (`limit_s`, from the registry), or once the server has said
    it will end the session (Gemini's goAway). `due()` is asked by the runner between turns."""

    def __init__(self, timeline: Timeline, limit_s: float | None, margin_s: float = ROTATION_MARGIN_S) -> None:
        self._clock = timeline.clock
        self._deadline = None if limit_s is None else timeline.clock() + int(max(limit_s - margin_s, 0) * 1e9)
        self._limit_s = limit_s
        self._announced: str | None = None

    def announce(self, why: str) -> None:
        """The server announced the end of the session."""
        self._announced = self._announced or why

    def due(self) -> str | None:
        """Why the session must be rotated before the next turn, or None."""
        if self._announced is not None:
            return self._announced
        if self._deadline is not None and self._clock() >= self._deadline:
            return f"the session limit of {self._limit_s:g} s is near"
        return None


_END = ("end", None, None)


class AgentTurns:
    """The turn loop of a conversation session, whatever the vendor: its reader task reports what
    ends or advances a turn (`_turn_calls`, `_turn_done`, `_turn_failed`, `_session_ended`) and
    `respond` answers the calls through the runner's handler until the turn is done. The vendor's
    session (mixed in before its ReaderSession) writes the answers (`_answer`) and names the error
    of a session that ended (`_end_error`)."""

    timeline: Timeline

    def _init_turns(self, timeline: Timeline, limit_s: float | None) -> None:
        """Call before the ReaderSession's __init__ (its reader reports into this state)."""
        self.timeline = timeline
        self._queue: asyncio.Queue = asyncio.Queue()  # ("calls" | "done" | "failed" | "end", payload, at)
        self._record = TurnRecord(timeline)
        self._offset = 0  # the turn's reply audio, in samples so far
        self.rotation = Rotation(timeline, limit_s)

    async def opened(self, history: Sequence[HistoryItem]) -> "AgentTurns":
        """This fresh session with `history` replayed into it (a rotation); closed if that fails."""
        try:
            await self.replay(history)
        except ProviderError:
            await self.aclose()
            raise
        return self

    async def replay(self, history: Sequence[HistoryItem]) -> None:
        """Write `history` into the session (the vendor's items); `aclose` is its ReaderSession's."""
        raise NotImplementedError

    def rotation_due(self) -> str | None:
        """Why this session must be replaced before the next turn (a server's announced end, or its
        limit is near), or None."""
        return self.rotation.due()

    def start_turn(self, timeline: Timeline) -> None:
        self.timeline, self._record, self._offset = timeline, TurnRecord(timeline), 0

    def _turn_calls(self, calls: list[ToolCall], at: int) -> None:
        """The model waits for these calls' results (each already marked with `_record.call`)."""
        self._queue.put_nowait(("calls", calls, at))

    def _turn_done(self, at: int) -> None:
        self._queue.put_nowait(("done", None, at))

    def _turn_failed(self, error: ProviderError, at: int | None) -> None:
        self._queue.put_nowait(("failed", error, at))

    def _session_ended(self) -> None:
        """The reader has ended: the turn under way, and every later one, fails with `_end_error`."""
        self._queue.put_nowait(_END)

    async def respond(self, tools: ToolHandler) -> ModelTurn:
        while True:
            kind, payload, at = await self._queue.get()
            if kind == "done":
                self.timeline.mark(CLOSED, at)
                return self._record.complete(at)
            if kind == "failed":
                raise payload
            if kind == "end":
                self._queue.put_nowait(_END)  # every later turn fails the same way
                raise self._end_error()
            outputs = [(call, await tools(call)) for call in payload]
            await self._answer(outputs)
            for call, output in outputs:
                self._record.written(call, output)

    async def _answer(self, outputs: list[tuple[ToolCall, Any]]) -> None:
        """Write the runner's results of the calls the model made (in the vendor's messages)."""
        raise NotImplementedError

    def _end_error(self) -> ProviderError:
        """Why the session ended before the turn was complete."""
        raise NotImplementedError
