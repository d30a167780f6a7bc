"""A cascade: any registered STT, any chat model and any registered TTS, as one voice agent.

Per caller turn the caller's audio goes to the STT (a streaming one as it is paced in; a batch
one whole, once the turn ends), its transcript is appended to the chat history (marked
CALLER_TEXT), and the chat model is called with the scenario's tools. Each call goes through the
runner's tool handler (TOOL_CALL, TOOL_RESULT) and the model is called again with the outputs until
it answers in words; whatever words it writes are spoken by the TTS, whose AUDIO is the model's
audio on the turn's timeline (sample offsets continuing across the turn's utterances), and the
turn's words are marked MODEL_TEXT once complete. The chat history is the whole state, so a
rotation's replay is that history and nothing else.

Each component keeps its own events on a timeline of its own (`CascadeSession.stages`, on the
same clock), so the turn's timeline holds only what the conversation protocol defines: an STT's
FINAL or a TTS's REQUEST_SENT never passes for the agent's. The chat model's first token is
marked on the turn (LLM_FIRST_TOKEN) for the stage breakdown.

The voice is the TTS component's (its registry voice): `AgentSetup.voice` names a speech-to-speech
API's voices, which a TTS engine does not have.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, Sequence

from voxwatch.providers.base import ProviderError
from voxwatch.providers.cascade_ids import SCRIPTED, CascadeInfo
from voxwatch.providers.s2s.chat_completions import (DEFAULT_URLS, ChatClient, ChatReply, call_message, endpoint_for,
                                                    history_messages, output_message)
from voxwatch.foundation.conversation import (CALLER_TEXT, MODEL_TEXT, TOOL_CALL, TOOL_RESULT, AgentSetup,
                                              HistoryItem, ModelTurn, ToolHandler)
from voxwatch.providers.session.endpoints import base_url, is_loopback
from voxwatch.foundation.events import AUDIO, CLOSED, FINAL, REQUEST_SENT, Timeline
from voxwatch.providers.registry import ModelInfo, Registry
from voxwatch.providers.s2s.scripted_responder import ScriptedResponder

LLM_FIRST_TOKEN = "llm_first_token"  # on the turn's timeline: each chat completion's first token
MAX_TOOL_ROUNDS = 8  # a model still calling tools after this many rounds ends its turn unanswered
SAMPLE_RATE = 16000  # the caller's audio (the conversation protocol's)
SINGLE_TURN_INSTRUCTIONS = "You are a helpful voice assistant. Answer briefly."


class _Relay(Timeline):
    """A component's own timeline whose AUDIO also goes onto the turn's, offsets continued from `base`."""

    def __init__(self, clock, target: Timeline | None = None, base: int = 0) -> None:
        super().__init__(clock)
        self.target, self.base, self.samples = target, base, 0

    def mark(self, kind: str, at_ns: int | None = None, **data):
        event = super().mark(kind, at_ns, **data)
        if kind == AUDIO and self.target is not None:
            offset = data.get("sample_offset") or 0
            self.target.mark(AUDIO, at_ns=event.t_ns, **{**data, "sample_offset": self.base + offset})
            self.samples = max(self.samples, offset + (data.get("n_samples") or 0))
        return event


@dataclass(frozen=True)
class Parts:
    """A cascade's adapters: the STT's (streaming or batch) and the TTS's, with their registry entries."""

    stt_model: ModelInfo
    stt: Any
    llm: str  # "<vendor>/<model>" of a chat endpoint, or SCRIPTED
    tts_model: ModelInfo
    tts: Any

    @property
    def streaming(self) -> bool:
        return self.stt_model.protocol == "stt-stream"


