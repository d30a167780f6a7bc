"""Holding a scenario's conversations with one model from the command line (`voxwatch scenarios run`),
and the pieces `voxwatch run` holds its conversations with (voxwatch/conversations/tick.py)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from voxwatch.conversations.scorecards import scorecard_text, turns_table
from voxwatch.metrics.conversation_aggregate import scorecard
from voxwatch.providers.conversation import ConversationStream, conversation_refusal
from voxwatch.providers.keys import key_variable, model_secrets
from voxwatch.providers.registry import ModelInfo, Registry, RegistryError

from voxwatch.foundation.persona import DEFAULT, Persona
from voxwatch.conversations.runner import ConversationRun, ConversationSettings, run_conversation, summary_line
from voxwatch.harness.tick import speech_quality
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


def hold(loaded: LoadedScenario, model_id: str, *, turns: int | None = None, repeats: int = 1,
         recordings: Path | None = None, persona: Persona = DEFAULT, noises_dir: Path | None = None) -> int:
    """Run `repeats` conversations with the caller as `persona`, print each one's turns and then the
    board (one persona: never pooled with another); 1 if every turn failed."""
    registry = Registry.default()
    model = registry.resolve(model_id)
    if model.board != "s2s":
        raise RegistryError(f"{model.id} is on the {model.board} board; conversations are held on the s2s board")
    if (refusal := conversation_refusal(registry, model)) is not None:
        raise RegistryError(refusal)
    if not model.key_is_set():
        raise RegistryError(f"{model.id} needs a key: set {key_variable(model.vendor)}")
    loaded, whole = first_turns(loaded, turns)
    settings = ConversationSettings(recordings_dir=recordings, noises_dir=noises_dir, secrets=model_secrets(model),
                                    quality=speech_quality)
    adapter = registry.create(model)
    runs = []
    try:
        for _ in range(repeats):
            run = asyncio.run(hold_one(adapter, model, loaded, settings, whole, persona))
            runs.append(run)
            print(summary_line(run))
            print(turns_table(run))
            if run.recording is not None:
                print(f"recording: {run.recording}")
            print()
    finally:
        getattr(adapter, "close", lambda: None)()
    trial = "" if whole else f", first {turns} turns (end state not checked)"
    label = f"{loaded.identity}, persona {persona.identity}{trial}"
    # a conversation that never opened a session has no score: it is told above, and scores nothing
    print(scorecard_text(model.id, label, scorecard([r.score for r in runs if r.score is not None]), model.baseline))
    return 1 if all(t.status != "ok" for r in runs for t in r.turns) else 0


def _judge():
    """The configured judge (voxwatch/conversations/judge.py), or None: judged dimensions are then null."""
    from voxwatch.conversations.judge import Judge

    return Judge.from_env()
