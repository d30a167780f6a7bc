"""The S2S board's conversations in a monitoring run (`voxwatch run`): hold each configured model's
conversation on each configured scenario, store it, and record the run.

A conversation is held by conversations/runner.py (paced turns, tools answered from the script,
the call recording, the scores) and stored as one conversation row and one row per turn
(voxwatch.conversation_rows), idempotent on its id. The conversations get a run record of their
own: its rows are the turns held, its failed rows the turns that failed, so `run_status` reads it
as it reads a tick's observations.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable

from voxwatch.config import Config
from voxwatch.conversation_records import rows_of
from voxwatch.conversation_rows import ConversationRow, TurnRow
from voxwatch.conversations.catalog import ScenarioCatalog, bundled_root
from voxwatch.conversations.hold import first_turns, hold_one
from voxwatch.providers.keys import model_secrets
from voxwatch.conversations.runner import ConversationRun, ConversationSettings
from voxwatch.conversations.scenario_file import LoadedScenario
from voxwatch.observation import RunRecord, run_status
from voxwatch.providers.registry import ModelInfo, Registry
from voxwatch.store import Store, StoreError
from voxwatch.workers.runner import Plan, PlanError, create_adapter, runnable_models

NOTE = "conversations"  # a conversation run's note starts with this (its rows are turns, not observations)


@dataclass
class ConversationPlan:
    models: list[ModelInfo]
    scenarios: list[LoadedScenario]
    turns: int  # 0: every turn
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def plan_conversations(config: Config, registry: Registry, models: list[str] | None = None,
                       scenarios: list[str] | None = None, turns: int | None = None) -> ConversationPlan:
    """The configured (or given) models, each checked to be on the S2S board and runnable here, and
    the scenarios, loaded with their audio checked; a bad id or name stops the run before it starts."""
    board = config.boards["s2s"]
    chosen = [registry.resolve(m) for m in (board.conversation_models if models is None else models)]
    for m in chosen:
        if m.board != "s2s":
            raise PlanError(f"{m.id} is on the {m.board} board; conversations are held on the s2s board "
                            "([boards.s2s] conversation_models)")
    catalog = ScenarioCatalog([bundled_root(), config.scenarios_dir])
    loaded = [catalog.load(name) for name in (board.scenarios if scenarios is None else scenarios)] if chosen else []
    plan = Plan(seed=0)
    runnable = runnable_models(chosen, plan, registry.day)
    return ConversationPlan(runnable, loaded, board.conversation_turns if turns is None else turns,
                            plan.skipped, plan.warnings)


@dataclass
class ConversationTickResult:
    run: RunRecord
    conversations: list[tuple[ConversationRow, list[TurnRow]]]
    skipped: list[str]


def hold_conversations(config: Config, store: Store, registry: Registry, plan: ConversationPlan,
                       on_conversation: Callable[[ConversationRun], None] | None = None) -> ConversationTickResult:
    """Hold every (model, scenario) conversation of the plan, model by model, storing each as it ends."""
    run = RunRecord(run_id=uuid.uuid4().hex, started_at=time.time(), region=config.region, seed=0,
                    note=f"{NOTE}: {len(plan.models) * len(plan.scenarios)} planned")
    store.start_run(run)
    stored: list[tuple[ConversationRow, list[TurnRow]]] = []
    refused: list[str] = []
    skipped = list(plan.skipped)
    config.recordings_dir.mkdir(parents=True, exist_ok=True)
    try:
        for model in plan.models:
            adapter = create_adapter(registry, model, config.region)
            if isinstance(adapter, Exception):
                skipped.append(f"skipped {model.id}'s conversations: adapter unavailable: {adapter}")
                continue
            secrets = model_secrets(model)
            settings = ConversationSettings(chunk_ms=config.chunk_ms, recordings_dir=config.recordings_dir,
                                            secrets=secrets)
            try:
                for full in plan.scenarios:
                    loaded, whole = first_turns(full, plan.turns)
                    started = time.time()
                    held = asyncio.run(hold_one(adapter, model, loaded, settings, whole))
                    row, turns = rows_of(held, loaded, run_id=run.run_id, region=config.region, started_at=started,
                                         finished_at=time.time(), whole=whole, secrets=secrets,
                                         recordings_dir=config.recordings_dir,
                                         emulator=getattr(adapter, "emulator", False))
                    try:
                        store.add_conversation(row, turns)
                        stored.append((row, turns))
                    except StoreError as exc:
                        refused.append(f"{row.conversation_id}: {exc}")
                    run.rows += row.turns
                    run.failed_rows += row.failed_turns
                    if on_conversation is not None:
                        on_conversation(held)
            finally:
                getattr(adapter, "close", lambda: None)()
        run.status = run_status(run.rows, run.failed_rows)
    except BaseException as exc:
        run.status = run_status(run.rows, run.failed_rows, complete=False)
        run.note += f"; interrupted: {type(exc).__name__}"
        raise
    finally:
        run.finished_at = time.time()
        run.note += f"; {len(stored)} stored" + (f"; the store refused {len(refused)}: {refused[0]}" if refused else "")
        try:
            store.finish_run(run)
        except StoreError:
            pass  # the conversations are stored; the run record is bookkeeping
    return ConversationTickResult(run, stored, skipped)