class Cascade:
    """The adapter of a `cascade/<stt>+<llm>+<tts>` id (cascade_ids.py): a ConversationStream, and an
    S2SStream for the single-turn board (one turn, no tools)."""

    sample_rate = SAMPLE_RATE

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        if not isinstance(model, CascadeInfo):
            raise ValueError(f"{model.id} is not a cascade id")
        self.parts = _parts(model.stt, model.llm, model.tts)
        self._chat: ChatClient | None = None

    @property
    def emulator(self) -> bool:
        """Any part served by a loopback emulator makes the whole cascade's rows emulator rows."""
        chat_url = None
        if self.parts.llm != SCRIPTED:
            vendor = self.parts.llm.split("/", 1)[0]
            chat_url = base_url(vendor, DEFAULT_URLS.get(vendor, ""))
        return (bool(getattr(self.parts.stt, "emulator", False)) or bool(getattr(self.parts.tts, "emulator", False))
                or (bool(chat_url) and is_loopback(chat_url)))

    def _responder(self, setup: AgentSetup):
        if self.parts.llm == SCRIPTED:
            return ScriptedResponder(setup.script)
        if self._chat is None:
            vendor, model = self.parts.llm.split("/", 1)
            self._chat = ChatClient(endpoint_for(vendor, model))
        return self._chat

    async def converse(self, timeline: Timeline, setup: AgentSetup,
                       history: Sequence[HistoryItem] = ()) -> "CascadeSession":
        llm = await self._responder(setup).connect()
        session = CascadeSession(self.parts, llm, setup, history, timeline.clock)
        await session.open()
        return session

    async def connect(self, timeline: Timeline) -> "SingleTurn":
        session = await self.converse(timeline, AgentSetup(SINGLE_TURN_INSTRUCTIONS))
        session.start_turn(timeline)
        return SingleTurn(session)

    def close(self) -> None:
        """Called once a run ends: the components' own resources (a decoder process, a sync client)."""
        for adapter in (self.parts.stt, self.parts.tts):
            closing = getattr(adapter, "close", None)
            if closing is not None:
                closing()


def _parts(stt: ModelInfo, llm: str, tts: ModelInfo) -> Parts:
    if stt.protocol not in ("stt-stream", "stt-batch") or tts.protocol != "tts-stream":
        raise ValueError(f"a cascade is an STT, a chat model and a TTS; got {stt.id} ({stt.protocol}), "
                         f"{tts.id} ({tts.protocol})")
    factory = Registry([], [])
    return Parts(stt, factory.create(stt), llm, tts, factory.create(tts))


class LocalScriptedCascade(Cascade):
    """The no-key local cascade: whisper tiny.en -> the scripted baseline -> eSpeak NG (registry:
    local/cascade-scripted-baseline). A scripted baseline, not a language model."""

    STT = "faster-whisper/tiny.en@1.2.1"
    TTS = "espeak-ng/en-us@1.52.0"

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        registry = Registry.default()
        self.parts = _parts(registry.resolve(self.STT), SCRIPTED, registry.resolve(self.TTS))
        self._chat = None


