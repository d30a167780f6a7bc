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

from typing import Protocol, Sequence

from voxwatch.foundation.conversation import AgentSetup, HistoryItem, ModelTurn, ToolHandler
from voxwatch.foundation.events import Timeline
from voxwatch.providers.cascade_ids import PREFIX as CASCADE_PREFIX
from voxwatch.providers.registry import ModelInfo, Registry


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
    """A model's conversations. An adapter whose model calls tools voxwatch never sees (a deployed agent)
    says `unreported = (CALLS, ...)`: its end state is then its own backend's, never the simulated one's."""

    async def converse(self, timeline: Timeline, setup: AgentSetup,
                       history: Sequence[HistoryItem] = ()) -> ConversationSession:
        """Open a session told `setup`, with `history` replayed into it (a rotation), connecting on
        `timeline`'s clock."""


def conversation_refusal(registry: Registry, model: ModelInfo) -> str | None:
    """Why `model` cannot hold a conversation, in one line naming the models that can, or None (also
    when its adapter cannot be imported: making it reports that). Asked before anything is measured,
    by every path that starts a conversation."""
    if _adapter_converses(registry, model) is not False:
        return None
    able = sorted(m.id for m in registry.models.values()
                  if m.board == "s2s" and not registry.standing(m).retired and _adapter_converses(registry, m))
    return (f"{model.id} cannot hold a conversation (its adapter {model.adapter.rpartition(':')[2]} measures single "
            f"turns only); the models that can: {', '.join(able)}, or a {CASCADE_PREFIX}<stt id>+<llm>+<tts id> id")


def _adapter_converses(registry: Registry, model: ModelInfo) -> bool | None:
    """Whether the model's adapter speaks this protocol (some S2S adapters measure single turns only:
    a conversation with one would fail at its first session); None when it cannot be imported."""
    try:
        return callable(getattr(registry.adapter_class(model), "converse", None))
    except (ImportError, AttributeError):
        return None
