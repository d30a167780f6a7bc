"""Holding a scenario's conversations with one model from the command line (`voxwatch scenarios run`):
printed turn by turn, then its board, and kept in a store when asked, as `voxwatch run` keeps them."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

from voxwatch.config import Config
from voxwatch.conversations.hold import first_turns
from voxwatch.conversations.runner import summary_line
from voxwatch.conversations.scenario_file import LoadedScenario
from voxwatch.conversations.scorecards import scorecard_text, turns_table
from voxwatch.conversations.tick import ConversationRunRecord, conversation_settings, hold_conversation
from voxwatch.foundation.persona import DEFAULT, Persona
from voxwatch.metrics.conversation_aggregate import scorecard
from voxwatch.providers.conversation import conversation_refusal
from voxwatch.providers.keys import key_variable
from voxwatch.providers.registry import Registry, RegistryError
from voxwatch.store import open_store


@dataclass(frozen=True)
class StoreTarget:
    """Where `voxwatch scenarios run --store` keeps what it held: the store, its spool folders (a
    refused conversation is spooled, as `voxwatch run` spools it) and the region its rows name."""

    url: str
    spool_dirs: tuple[Path, ...]
    region: str


def hold(config: Config, loaded: LoadedScenario, model_id: str, *, turns: int | None = None, repeats: int = 1,
         recordings: Path | None = None, persona: Persona = DEFAULT, store: StoreTarget | None = None) -> int:
    """Run `repeats` conversations with the caller as `persona`, print each one's turns and then the
    board (one persona: never pooled with another), and keep each in `store` when given, under a run
    record as `voxwatch run` keeps its conversations (voxwatch/conversations/tick.py), with the settings
    it holds them with (conversation_settings: the chunk size, clock witness bound, reply transcriber);
    `recordings`: where the call recordings go (None: none kept); 1 if every turn failed."""
    registry = Registry.default()
    model = registry.resolve(model_id)
    if model.board != "s2s":
        raise RegistryError(f"{model.id} is on the {model.board} board; conversations are held on the s2s board")
    if (refusal := conversation_refusal(registry, model)) is not None:
        raise RegistryError(refusal)
    if not model.key_is_set():
        raise RegistryError(f"{model.id} needs a key: set {key_variable(model.vendor)}")
    held_turns, whole = first_turns(loaded, turns)
    settings = replace(conversation_settings(config, model, registry), recordings_dir=recordings)
    runs = []
    with contextlib.ExitStack() as stack:
        record = None
        if store is not None:  # opened before the first call: a bad URL is refused before anything is held
            kept = stack.enter_context(contextlib.closing(open_store(store.url)))
            record = stack.enter_context(ConversationRunRecord(kept, store.spool_dirs, store.region,
                                                               len(held_turns.scenario.turns) * repeats, repeats))
        adapter = registry.create(model)
        stack.callback(getattr(adapter, "close", lambda: None))
        run_id = record.run.run_id if record is not None else uuid.uuid4().hex
        for i in range(repeats):
            held = asyncio.run(hold_conversation(adapter, model, loaded, turns or 0, persona, settings,
                                                 run_id=run_id, region=store.region if store else "", repeat=i))
            run = held.run
            runs.append(run)
            print(summary_line(run))
            print(turns_table(run))
            if run.recording is not None:
                print(f"recording: {run.recording}")
            if record is not None:
                spooled = record.keep(held)
                print(f"stored conversation {run.conversation_id} ({held.row.turns} turns)" if spooled is None else
                      f"the store refused conversation {run.conversation_id}; spooled to {spooled}")
            print()
    if record is not None:
        print(f"run {record.run.run_id}: {len(record.stored)} of {repeats} conversation(s) stored"
              f" (voxwatch export --what turns --store ... reads them)\n")
    trial = "" if whole else f", first {turns} turns (end state not checked)"
    label = f"{held_turns.identity}, persona {persona.identity}{trial}"
    # a conversation that never opened a session has no score: it is told above, and scores nothing
    print(scorecard_text(model.id, label, scorecard([r.score for r in runs if r.score is not None]), model.baseline))
    return 1 if all(t.status != "ok" for r in runs for t in r.turns) else 0
