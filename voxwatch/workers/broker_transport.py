"""kombu's Redis transport, with one failure mode turned from a crash into a connection error.

When a worker loses Redis mid-task, Celery's consumer collects the broken connection with a short
socket timeout, then closes it. On a busy machine the collection can time out half-way: kombu then
detaches the transport from its connection (`transport.client = None`) while a channel is still
open. Closing that channel restores its unacknowledged messages through a new Redis client, whose
parameters are read from the detached connection: `AttributeError: 'NoneType' object has no
attribute 'hostname'`, which Celery treats as unrecoverable, and the worker exits with a task in hand
(the class of celery/kombu#582 and #970).

Here a channel whose connection is gone refuses with a connection error instead, which Celery's
reconnect path already expects. Nothing is lost: the messages the channel held stay in Redis's
unacked set, the task in hand acknowledges when it finishes (the ack goes through the new
connection), and a message whose worker died is restored by the visibility timeout.
"""

from __future__ import annotations

from kombu.transport import TRANSPORT_ALIASES
from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError

SCHEMES = ("redis", "rediss")


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> dict:
        if self.connection is None or self.connection.client is None:
            raise RedisConnectionError("this broker connection was already closed; reconnecting")
        return super()._connparams(asynchronous)


class Transport(kombu_redis.Transport):
    Channel = Channel


def install() -> None:
    """Make redis:// and rediss:// broker URLs use this transport in this process.

    kombu resolves a URL's scheme through its alias table; pointing the aliases here (rather than
    naming the class in Celery's broker_transport) keeps every URL, log line and banner `redis://`.
    """
    for scheme in SCHEMES:
        TRANSPORT_ALIASES[scheme] = f"{__name__}:Transport"
