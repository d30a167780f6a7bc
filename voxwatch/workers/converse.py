"""Holding one planned conversation in a worker process, and keeping its rows whatever happens.

The conversation is held as `voxwatch run` holds it (conversation_tick.hold_conversation), on the
process's event loop with its cached adapter, within the task's budget. Whatever stops it (no
adapter, an unknown scenario copy, the budget, the task's time limits, a killed process) it ends
in its rows: status `failed` with the reason, every planned turn failed with it, so its run can
finish. The rows go to the store, or to the spool when it refuses them; the run is counted in
Redis per conversation and finished from the store's turns (voxwatch/workers/reconcile.py).
"""

from __future__ import annotations

import asyncio
import time

from celery.exceptions import SoftTimeLimitExceeded
from celery.utils.log import get_task_logger

from voxwatch.store.conversation_rows import ConversationRow
from voxwatch.conversations.tick import Held, conversation_settings, failed_conversation, hold_conversation
from voxwatch.foundation.persona import find
from voxwatch.providers.conversation import conversation_refusal
from voxwatch.providers.registry import RegistryError
from voxwatch.harness.tick import PlanError
from voxwatch.providers.keys import model_secrets
from voxwatch.store.spool import keep_conversation

from voxwatch.workers.job import ConversationJob
from voxwatch.workers.process_state import SAFETY_S, ProcessState
from voxwatch.workers.tasks import note_spooled

log = get_task_logger(__name__)


def hold(st: ProcessState, job: ConversationJob, budget_s: float) -> Held:
    """The job's conversation, held within budget_s seconds (or its failure rows)."""
    started = time.monotonic()
    try:
        model, full, persona = st.registry.resolve(job.model), st.scenario(job.scenario, job.pin), find(job.persona)
    except SoftTimeLimitExceeded:
        raise  # the task's limit, reached while loading the scenario: the task says so, not "cannot rebuild"
    except Exception as exc:  # noqa: BLE001 - a job this worker cannot rebuild is a failed conversation
        return failure(st, job, "error", f"this worker cannot rebuild the conversation: {exc}")
    if (refusal := conversation_refusal(st.registry, model)) is not None:  # a plan sent by hand, or a registry changed
        return failure(st, job, "error", refusal)
    adapter = st.adapter(model)
    if isinstance(adapter, Exception):
        return failure(st, job, "error", f"adapter unavailable: {adapter}")
    st.config.recordings_dir.mkdir(parents=True, exist_ok=True)
    try:
        settings = conversation_settings(st.config, model, st.registry)
    except (PlanError, RegistryError) as exc:  # a reply transcriber this worker cannot load: said on the conversation
        return failure(st, job, "error", f"the reply transcriber is unavailable: {exc}")
    coro = hold_conversation(adapter, model, full, job.turns, persona, settings,
                             run_id=job.run_id, region=st.config.region)
    deadline = max(1.0, budget_s - (time.monotonic() - started) - min(SAFETY_S, budget_s / 5))
    try:
        return st.loop.run_until_complete(asyncio.wait_for(coro, deadline))
    except asyncio.TimeoutError:
        return failure(st, job, "timeout", f"the conversation did not end within the task's time limit ({budget_s:g} s)")


def failure(st: ProcessState, job: ConversationJob, status: str, reason: str) -> Held:
    """The job's rows when it could not be held or finished; a bare conversation row with no turns
    when even its model, scenario or persona is unknown here."""
    try:
        model, full, persona = st.registry.resolve(job.model), st.scenario(job.scenario, job.pin), find(job.persona)
    except Exception:  # noqa: BLE001
        now = time.time()
        row = ConversationRow(
            conversation_id=job.key, run_id=job.run_id, model_id=job.model, scenario=job.scenario, scenario_version=0,
            scenario_pin=job.pin, region=st.config.region, started_at=now, finished_at=now, status="failed",
            reason=reason[:500], turns=0, failed_turns=0, whole=False, rotations=0, reconnections=0,
            rotation_reasons="[]", reconnection_reasons="[]", persona=job.persona)
        return Held(None, row, [])
    return failed_conversation(model, full, job.turns, persona, run_id=job.run_id, region=st.config.region,
                               status=status, reason=reason, secrets=model_secrets(model))


def record_rows(st: ProcessState, job: ConversationJob, held: Held) -> bool:
    """Store the conversation, or spool it (noted on the run); True when the store took it."""
    path, refused = keep_conversation(st.store_or_refusal(), st.config.spool_dirs, held.row, held.turns)
    if path is None:
        return True
    log.warning("conversation %s: the store refused it (%s); spooled to %s", job.key, refused, path)
    note_spooled(st, job.run_id, f"a conversation ({refused})", path)
    return False
