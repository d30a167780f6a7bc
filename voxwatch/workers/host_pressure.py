"""Back-pressure across one worker's measure processes (harness.backpressure, shared through Redis).

A Celery worker measures one item per pool process, and its processes share the host's CPUs: a row
the clock witness excludes, or publishes over the aim, in any of them says the worker is overloaded.
So the worker's processes admit measurements under one limit kept in Redis (keyed by region, host
and the pool's parent process), adapted by the same step as `voxwatch run`'s
(harness.backpressure.step). A process waits for a place between items, never
inside a clock. Each place is a lease that ends on its own, so a process killed mid-measurement
frees its place. Redis that cannot answer holds nobody back (the witness still guards every
clock) and adapts nothing.
"""

from __future__ import annotations

import os
import socket
import time
import uuid

import redis

from voxwatch.foundation.observation import Observation
from voxwatch.harness.backpressure import AIM_MS, Pace, aim_for, step, verdict

POLL_S = 0.05
KEEP_S = 86400  # the worker's limit outlives any run; a day idle, it starts slow again

_ADMIT = """
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
local limit = tonumber(redis.call('HGET', KEYS[1], 'limit') or ARGV[3])
if redis.call('ZCARD', KEYS[2]) < limit then
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[4])
  redis.call('EXPIRE', KEYS[2], ARGV[5])
  return 1
end
return 0
"""


def pool_processes() -> int:
    """How many measure processes this worker runs at most: its pool (run_worker says so in
    VOXWATCH_WORKER_CONCURRENCY), else one per CPU."""
    try:
        return max(1, int(os.environ["VOXWATCH_WORKER_CONCURRENCY"]))
    except (KeyError, ValueError):
        return os.cpu_count() or 1


class HostPressure:
    """One worker's shared limit on measurements at once (`host`: the region, host and pool)."""

    def __init__(self, client: redis.Redis, prefix: str, host: str, most: int, lease_s: float,
                 aim_ms: float = AIM_MS) -> None:
        self.redis, self.most, self.lease_s, self.aim_ms = client, max(1, most), lease_s, aim_ms
        self.host = host
        self.state, self.running = f"{prefix}:pressure:{host}", f"{prefix}:pressure:{host}:running"
        self._admit = client.register_script(_ADMIT)

    @classmethod
    def for_this_worker(cls, client: redis.Redis, prefix: str, region: str, lease_s: float,
                        bound_ms: float | None) -> "HostPressure":
        return cls(client, prefix, f"{region}:{socket.gethostname()}:{os.getppid()}", pool_processes(), lease_s,
                   aim_for(bound_ms))

    def admit(self, wait_until: float) -> str | None:
        """Wait for a place under the worker's limit and take it: its lease's name; None when none came
        by `wait_until` (time.monotonic) or Redis cannot say (then measure all the same)."""
        place = uuid.uuid4().hex
        while True:
            try:
                now = time.time()
                if self._admit(keys=[self.state, self.running],
                               args=[now, now + self.lease_s, Pace().limit, place, int(KEEP_S)]):
                    return place
            except redis.RedisError:
                return None
            if time.monotonic() + POLL_S > wait_until:
                return None
            time.sleep(POLL_S)

    def done(self, place: str | None, row: Observation | None) -> tuple[int, int] | None:
        """Free the place and adapt the limit to the row: (from, to) when the limit moved."""
        said = verdict(row, self.aim_ms)
        moved: list[tuple[int, int]] = []

        def adapt(pipe: redis.client.Pipeline) -> None:
            moved.clear()
            held = pipe.hgetall(self.state)
            pace = Pace(min(int(held.get("limit", Pace().limit)), self.most), int(held.get("calm", 0)),
                        held.get("probing", "1") == "1")
            new = step(pace, self.most, said)
            pipe.multi()
            if place is not None:
                pipe.zrem(self.running, place)
            pipe.hset(self.state, mapping={"limit": new.limit, "calm": new.calm, "probing": int(new.probing)})
            pipe.expire(self.state, int(KEEP_S))
            if new.limit != pace.limit:
                moved.append((pace.limit, new.limit))

        try:
            self.redis.transaction(adapt, self.state)
        except redis.RedisError:
            return None
        return moved[0] if moved else None

    def fell(self, moved: tuple[int, int] | None) -> str | None:
        """What a run's note says of a move `done` returned: only a fall is news."""
        if moved is None or moved[1] >= moved[0]:
            return None
        return (f"{self.host}: measurements at once {moved[0]}->{moved[1]} (the clock witness: a row stalled "
                f"or over the {self.aim_ms:g} ms aim)")

    def limit(self) -> int:
        """The worker's limit now (a slow start's first when Redis holds none)."""
        return int(self.redis.hget(self.state, "limit") or Pace().limit)
