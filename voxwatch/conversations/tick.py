"""The S2S board's conversations in a monitoring run (`voxwatch run`): hold each configured model's
conversation on each configured scenario as each configured persona, store it, and record the run.
The converse task of distributed mode (voxwatch.workers.conversation_tasks) holds one the same way
(`hold_conversation`).

A conversation is held by voxwatch/conversations/runner.py (paced turns, tools answered from the script,
the call recording, the scores) and stored as one conversation row and one row per turn
(voxwatch.store.conversation_rows), idempotent on its id (one per run, model, scenario and persona), or
spooled when the store refuses it. The conversations get a run record of their own: its rows are
the turns held, its failed rows the turns that failed, so `run_status` and the reconciler read it
as they read a tick's observations.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from voxwatch.config import Config
from voxwatch.conversations.records import rows_of
from voxwatch.store.conversation_rows import ConversationRow, TurnRow
from voxwatch.conversations.catalog import ScenarioCatalog, bundled_root
from voxwatch.conversations.hold import first_turns, hold_one, reply_transcription
from voxwatch.foundation.persona import Persona, find
from voxwatch.conversations.runner import ConversationRun, ConversationSettings, TurnRun
from voxwatch.conversations.scenario_file import LoadedScenario
from voxwatch.foundation.observation import RunRecord, run_status
from voxwatch.foundation.events import Timeline
from voxwatch.providers.conversation import conversation_refusal
from voxwatch.providers.keys import model_secrets
from voxwatch.providers.registry import ModelInfo, Registry
from voxwatch.store import Store
from voxwatch.foundation.store_url import StoreError
from voxwatch.store.spool import keep_conversation
from voxwatch.harness.tick import Plan, PlanError, create_adapter, runnable_models, speech_quality

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
        if (refusal := conversation_refusal(registry, m)) is not None:
            raise PlanError(f"[boards.s2s] conversation_models: {refusal}")
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
    spooled: list[Path] = field(default_factory=list)  # conversations the store refused, safe in these files


def conversation_id(run_id: str, model_id: str, scenario: str, persona: str, repeat: int = 0) -> str:
    """One id per (run, model, scenario, persona), and per repeat of `voxwatch scenarios run --repeats`
    (the first keeps the id it always had): a conversation held again (a redelivered task) is the same
    row, which the store keeps once."""
    parts = (run_id, model_id, scenario, persona) + ((str(repeat),) if repeat else ())
    return uuid.uuid5(_CONVERSATIONS, "|".join(parts)).hex


_CONVERSATIONS = uuid.UUID("5b0d1c57-86a4-4f52-9b0e-3c9f4e1f0a6d")  # fixed for good: it names every planned conversation


@dataclass(frozen=True)
class Held:
    """One conversation as held and as stored: the run (None when it never ran) and its rows."""
    run: ConversationRun | None
    row: ConversationRow
    turns: list[TurnRow]


async def hold_conversation(adapter: object, model: ModelInfo, full: LoadedScenario, turns: int, persona: Persona,
                            settings: ConversationSettings, *, run_id: str, region: str, repeat: int = 0) -> Held:
    """Hold one (model, scenario, persona) conversation of a run (its first `turns` turns, 0: all)
    and build its rows; `voxwatch run`, `voxwatch scenarios run --store` and the converse task all hold
    a conversation this way."""
    loaded, whole = first_turns(full, turns)
    started = time.time()
    held = await hold_one(adapter, model, loaded, settings, whole, persona,
                          conversation_id(run_id, model.id, full.scenario.name, persona.name, repeat))
    row, turn_rows = rows_of(held, loaded, run_id=run_id, region=region, started_at=started, finished_at=time.time(),
                             whole=whole, secrets=settings.secrets, recordings_dir=settings.recordings_dir,
                             emulator=getattr(adapter, "emulator", False))
    return Held(held, row, turn_rows)


def failed_conversation(model: ModelInfo, full: LoadedScenario, turns: int, persona: Persona, *, run_id: str,
                        region: str, status: str, reason: str, secrets: tuple = ()) -> Held:
    """The rows of a conversation that could not be held or finished (no adapter, a time limit, a
    killed worker): status `failed` with the reason, each planned turn failed with it, so the run's
    planned turns are all there and it can finish."""
    loaded, whole = first_turns(full, turns)
    cid = conversation_id(run_id, model.id, full.scenario.name, persona.name)
    run = ConversationRun(cid, model.id, loaded.identity, loaded.pin,
                          [TurnRun(t.id, Timeline(), b"", status, reason) for t in loaded.scenario.turns],
                          status="failed", reason=reason, persona=persona.identity)
    now = time.time()
    row, turn_rows = rows_of(run, loaded, run_id=run_id, region=region, started_at=now, finished_at=now, whole=whole,
                             secrets=secrets)
    return Held(None, row, turn_rows)


def planned_turns(plan: ConversationPlan, personas: list[Persona]) -> int:
    """The turns a plan's conversations hold in all: a conversation run's planned rows."""
    per_scenario = sum(len(first_turns(s, plan.turns)[0].scenario.turns) for s in plan.scenarios)
    return per_scenario * len(plan.models) * len(personas)


class ConversationRunRecord:
    """A conversation run's record in the store, kept whatever ends the run: started on entry, each
    conversation stored (or spooled when the store refuses it) and its turns counted as the run's rows,
    finished on exit with its status (interrupted: incomplete, and the note says by what)."""

    def __init__(self, store: Store, spool_dirs: Path | Sequence[Path], region: str, planned_turns: int,
                 conversations: int) -> None:
        self.store, self.spool_dirs = store, spool_dirs
        self.run = RunRecord(run_id=uuid.uuid4().hex, started_at=time.time(), region=region, seed=0,
                             note=f"{NOTE}: {conversations} planned", planned=planned_turns)
        self.stored: list[tuple[ConversationRow, list[TurnRow]]] = []
        self.spooled: list[Path] = []

    def __enter__(self) -> "ConversationRunRecord":
        self.store.start_run(self.run)
        return self

    def keep(self, held: Held) -> Path | None:
        """Store one held conversation (None) or spool it (the spool file), and count its turns."""
        path, _ = keep_conversation(self.store, self.spool_dirs, held.row, held.turns)
        if path is None:
            self.stored.append((held.row, held.turns))
        else:
            self.spooled.append(path)
        self.run.rows += held.row.turns
        self.run.failed_rows += held.row.failed_turns
        return path

    def __exit__(self, kind, exc, tb) -> None:
        run = self.run
        run.status = run_status(run.rows, run.failed_rows, complete=kind is None)
        if kind is not None:
            run.note += f"; interrupted: {kind.__name__}"
        run.finished_at = time.time()
        run.note += f"; {len(self.stored)} stored" + (
            f"; the store refused {len(self.spooled)}, spooled to {self.spooled[0]}" if self.spooled else "")
        try:
            self.store.finish_run(run)
        except StoreError:
            pass  # the conversations are stored or spooled; the run record is bookkeeping


def hold_conversations(config: Config, store: Store, registry: Registry, plan: ConversationPlan,
                       on_conversation: Callable[[ConversationRun], None] | None = None) -> ConversationTickResult:
    """Hold every (model, scenario, persona) conversation of the plan, model by model, storing each
    as it ends (spooled when the store refuses it)."""
    personas = configured_personas(config)
    skipped = list(plan.skipped)
    config.recordings_dir.mkdir(parents=True, exist_ok=True)
    with ConversationRunRecord(store, config.spool_dirs, config.region, planned_turns(plan, personas),
                               len(plan.models) * len(plan.scenarios) * len(personas)) as record:
        for model in plan.models:
            adapter = create_adapter(registry, model, config.region)
            if isinstance(adapter, Exception):
                skipped.append(f"skipped {model.id}'s conversations: adapter unavailable: {adapter}")
                continue
            settings = conversation_settings(config, model, registry)
            try:
                for full in plan.scenarios:
                    for persona in personas:
                        held = asyncio.run(hold_conversation(adapter, model, full, plan.turns, persona, settings,
                                                             run_id=record.run.run_id, region=config.region))
                        record.keep(held)
                        if on_conversation is not None and held.run is not None:
                            on_conversation(held.run)
            finally:
                getattr(adapter, "close", lambda: None)()
    return ConversationTickResult(record.run, record.stored, skipped, record.spooled)


def conversation_settings(config: Config, model: ModelInfo, registry: Registry | None = None) -> ConversationSettings:
    """How a configured deployment holds a model's conversations: its chunk size, recordings folder,
    the model's keys (cut out of every stored reason), the speech quality instrument, its clock witness's
    bound and the reply transcriber ([boards.s2s] reply_transcriber)."""
    words = reply_transcription(registry or Registry.default(), model, config.boards["s2s"].reply_transcriber)
    return ConversationSettings(chunk_ms=config.chunk_ms, recordings_dir=config.recordings_dir,
                                noises_dir=config.noises_dir, secrets=model_secrets(model), quality=speech_quality,
                                stall_bound_ms=config.stall_bound_ms, **words)


def configured_personas(config: Config) -> list[Persona]:
    """[boards.s2s] personas (checked at load): each is a conversation of its own, never pooled."""
    return [find(name) for name in config.boards["s2s"].personas]