class CascadeSession:
    """One conversation: the chat history, the turn being answered, and the components' timelines."""

    def __init__(self, parts: Parts, llm, setup: AgentSetup, history: Sequence[HistoryItem], clock) -> None:
        self.parts, self.llm, self.clock = parts, llm, clock
        self.tools = tuple(setup.tools)
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": setup.instructions}]
        self.messages += history_messages(history)
        self.stages: list[tuple[str, Timeline]] = []  # (component, its timeline), in order, every turn
        self._turn: Timeline | None = None
        self._stt = None  # the batch client, or the streaming session prepared for the next turn
        self._pcm = bytearray()

    def _stage(self, name: str, target: Timeline | None = None, base: int = 0) -> _Relay:
        stage = _Relay(self.clock, target, base)
        self.stages.append((name, stage))
        return stage

    async def open(self) -> None:
        """Warm the components before the first turn (the STT's stream for it, or its client)."""
        self._stt = await self.parts.stt.connect(self._stage("stt"))
        warm = await self.parts.tts.connect(self._stage("tts"), self.parts.tts_model.voice)
        await warm.aclose()

    def start_turn(self, timeline: Timeline) -> None:
        self._turn, self._pcm = timeline, bytearray()

    async def send_audio(self, pcm16: bytes) -> None:
        if self.parts.streaming:
            await self._stt.send_audio(pcm16)
        else:
            self._pcm += pcm16

    async def end_audio(self) -> None:
        self._turn.mark(REQUEST_SENT)
        if self.parts.streaming:
            await self._stt.end_audio()

    async def _hear(self) -> str:
        """The caller's words, as the STT heard them; marked CALLER_TEXT at the STT's final."""
        if self.parts.streaming:
            stage = next(t for name, t in reversed(self.stages) if name == "stt")
            stream, self._stt = self._stt, None
            try:
                await stream.wait_final()
            finally:
                await stream.aclose()
        else:
            stage = self._stage("stt")
            await self._stt.transcribe(bytes(self._pcm), stage)
        final = next((e for e in reversed(stage.events) if e.kind == FINAL), None)
        text = (final.text or "").strip() if final is not None else ""
        self._turn.mark(CALLER_TEXT, at_ns=final.t_ns if final is not None else None, text=text)
        return text

    async def respond(self, tools: ToolHandler) -> ModelTurn:
        turn = self._turn
        heard = await self._hear()
        self.messages.append({"role": "user", "content": heard})
        spoken: list[str] = []
        calls = []
        speaking: asyncio.Task | None = None
        try:
            for _ in range(MAX_TOOL_ROUNDS + 1):
                reply: ChatReply = await self.llm.complete(self.messages, self.tools, self._stage("llm"))
                if reply.first_token_ns is not None:
                    turn.mark(LLM_FIRST_TOKEN, at_ns=reply.first_token_ns)
                if reply.text.strip():
                    spoken.append(reply.text.strip())
                    speaking = asyncio.create_task(self._speak(reply.text.strip(), turn, speaking))
                if not reply.calls:
                    self.messages.append({"role": "assistant", "content": reply.text})
                    break
                self.messages.append(call_message(reply.calls, reply.text))
                for call in reply.calls:
                    turn.mark(TOOL_CALL, text=json.dumps({"call_id": call.call_id, "name": call.name,
                                                          "arguments": call.arguments}))
                    output = await tools(call)
                    self.messages.append(output_message(call.call_id, output))
                    turn.mark(TOOL_RESULT, text=json.dumps({"call_id": call.call_id, "output": output}, default=str))
                    calls.append(call)
            if speaking is not None:
                await speaking
        finally:
            if speaking is not None and not speaking.done():
                speaking.cancel()
        words = " ".join(spoken)
        turn.mark(MODEL_TEXT, text=words)
        turn.mark(CLOSED)
        if self.parts.streaming:  # the next turn's stream, opened off the caller's clock
            self._stt = await self.parts.stt.connect(self._stage("stt"))
        return ModelTurn(words, calls, heard)

    async def _speak(self, text: str, turn: Timeline, before: asyncio.Task | None) -> None:
        """Speak one utterance after the one before it, its audio continuing the turn's offsets."""
        if before is not None:
            await before
        base = sum(e.n_samples or 0 for e in turn.of(AUDIO))
        stage = self._stage("tts", turn, base)
        session = await self.parts.tts.connect(stage, self.parts.tts_model.voice)
        try:
            await session.synthesize(text)
        finally:
            await session.aclose()

    async def aclose(self) -> None:
        if self.parts.streaming and self._stt is not None:
            await self._stt.aclose()
            self._stt = None


class SingleTurn:
    """A cascade on the single-turn S2S board (S2SSession): one turn, no tools."""

    def __init__(self, session: CascadeSession) -> None:
        self.session = session

    async def send_audio(self, pcm16: bytes) -> None:
        await self.session.send_audio(pcm16)

    async def end_audio(self) -> None:
        await self.session.end_audio()

    async def wait_response(self) -> None:
        await self.session.respond(_no_tools)

    async def aclose(self) -> None:
        await self.session.aclose()


async def _no_tools(call) -> Any:
    raise ProviderError(f"the model called {call.name!r} on a turn offered no tools", "malformed")
