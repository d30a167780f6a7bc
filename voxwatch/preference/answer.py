"""One configuration answering one prompt: a single-turn session through the conversation protocol.

Every adapter of the S2S conversation runner speaks it (OpenAI Realtime, Gemini Live, the cascades
and the no-key local cascade): the session is told the configuration's voice and thinking level,
the prompt's audio is paced in as one caller turn (trimmed 100 ms after its speech, as the runner
sends a turn; a degraded prompt ends where its clean source's words end), and the model's reply is
taken whole at its end-of-turn. The scripted baseline is given the prompt's scripted reply to say
(a baseline's script, never shown to a model).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from voxwatch.conversations.runner import caller_turn
from voxwatch.foundation.scenario import Scenario, Turn
from voxwatch.foundation.audio import CATALOG_RATE, read_pcm16
from voxwatch.metrics.timeline import collect_audio
from voxwatch.metrics.vad import speech_anchors
from voxwatch.providers.base import ProviderError
from voxwatch.providers.s2s.cascade import SINGLE_TURN_INSTRUCTIONS, Cascade
from voxwatch.foundation.conversation import CALLER_TEXT, MODEL_TEXT, TOOL_CALL, TOOL_RESULT, AgentSetup, ModelTurn
from voxwatch.foundation.events import AUDIO, CHUNK_SENT, Timeline
from voxwatch.providers.preference_configs import PreferenceConfig
from voxwatch.harness.pacer import paced_send

from voxwatch.preference.prompts import Prompt, PromptSet

SIDE_KINDS = (CALLER_TEXT, MODEL_TEXT, TOOL_CALL, TOOL_RESULT)
"""The text events kept as the output's side streams (never rated)."""


@dataclass
class Answer:
    timeline: Timeline
    turn: ModelTurn
    audio: np.ndarray  # the reply's samples, float in [-1, 1]
    sample_rate: int


def script_for(prompt: Prompt) -> Scenario | None:
    """A one-turn scenario whose reply is the prompt's scripted reply, for the scripted baseline."""
    if prompt.reply is None:
        return None
    turn = Turn(id=prompt.id, text=prompt.text, audio=prompt.audio, audio_sha256=prompt.sha256, reply=prompt.reply)
    return Scenario(name=f"prompt-{prompt.id}", version=1, domain=prompt.category, description=prompt.text,
                    system_prompt=SINGLE_TURN_INSTRUCTIONS, voice="recorded", sample_rate=CATALOG_RATE, tools=(),
                    knowledge_base=(), initial_state={}, expected_end_state={}, turns=(turn,))


def voiced(adapter: Any, voice: str) -> Any:
    """A cascade speaks with its TTS's voice (an S2S API takes AgentSetup.voice): the configuration's."""
    if isinstance(adapter, Cascade):
        adapter.parts = replace(adapter.parts, tts_model=replace(adapter.parts.tts_model, voice=voice))
    return adapter


def prompt_audio(ps: PromptSet, prompt: Prompt) -> bytes:
    """What is sent: the prompt trimmed after its speech, the end read on its clean source when degraded."""
    pcm, rate = read_pcm16(ps.audio_path(prompt))
    anchors = None
    if prompt.source is not None:
        clean, _ = read_pcm16(ps.audio_path(ps.prompt(prompt.source)))
        anchors = speech_anchors(clean)
    return caller_turn(np.ascontiguousarray(pcm).tobytes(), rate, anchors)


async def _no_tools(call) -> Any:
    raise ProviderError(f"the model called {call.name!r} on a prompt offered no tools", "malformed")


async def answer(adapter: Any, config: PreferenceConfig, pcm: bytes, prompt: Prompt, chunk_ms: int,
                 timeout_s: float) -> Answer:
    timeline = Timeline()
    setup = AgentSetup(SINGLE_TURN_INSTRUCTIONS, voice=config.voice, thinking=config.thinking_level,
                       script=script_for(prompt))
    session = await adapter.converse(timeline, setup)
    try:
        session.start_turn(timeline)
        await paced_send(session, pcm, CATALOG_RATE, chunk_ms, timeline)
        await session.end_audio()
        turn = await asyncio.wait_for(session.respond(_no_tools), timeout_s)
    finally:
        with contextlib.suppress(Exception):
            await session.aclose()
    stream = collect_audio(timeline.events)
    return Answer(timeline, turn, stream.samples, stream.sample_rate or CATALOG_RATE)


def side_streams(result: Answer) -> str:
    """The side streams as JSON: each text event (ms after the prompt's last chunk was sent) and the
    reply's timings (first and last audio chunk's arrival, same origin)."""
    sent = result.timeline.of(CHUNK_SENT)
    origin = sent[-1].t_ns if sent else (result.timeline.events[0].t_ns if result.timeline.events else 0)
    events = [{"kind": e.kind, "t_ms": round((e.t_ns - origin) / 1e6, 1), "text": e.text}
              for e in result.timeline.events if e.kind in SIDE_KINDS]
    audio = result.timeline.of(AUDIO)
    timings = {"first_audio_ms": round((audio[0].t_ns - origin) / 1e6, 1) if audio else None,
               "last_audio_ms": round((audio[-1].t_ns - origin) / 1e6, 1) if audio else None,
               "audio_s": round(result.audio.size / result.sample_rate, 3)}
    calls = [{"name": c.name, "arguments": c.arguments} for c in result.turn.calls]
    return json.dumps({"events": events, "timings": timings, "calls": calls}, ensure_ascii=False, default=str)
