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
