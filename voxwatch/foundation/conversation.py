"""The items of a multi-turn conversation (CONVERSATIONS.md) that the adapters mark, the runner keeps
and the scorers read: the event kinds a conversation adds to a Timeline, a tool call, what the
agent is told, an item of history, what the model did on a turn. Plain data, so that metrics/ can
score what providers/ recorded without either importing the other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable

if TYPE_CHECKING:
    from voxwatch.foundation.scenario import Scenario

TOOL_CALL = "tool_call"  # Event.text: the call as JSON {"call_id", "name", "arguments"}
TOOL_RESULT = "tool_result"  # Event.text: {"call_id", "output"} as JSON, marked when written
MODEL_TEXT = "model_text"  # Event.text: the model's words for the turn (its own transcript), once complete
CALLER_TEXT = "caller_text"  # Event.text: what the API heard the caller say, where it reports it
ROTATED = "rotated"  # a new session was opened and the history replayed; Event.text: why
RECONNECTED = "reconnected"  # the connection dropped and a new one was opened; Event.text: why


@dataclass(frozen=True)
class ToolCall:
    """One function call the model made: `arguments` parsed from the API's JSON, or the raw string
    under the key "_raw" when it was not valid JSON (scored as wrong arguments, never dropped)."""

    call_id: str
    name: str
    arguments: dict[str, Any]


ToolHandler = Callable[[ToolCall], Awaitable[Any]]
"""Answers a call from the scenario's script and simulated backend (the runner's); the result is
sent back to the model as the function's output (JSON)."""


@dataclass(frozen=True)
class AgentSetup:
    """What the model is told before the first turn: its instructions (the scenario's system
    prompt with the knowledge base), its tools (name, description, JSON-schema parameters), and
    the voice it answers in where the API offers a choice. `script`: the scenario itself, for the
    scripted baseline only (it follows the script; a model is never shown it). `thinking`: a
    reasoning effort, only where the vendor documents one (registry.toml [[preference_options]])."""

    instructions: str
    tools: tuple[dict[str, Any], ...] = ()
    voice: str | None = None
    script: Scenario | None = None
    thinking: str | None = None


@dataclass(frozen=True)
class HistoryItem:
    """One item of a conversation so far, replayed into a new session on rotation: a caller or
    model utterance (`text`), or a function call with its output."""

    role: str  # "user", "assistant", "tool"
    text: str = ""
    call: ToolCall | None = None
    output: Any = None


@dataclass
class ModelTurn:
    """What the model did on one turn: its words (as its API transcribes its own audio, or as the
    cascade's LLM wrote them), its calls in order, and what the API heard the caller say.
    `unreported`: what the session cannot see (CALLS, WORDS: a deployed agent behind an audio-only
    transport), so the scores that need it are null with the reason, never failed."""

    transcript: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    caller_transcript: str | None = None
    unreported: tuple[str, ...] = ()


CALLS = "calls"  # ModelTurn.unreported: the agent's function calls are not reported to voxwatch
WORDS = "words"  # ModelTurn.unreported: the agent's own transcript of its words is not reported
