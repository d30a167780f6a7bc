"""The multi-turn voice-agent protocol (CONVERSATIONS.md): what the conversation runner needs from
a speech-to-speech session (OpenAI Realtime, Gemini Live) and from a cascade (STT -> chat LLM ->
TTS, or the local cascade), so that one runner drives them all.

A conversation is one session (or a chain of them, when a session is rotated) across many caller
turns. Per turn the runner hands the session a fresh Timeline, paces the caller's audio into it
(CHUNK_SENT), ends the caller's turn, and lets the session answer: the model's audio arrives as
AUDIO events (sample offsets continue within the turn), each function call as a TOOL_CALL event,
and the session calls the runner's tool handler for the result, sends it back (TOOL_RESULT) and
keeps listening until the model's spoken turn is complete. Adapters stamp; they compute nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Protocol, Sequence

from voxwatch.providers.events import Timeline

if TYPE_CHECKING:
    from voxwatch.conversations.scenario import Scenario

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
    cascade's LLM wrote them), its calls in order, and what the API heard the caller say."""

    transcript: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    caller_transcript: str | None = None


class ConversationSession(Protocol):
    def start_turn(self, timeline: Timeline) -> None:
        """Mark this turn's events on `timeline` from now on."""

    async def send_audio(self, pcm16: bytes) -> None:
        """Write one chunk of the caller's 16 kHz int16 PCM; return once it is written."""

    async def end_audio(self) -> None:
        """The caller's turn is over (commit the input where the API needs it)."""

    async def respond(self, tools: ToolHandler) -> ModelTurn:
        """Return once the model's spoken turn is complete, answering each function call through
        `tools` on the way; raise ProviderError on a failure of the vendor's."""

    async def aclose(self) -> None: ...


class ConversationStream(Protocol):
    async def converse(self, timeline: Timeline, setup: AgentSetup,
                       history: Sequence[HistoryItem] = ()) -> ConversationSession:
        """Open a session told `setup`, with `history` replayed into it (a rotation), connecting on
        `timeline`'s clock."""
