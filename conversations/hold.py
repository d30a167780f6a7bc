"""Holding a scenario's conversations with one model from the command line (`voxwatch scenarios run`)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from voxwatch.conversation_board import board_text, turns_table
from voxwatch.metrics.conversation_aggregate import board_summary
from voxwatch.providers.keys import api_key, key_variable
from voxwatch.providers.registry import Registry, RegistryError

from .runner import ConversationSettings, run_conversation, summary_line
from .scenario_file import LoadedScenario


def hold(loaded: LoadedScenario, model_id: str, *, turns: int | None = None, repeats: int = 1,
         recordings: Path | None = None) -> int:
    """Run `repeats` conversations, print each one's turns and then the board; 1 if every turn failed."""
    registry = Registry.default()
    model = registry.resolve(model_id)
    if model.board != "s2s":
        raise RegistryError(f"{model.id} is on the {model.board} board; conversations are held on the s2s board")
    if not model.key_is_set():
        raise RegistryError(f"{model.id} needs a key: set {key_variable(model.vendor)}")
    whole = turns is None or turns >= len(loaded.scenario.turns)
    if not whole:
        loaded = LoadedScenario(replace(loaded.scenario, turns=loaded.scenario.turns[:turns]), loaded.folder,
                                loaded.pin)
    secrets = getattr(model, "secrets", lambda: (api_key(model.vendor),))()
    settings = ConversationSettings(recordings_dir=recordings, secrets=tuple(s for s in secrets if s is not None))
    adapter = registry.create(model)

    async def one():
        judge = _judge()  # its HTTP client lives on this conversation's event loop
        try:
            return await run_conversation(adapter, model.id, model.vendor, loaded, settings, judge, whole=whole)
        finally:
            await judge.aclose()

    runs = []
    try:
        for _ in range(repeats):
            run = asyncio.run(one())
            runs.append(run)
            print(summary_line(run))
            print(turns_table(run))
            if run.recording is not None:
                print(f"recording: {run.recording}")
            print()
    finally:
        getattr(adapter, "close", lambda: None)()
    trial = "" if whole else f", first {turns} turns (end state not checked)"
    print(board_text(model.id, f"{loaded.identity}{trial}", board_summary([r.score for r in runs])))
    return 1 if all(t.status != "ok" for r in runs for t in r.turns) else 0


def _judge():
    """The configured judge (conversations/judge.py), or None: judged dimensions are then null."""
    from .judge import Judge

    return Judge.from_env()
