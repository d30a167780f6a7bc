"""The Celery app of distributed mode: a Redis broker, one queue per region, safe redelivery.

`voxwatch worker|beat|tick` call `configure(config)` first. The app is also usable as
`celery -A voxwatch.workers.celery_app ...` (for `inspect`, say): it then configures itself from
the config file and VOXWATCH_* variables, as every other command does.

Why these settings: a task is acknowledged only once its row is stored (acks_late), so a worker
that dies mid-measurement hands the task back to the queue (task_reject_on_worker_lost, and
Redis's visibility timeout for a worker killed outright); the store's idempotency key makes the
redelivery harmless. Prefetching one task at a time keeps the item-major order and never holds
work a worker is not measuring.
"""

from __future__ import annotations

import re
from typing import Any

from celery import Celery, bootsteps
from celery.beat import PersistentScheduler

from voxwatch.config import Config, ConfigError, load

from voxwatch.workers import broker_transport, heartbeat

broker_transport.install()  # a worker that loses Redis reconnects instead of crashing

app = Celery("voxwatch", include=["voxwatch.workers.tasks", "voxwatch.workers.conversation_tasks"])
_config: Config | None = None

REGION = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def current_config() -> Config:
    """The configuration this process was started with (loaded from file and environment if unset)."""
    global _config
    if _config is None:
        _config = load()
    return _config


def queue_name(config: Config, region: str) -> str:
    """The one queue a region's workers consume: "<queue_prefix>.<region>"."""
    if not REGION.fullmatch(region):
        raise ConfigError(f"region {region!r}: expected letters, digits, '.', '_' or '-' (it names a queue)")
    return f"{config.broker.queue_prefix}.{region}"


