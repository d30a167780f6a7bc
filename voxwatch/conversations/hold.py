"""The pieces a conversation is held with: the scenario's first turns, one conversation with its judge,
and the reply transcriber's settings (`voxwatch run`: conversations/tick.py; `voxwatch scenarios run`:
conversations/scenario_run.py)."""

from __future__ import annotations

from dataclasses import replace

from voxwatch.providers.conversation import ConversationStream
from voxwatch.providers.registry import ModelInfo, Registry

from voxwatch.foundation.persona import DEFAULT, Persona
from voxwatch.conversations.runner import ConversationRun, ConversationSettings, run_conversation
from voxwatch.harness.tick import stt_instrument
from voxwatch.conversations.scenario_file import LoadedScenario


def first_turns(loaded: LoadedScenario, turns: int | None) -> tuple[LoadedScenario, bool]:
    """The scenario as held: its first `turns` turns (None or 0: every turn), and whether that is all of it."""
    if not turns or turns >= len(loaded.scenario.turns):
        return loaded, True
    return LoadedScenario(replace(loaded.scenario, turns=loaded.scenario.turns[:turns]), loaded.folder, loaded.pin), False


async def hold_one(adapter: ConversationStream, model: ModelInfo, loaded: LoadedScenario,
                   settings: ConversationSettings, whole: bool, persona: Persona = DEFAULT,
                   conversation_id: str | None = None) -> ConversationRun:
    """One conversation with the caller as `persona`, scored by the configured judge (or none:
    judged dimensions are then null); its id given (a planned conversation's) or fresh."""
    judge = _judge()  # its HTTP client lives on this conversation's event loop
    try:
        return await run_conversation(adapter, model.id, model.vendor, loaded, settings, judge, whole=whole,
                                      persona=persona, conversation_id=conversation_id)
    finally:
        await judge.aclose()


REPLY_TRANSCRIBER_KEY = "[boards.s2s] reply_transcriber"


def reply_transcription(registry: Registry, model: ModelInfo, transcriber: str) -> dict:
    """The ConversationSettings that transcribe the replies of an agent that does not report its words:
    the configured instrument (loaded on its first reply, off the clock) and its id; a baseline says its
    script's replies, so the instrument's WER on its voice is measured."""
    transcribe, instrument = stt_instrument(registry, transcriber, REPLY_TRANSCRIBER_KEY)
    return {"transcriber": transcribe, "transcriber_id": instrument, "scripted_replies": model.baseline}


def _judge():
    """The configured judge (voxwatch/conversations/judge.py), or None: judged dimensions are then null."""
    from voxwatch.conversations.judge import Judge

    return Judge.from_env()
