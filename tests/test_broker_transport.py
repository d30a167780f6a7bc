"""A worker that loses Redis while a close times out reconnects instead of crashing, and loses nothing.

Celery's consumer collects a broken connection with a short socket timeout; when that times out
half-way, kombu has detached the transport (`Connection._do_close_transport`) with a channel still
open, and the consumer's next `connection.close()` closes that channel. These tests put a
connection in exactly that state, on the shared Redis with queues of their own.
"""

from __future__ import annotations

import time
import uuid
from typing import Iterator

import pytest
import redis
from kombu import Connection, Exchange, Queue

from kombu.transport import redis as kombu_redis

from voxwatch.config import load
from voxwatch.workers import broker_transport
from voxwatch.workers.celery_app import configure, settings

pytestmark = pytest.mark.faults

URL = "redis://127.0.0.1:6379/3"


@pytest.fixture
def queue() -> Iterator[Queue]:
    client = redis.Redis.from_url(URL)
    try:
        client.ping()
    except redis.ConnectionError:
        pytest.skip("Redis is not running on 127.0.0.1:6379 (.ci/run starts it)")
    name = f"vw-transport-{uuid.uuid4().hex[:8]}"
    yield Queue(name, Exchange(name, type="direct"), routing_key=name)
    client.delete(name, f"_kombu.binding.{name}")
    client.close()


def _options(queue: Queue, visibility_timeout: int) -> dict:
    """The transport's options, with unacked keys of the test's own (the shared Redis keeps others')."""
    return {"visibility_timeout": visibility_timeout, "unacked_key": f"{queue.name}.unacked",
            "unacked_index_key": f"{queue.name}.index", "unacked_mutex_key": f"{queue.name}.mutex"}


def _held(transport: str | type, queue: Queue, visibility_timeout: int = 3600) -> tuple[Connection, str]:
    """A connection holding one unacknowledged message of `queue`, as a worker mid-task does."""
    conn = Connection(URL, transport=transport, transport_options=_options(queue, visibility_timeout))
    body = uuid.uuid4().hex
    with conn.Producer() as producer:
        producer.publish({"task": body}, exchange=queue.exchange, routing_key=queue.routing_key, declare=[queue])
    message = queue(conn.default_channel).get(no_ack=False)
    assert message is not None and message.payload == {"task": body}
    return conn, body


def _detach_as_a_timed_out_collect_does(conn: Connection) -> None:
    conn._do_close_transport()


def test_the_stock_transport_crashes_where_ours_reconnects(queue: Queue):
    """If kombu fixes this upstream, this fails: then broker_transport can go."""
    conn, _ = _held(kombu_redis.Transport, queue)
    _detach_as_a_timed_out_collect_does(conn)
    with pytest.raises(AttributeError, match="hostname"):
        conn.close()


def test_closing_a_detached_connection_is_a_connection_error_that_celery_recovers_from(queue: Queue):
    conn, _ = _held("redis", queue)
    _detach_as_a_timed_out_collect_does(conn)
    with pytest.raises(redis.ConnectionError, match="already closed"):
        conn.default_channel.close()
    conn.close()  # what the consumer calls next (through ignore_errors): no exception at all


def test_the_held_message_stays_unacked_and_the_visibility_timeout_restores_it(queue: Queue):
    conn, body = _held("redis", queue, visibility_timeout=1)
    _detach_as_a_timed_out_collect_does(conn)
    conn.close()
    client = redis.Redis.from_url(URL)
    assert client.hlen(f"{queue.name}.unacked") == 1  # not lost, not requeued twice
    time.sleep(1.5)
    with Connection(URL, transport="redis", transport_options=_options(queue, 1)) as again:
        channel = again.default_channel
        channel.qos.restore_visible()
        message = queue(channel).get(no_ack=True)
        assert message is not None and message.payload == {"task": body}
    assert client.hlen(f"{queue.name}.unacked") == 0
    client.delete(f"{queue.name}.unacked", f"{queue.name}.index")


def test_workers_use_it_and_still_say_redis():
    app = configure(load(environ={"VOXWATCH_BROKER_URL": "redis://127.0.0.1:6379/3"}))
    for conn in (app.connection_for_read(), app.connection_for_write()):
        with conn:
            assert isinstance(conn.transport, broker_transport.Transport)
            assert conn.as_uri().startswith("redis://") and conn.as_uri().endswith("@127.0.0.1:6379/3")


def test_a_worker_killed_while_it_sweeps_does_not_stop_the_others_sweeping(queue: Queue):
    """A worker SIGKILLed holding the sweep's lock: the lock lapses within a few sweeps (kombu's own
    default, 5 minutes, once left a killed worker's task unrestored past a 300 s test deadline)."""
    config = load(environ={"VOXWATCH_BROKER_URL": URL, "VOXWATCH_BROKER_VISIBILITY_TIMEOUT_S": "10",
                           "VOXWATCH_BROKER_TIME_LIMIT_S": "8", "VOXWATCH_BROKER_SOFT_TIME_LIMIT_S": "5",
                           "VOXWATCH_BROKER_CONVERSATION_TIME_LIMIT_S": "8",
                           "VOXWATCH_BROKER_CONVERSATION_SOFT_TIME_LIMIT_S": "5"})
    options = settings(config)["broker_transport_options"]
    assert options["unacked_mutex_expire"] == 3  # three 1 s sweeps
    conn, body = _held("redis", queue, visibility_timeout=1)
    _detach_as_a_timed_out_collect_does(conn)
    conn.close()
    client = redis.Redis.from_url(URL)
    client.set(f"{queue.name}.mutex", "a-dead-worker", nx=True, ex=options["unacked_mutex_expire"])
    with Connection(URL, transport="redis", transport_options=_options(queue, 1)) as again:
        channel = again.default_channel
        time.sleep(1.5)
        channel.qos.restore_visible(interval=1)  # the dead worker's lock: nothing restored yet
        assert client.hlen(f"{queue.name}.unacked") == 1
        time.sleep(options["unacked_mutex_expire"])
        channel.qos.restore_visible(interval=1)
        message = queue(channel).get(no_ack=True)
        assert message is not None and message.payload == {"task": body}
    client.delete(f"{queue.name}.unacked", f"{queue.name}.index", f"{queue.name}.mutex")