def restore_interval(visibility_timeout_s: int) -> int:
    """Seconds between a worker's sweeps for the tasks of dead workers."""
    return max(1, min(10, visibility_timeout_s // 10))


def settings(config: Config) -> dict[str, Any]:
    from voxwatch.workers.schedule import beat_schedule

    broker = config.broker
    return {
        "broker_url": broker.url,
        "broker_transport_options": {
            "visibility_timeout": broker.visibility_timeout_s,
            # look for tasks of dead workers often enough for the visibility timeout to mean what it says
            "unacked_restore_interval": restore_interval(broker.visibility_timeout_s),
            "unacked_restore_throttle": 1,
            # the lock a worker holds while it sweeps (milliseconds): a worker killed holding it would
            # otherwise stop every other worker's sweeps for kombu's default 5 minutes
            "unacked_mutex_expire": 3 * restore_interval(broker.visibility_timeout_s),
        },
        "broker_connection_retry_on_startup": True,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "task_soft_time_limit": broker.soft_time_limit_s,
        "task_time_limit": broker.time_limit_s,
        "task_ignore_result": True,  # rows go to the store; nothing reads Celery results
        "task_default_queue": queue_name(config, config.region),
        "task_serializer": "json",
        "accept_content": ["json"],
        "enable_utc": True,
        "timezone": "UTC",
        "worker_cancel_long_running_tasks_on_connection_loss": False,  # redelivery is harmless
        "beat_schedule": beat_schedule(config),
        # a pass of beat's loop at least every minute: its heartbeat (HeartbeatScheduler) stays fresh
        "beat_max_loop_interval": min(60, config.every_minutes * 60 // 2 or 1),
        "beat_scheduler": "voxwatch.workers.celery_app:HeartbeatScheduler",
    }


def configure(config: Config) -> Celery:
    """Point the app at the config's broker, queues, limits and schedule; returns the app."""
    global _config
    moved = _config is not None and _config.broker.url != config.broker.url
    _config = config
    app.conf.update(settings(config))
    if moved:  # a process pointed at another broker (tests do it) must not send through the old one's pooled connections
        app._pool = None
        app.amqp._producer_pool = None
    return app


app.add_defaults(lambda: settings(current_config()))

HEARTBEAT_FILE = "voxwatch_heartbeat_file"
"""The app setting naming this process's heartbeat file (voxwatch/workers/heartbeat.py); unset: none is kept."""


class Heartbeat(bootsteps.StartStopStep):
    """A consumer step touching the heartbeat file every few seconds from the consumer's event loop:
    it starts once the broker connection is up and stops when the connection is lost (the consumer
    restarts its steps on reconnection), so a fresh file means connected and not wedged."""

    def __init__(self, parent, **kwargs) -> None:
        super().__init__(parent, **kwargs)
        self.timer_entry = None

    def start(self, parent) -> None:
        path = parent.app.conf.get(HEARTBEAT_FILE)
        if path:
            heartbeat.touch(path)
            self.timer_entry = parent.timer.call_repeatedly(heartbeat.WORKER_EVERY_S, heartbeat.touch, (path,))

    def stop(self, parent) -> None:
        if self.timer_entry is not None:
            self.timer_entry.cancel()
            self.timer_entry = None

    shutdown = stop


app.steps["consumer"].add(Heartbeat)


class HeartbeatScheduler(PersistentScheduler):
    """Beat's scheduler, touching the heartbeat file after every pass of its loop (at least once a
    minute: beat_max_loop_interval)."""

    def tick(self, *args: Any, **kwargs: Any) -> float:
        interval = super().tick(*args, **kwargs)
        path = self.app.conf.get(HEARTBEAT_FILE)
        if path:
            heartbeat.touch(path)
        return interval


def run_worker(config: Config, concurrency: int, loglevel: str = "info", heartbeat_file: str | None = None) -> int:
    """A worker for config.region: it consumes only that region's queue and stamps its rows with it.
    With heartbeat_file, the file is kept fresh while the worker is connected (Heartbeat)."""
    import os

    queue = queue_name(config, config.region)
    configure(config)
    app.conf[HEARTBEAT_FILE] = heartbeat_file
    os.environ["VOXWATCH_WORKER_CONCURRENCY"] = str(concurrency)  # its processes' back-pressure (workers.host_pressure)
    argv = ["worker", "--queues", queue, "--concurrency", str(concurrency), "--pool", "prefork",
            "--hostname", f"{config.region}.{os.getpid()}@%h", "--loglevel", loglevel, "--without-gossip",
            "--without-mingle"]
    return app.worker_main(argv) or 0


def run_beat(config: Config, schedule_file: str, loglevel: str = "info", heartbeat_file: str | None = None) -> int:
    """Beat: enqueues one plan per board, dataset and region every [schedule] every_minutes (and at
    once for an entry it has never sent: schedule.NEVER). With heartbeat_file, the file is touched
    after every pass of its loop (HeartbeatScheduler)."""
    configure(config)
    app.conf[HEARTBEAT_FILE] = heartbeat_file
    return app.start(["beat", "--schedule", schedule_file, "--loglevel", loglevel]) or 0


class BrokerUnreachable(RuntimeError):
    """The broker did not take the message; says where (password redacted) and why."""


def enqueue_plan(config: Config, region: str, **plan_kwargs: Any) -> tuple[str, str]:
    """Queue one plan for region's workers now; returns (run id, queue). The run id is the plan's task id."""
    import uuid

    from kombu.exceptions import OperationalError

    from voxwatch.foundation.redaction import redact_url, scrub

    queue = queue_name(config, region)
    configure(config)
    run_id = uuid.uuid4().hex
    try:
        app.send_task("voxwatch.plan", kwargs={"region": region, **plan_kwargs}, queue=queue, task_id=run_id,
                      retry_policy={"max_retries": 2, "interval_start": 0.5, "interval_step": 1})
    except OperationalError as exc:
        raise BrokerUnreachable(f"cannot reach the broker at {redact_url(config.broker.url)}: "
                                f"{scrub(str(exc), urls=[config.broker.url])}") from None
    return run_id, queue
