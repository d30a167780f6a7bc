"""Beat's schedule: one plan per (board, dataset, region), on slots aligned to the epoch, one plan of
the S2S board's conversations per region on slots of their own period ([boards.s2s]
conversation_every_minutes), the run reconciler (voxwatch/workers/reconcile.py), and the regression alerts'
evaluation (docs/ALERTS.md) when the store is Postgres.

Every entry fires at the same multiples of the period (not "every 30 minutes since beat
started"), and the plan it sends carries the send time; the planner turns that into the slot,
and all the slot's plans share one seed. So every dataset of a family draws the same utterances
in one slot (clean-vs-degraded deltas stay paired), and every region measures the same clips.

An entry beat has never sent (a new deployment, a board or region added) is due at once: its
`last_run_at` starts at NEVER, so the current slot's plans go out when beat starts instead of at
the next boundary (up to every_minutes later), and a new board is not empty for half an hour. An
entry beat has sent keeps its time in the schedule file, so a restart sends nothing new within a
slot, and a plan sent twice for one slot still measures once (slot_run_id).
"""

from __future__ import annotations

import math
import time
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

from celery.beat import BeatLazyFunc
from celery.schedules import schedstate, schedule

from voxwatch.config import Config
from voxwatch.foundation.store_url import POSTGRES, store_kind


class aligned(schedule):
    """Due at every multiple of run_every since the Unix epoch."""

    def _next_boundary(self, at: float) -> float:
        return (math.floor(at / self.seconds) + 1) * self.seconds

    def remaining_estimate(self, last_run_at: datetime) -> timedelta:
        last = self.maybe_make_aware(last_run_at).timestamp()
        now = self.maybe_make_aware(self.now()).timestamp()
        return timedelta(seconds=self._next_boundary(last) - now)

    def is_due(self, last_run_at: datetime) -> schedstate:
        remaining = self.remaining_estimate(last_run_at).total_seconds()
        if remaining > 0:
            return schedstate(is_due=False, next=remaining)
        now = self.maybe_make_aware(self.now()).timestamp()
        return schedstate(is_due=True, next=self._next_boundary(now) - now)


def slot_of(sent_at: float, every_minutes: int) -> int:
    """The slot a plan sent at sent_at belongs to (beat sends just after the slot starts)."""
    return int(sent_at // (every_minutes * 60))


_SLOT_RUNS = uuid.UUID("1f9b3f21-377f-4ba8-94eb-efd275df3935")  # fixed for good: it names every scheduled run


def slot_run_id(config: Config, region: str, board: str | None, datasets: list[str] | None, sent_at: float,
                every_minutes: int | None = None) -> str:
    """The run id of a plan beat sent: one per (deployment, region, board, datasets, period, slot);
    the period is [schedule] every_minutes unless given (the conversations' own). A plan sent twice
    for one slot (beat restarted before it had recorded the first send) names the same run, so it
    cannot become a second tick of the slot."""
    period = config.every_minutes if every_minutes is None else every_minutes
    slot = slot_of(sent_at, period)
    name = "|".join((config.broker.queue_prefix, region, board or "", ",".join(datasets or ()), str(period), str(slot)))
    return uuid.uuid5(_SLOT_RUNS, name).hex


NEVER = datetime.fromtimestamp(0, timezone.utc)
"""The last send of an entry beat has never sent: any aligned schedule is due then (celery's
ScheduleEntry takes a new entry's last_run_at from the schedule; a stored entry keeps its own)."""


def beat_schedule(config: Config) -> dict[str, dict[str, Any]]:
    from voxwatch.workers.celery_app import queue_name

    period = aligned(timedelta(minutes=config.every_minutes))
    entries: dict[str, dict[str, Any]] = {}
    for region in config.schedule_regions or (config.region,):
        for board_name, board in config.boards.items():
            if not board.models:
                continue
            for dataset in board.datasets:
                entries[f"{board_name} {dataset} @{region}"] = {
                    "task": "voxwatch.plan",
                    "schedule": period,
                    "kwargs": {"region": region, "board": board_name, "datasets": [dataset],
                               "sent_at": BeatLazyFunc(time.time)},
                    "options": {"queue": queue_name(config, region)},
                }
    s2s = config.boards["s2s"]
    if s2s.conversation_models and s2s.scenarios:  # one conversation run per region and slot of its own period
        for region in config.schedule_regions or (config.region,):
            entries[f"s2s conversations @{region}"] = {
                "task": "voxwatch.plan_conversations",
                "schedule": aligned(timedelta(minutes=s2s.conversation_every_minutes)),
                "kwargs": {"region": region, "sent_at": BeatLazyFunc(time.time)},
                "options": {"queue": queue_name(config, region)},
            }
    for region in config.schedule_regions or (config.region,):
        # finish runs from the store, whatever Redis lost (voxwatch/workers/reconcile.py), once per region: a
        # worker of each adds what its host spooled. A reconcile still queued when the next is due is dropped.
        entries[f"runs reconcile @{region}"] = {
            "task": "voxwatch.runs.reconcile",
            "schedule": aligned(timedelta(seconds=config.reconcile_every_s)),
            "options": {"queue": queue_name(config, region), "expires": config.reconcile_every_s},
        }
    if store_kind(config.store_url) == POSTGRES:  # the alerts live in the Postgres store
        entries["alerts evaluate"] = {
            "task": "voxwatch.alerts.evaluate",
            "schedule": aligned(timedelta(minutes=config.alerts.evaluate_every_minutes)),
            "options": {"queue": queue_name(config, config.region)},  # any worker of beat's own region runs it
        }
    for entry in entries.values():
        entry["last_run_at"] = NEVER
    return entries
