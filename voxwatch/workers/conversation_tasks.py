"""The conversation tasks of distributed mode: plan a region's conversations for a slot, and hold
one (model, scenario, persona) conversation per task, on the region's queue.

The plan reuses `voxwatch run`'s plan (conversation_tick.plan_conversations) and personas, opens
the run (its planned rows are the turns its conversations hold) and enqueues one converse task per
conversation, its task id the conversation's id. A second plan of a slot enqueues nothing, as for
voxwatch.plan. A converse task has time limits of its own ([broker] conversation_*time_limit_s),
sent with each message, since a whole scenario outlasts a measure task's; whatever stops it, the
conversation ends in its rows (voxwatch/workers/converse.py), and the run is finished by the task that
counts its last conversation, or by the reconciler from the store's turns.
"""

from __future__ import annotations

import time

from celery import Task as CeleryTask
from celery.exceptions import SoftTimeLimitExceeded
from celery.utils.log import get_task_logger

from voxwatch.conversations.tick import NOTE, configured_personas, plan_conversations, planned_turns
from voxwatch.conversations.catalog import UnknownScenario
from voxwatch.foundation.persona import PersonaError, find
from voxwatch.conversations.scenario_file import ScenarioError
from voxwatch.foundation.observation import RunRecord
from voxwatch.foundation.store_url import StoreError

from voxwatch.workers import converse as conversation
from voxwatch.workers.celery_app import app, current_config, queue_name
from voxwatch.workers.job import ConversationJob
from voxwatch.workers.process_state import state
from voxwatch.workers.schedule import slot_run_id
from voxwatch.workers.tasks import DRAIN_S, PLAN_ERRORS, _first_plan_of_slot, count, counted_before, drain_spool, task_failure

log = get_task_logger(__name__)
BOARD = "s2s-conversations"  # names the conversation runs' slots apart from the s2s board's ticks
CONVERSATION_PLAN_ERRORS = PLAN_ERRORS + (UnknownScenario, ScenarioError, PersonaError)


@app.task(name="voxwatch.plan_conversations", bind=True)
def plan_conversations_task(self, region: str, models: list[str] | None = None, scenarios: list[str] | None = None,
                            turns: int | None = None, personas: list[str] | None = None,
                            sent_at: float | None = None) -> str | None:
    """Enqueue one converse task per (model, scenario, persona) of [boards.s2s] (or those given).

    The run id is the plan's task id (for a plan beat sent, its slot's), so a redelivered plan
    enqueues the same conversations (which the store and the run counters take once), and a second
    plan of one slot enqueues nothing."""
    config = current_config()
    st = state(config)
    run_id = self.request.id.replace("-", "")
    if sent_at is not None:
        run_id = slot_run_id(config, region, BOARD, None, sent_at, config.boards["s2s"].conversation_every_minutes)
        if not _first_plan_of_slot(st, run_id, self.request.id):
            return None
    if st.ledger.is_finished(run_id):
        return run_id
    try:
        talks = plan_conversations(config, st.registry, models, scenarios, turns)
        chosen = [find(name) for name in personas] if personas else configured_personas(config)
    except CONVERSATION_PLAN_ERRORS as exc:
        log.error("conversation run %s not started: %s", run_id, exc)
        return None
    for line in talks.skipped + talks.warnings:
        log.warning(line)
    jobs = [ConversationJob(run_id, m.id, s.scenario.name, s.pin, talks.turns, p.name)
            for m in talks.models for s in talks.scenarios for p in chosen]
    if not jobs:
        log.warning("conversation run %s not started: nothing to hold", run_id)
        return None
    st.ledger.run_seed(run_id, 0)  # conversations draw nothing; the record has a seed all the same
    run = RunRecord(run_id=run_id, started_at=st.ledger.started_at(run_id) or time.time(), region=region, seed=0,
                    note=f"{NOTE}: {len(jobs)} planned", planned=planned_turns(talks, chosen))
    st.ledger.open_run(run, len(jobs), planned=run.planned)
    try:
        st.store.start_run(run)
    except StoreError as exc:  # hold them anyway: conversations the store refuses are spooled
        log.warning("conversation run %s: the store refused its record (%s)", run_id, exc)
    queue, limits = queue_name(config, region), config.broker
    with self.app.producer_or_acquire() as producer:
        for job in jobs:
            converse.apply_async(kwargs=job.kwargs(), task_id=job.key, queue=queue, producer=producer,
                                 soft_time_limit=limits.conversation_soft_time_limit_s,
                                 time_limit=limits.conversation_time_limit_s)
    log.info("conversation run %s: %d converse tasks on %s", run_id, len(jobs), queue)
    return run_id


class ConverseTask(CeleryTask):
    def on_failure(self, exc, task_id, args, kwargs, einfo) -> None:
        """The task failed (a bug, or the hard time limit killed its process; then this runs in the
        worker's main process): the conversation still ends in its rows, so its run can finish."""
        st = state(current_config())
        job = ConversationJob(**kwargs)
        _record(st, job, conversation.failure(st, job, *task_failure(st, exc, "converse")))


@app.task(name="voxwatch.converse", bind=True, base=ConverseTask)
def converse(self, run_id: str, model: str, scenario: str, pin: str, turns: int, persona: str) -> str:
    """Hold one conversation with the worker's adapter and store it (stamped with the worker's region)."""
    config = current_config()
    st = state(config)
    job = ConversationJob(run_id, model, scenario, pin, turns, persona)
    if counted_before(st, run_id, job.key):  # redelivered after it was stored and counted: nothing to hold
        return "stored before"
    if _stored(st, job.key):  # redelivered after it was stored, before it was counted
        count(st, run_id, job.key, failed=False)
        return "stored before"
    budget = (self.request.timelimit or (None, None))[1] or config.broker.conversation_soft_time_limit_s  # the message's
    try:
        held = conversation.hold(st, job, budget_s=budget)
    except SoftTimeLimitExceeded:
        st.abandon_loop()
        held = conversation.failure(st, job, "timeout", f"the conversation passed the task's soft time limit "
                                                        f"({budget} s)")
    _record(st, job, held, drain_until=time.monotonic() + DRAIN_S)
    log.info("conversation %s (%s, %s, persona %s): %s, %d turns (%d failed)", job.key, model, scenario, persona,
             held.row.status, held.row.turns, held.row.failed_turns)
    return held.row.status


def _stored(st, conversation_id: str) -> bool:
    try:
        return st.store.conversation(conversation_id) is not None
    except StoreError:
        return False  # hold it: if it was stored, the store keeps the first


def _record(st, job: ConversationJob, held: conversation.Held, drain_until: float | None = None) -> None:
    """Keep the rows, count them once, finish the run on its last conversation; with drain_until, add
    what this host spooled before once the store has taken these."""
    stored = conversation.record_rows(st, job, held)
    if stored and drain_until is not None:
        drain_spool(st, drain_until)
    count(st, job.run_id, job.key, failed=held.row.status != "ok")
