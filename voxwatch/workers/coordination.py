"""What a region's workers share through Redis: run counters, slot seeds and claims, vendors' Retry-After.

A run is finished by whichever measure task completes its last item. Completions are counted in a
set of row keys, so a redelivered task (its worker died after storing the row) is counted once;
the run record is written when the set holds every planned key, and again by any redelivery that
finds it complete but not marked finished (the writer died in between). What Redis loses (a
restart, a count that never reached it) the reconciler makes up from the store
(voxwatch.workers.reconcile), so a run is never left `running`.
"""

from __future__ import annotations

import random
import time

import redis

from voxwatch.foundation.observation import RunRecord, run_status

KEEP_S = 7 * 86400  # run bookkeeping outlives any run; the store keeps the record for good

_COMPLETE = """
local added = redis.call('SADD', KEYS[2], ARGV[1])
if added == 1 then
  redis.call('HINCRBY', KEYS[1], 'rows', 1)
  redis.call('HINCRBY', KEYS[1], 'failed_rows', ARGV[2])
end
local total = tonumber(redis.call('HGET', KEYS[1], 'total') or '0')
if total > 0 and redis.call('SCARD', KEYS[2]) >= total and redis.call('HEXISTS', KEYS[1], 'finished') == 0 then
  return 1
end
return 0
"""


class Ledger:
    def __init__(self, url: str, prefix: str) -> None:
        self.redis = redis.Redis.from_url(url, decode_responses=True)
        self.prefix = prefix
        self._complete = self.redis.register_script(_COMPLETE)

    def _run(self, run_id: str) -> str:
        return f"{self.prefix}:run:{run_id}"

    def run_seed(self, run_id: str, proposed: int) -> int:
        """The run's seed: the first one proposed (a redelivered plan draws the same sample)."""
        key = self._run(run_id)
        self.redis.hsetnx(key, "seed", proposed)
        self.redis.expire(key, KEEP_S)
        return int(self.redis.hget(key, "seed"))

    def slot_seed(self, period_minutes: int, slot: int) -> int:
        """One fresh seed per schedule slot, shared by every plan of that slot."""
        key = f"{self.prefix}:seed:{period_minutes}:{slot}"
        self.redis.set(key, random.SystemRandom().randrange(2**31), nx=True, ex=KEEP_S)
        return int(self.redis.get(key))

    def take_burst(self, series: str, alert_id: int, day: int, allowed) -> bool:
        """Count one confirmation burst against the alert and the series' UTC day, if `allowed`(alert's
        bursts so far, the day's so far) says so (alerts.bursts.allowed); False leaves both counts."""
        alert, per_day = f"{self.prefix}:burst:alert:{alert_id}", f"{self.prefix}:burst:day:{series}:{day}"
        n_alert, n_day = self.redis.incr(alert), self.redis.incr(per_day)
        self.redis.expire(alert, 2 * 86400)
        self.redis.expire(per_day, 2 * 86400)
        if allowed(n_alert - 1, n_day - 1):
            return True
        self.redis.decr(alert)
        self.redis.decr(per_day)
        return False

    def claim_slot(self, run_id: str, plan_id: str) -> tuple[str, bool]:
        """The plan that owns a scheduled run (one per slot): (its task id, whether this call claimed it).
        A second plan for the slot (a restarted beat sends it again) finds another owner; a redelivered
        plan finds itself."""
        key = f"{self.prefix}:planned:{run_id}"
        fresh = bool(self.redis.set(key, plan_id, nx=True, ex=KEEP_S))
        return (plan_id if fresh else self.redis.get(key) or plan_id), fresh

    def open_run(self, run: RunRecord, total: int, planned: int | None = None) -> None:
        """Count `total` keys; the record's planned rows are `planned` when a key stands for several
        rows (a conversation task's key for its turns), else the keys."""
        key = self._run(run.run_id)
        self.redis.hsetnx(key, "started_at", run.started_at)
        self.redis.hset(key, mapping={"region": run.region, "total": total, "planned": total if planned is None else planned})
        if run.note:  # the plan's note (what kind of run it is) heads the record's note
            self.redis.hsetnx(key, "plan_note", run.note)
        self.redis.expire(key, KEEP_S)

    def started_at(self, run_id: str) -> float | None:
        value = self.redis.hget(self._run(run_id), "started_at")
        return float(value) if value is not None else None

    def is_done(self, run_id: str, row_key: str) -> bool:
        return bool(self.redis.sismember(self._run(run_id) + ":done", row_key))

    def complete(self, run_id: str, row_key: str, failed: bool) -> bool:
        """Count one stored row (once per key); True when the run now needs its record finished."""
        key = self._run(run_id)
        done = self._complete(keys=[key, key + ":done"], args=[row_key, int(failed)])
        self.redis.expire(key + ":done", KEEP_S)
        return bool(done)

    def needs_finishing(self, run_id: str) -> bool:
        """Every row is counted but the record was never written (its writer died in between)."""
        key = self._run(run_id)
        total = self.redis.hget(key, "total")
        return (total is not None and self.redis.scard(key + ":done") >= int(total)
                and not self.redis.hexists(key, "finished"))

    def add_note(self, run_id: str, note: str) -> None:
        """The run's latest note (after the plan's own, which stays)."""
        self.redis.hset(self._run(run_id), "note", note)

    def record(self, run_id: str) -> RunRecord:
        """The run as counted so far, with its planned total and the status its counted rows give it."""
        h = self.redis.hgetall(self._run(run_id))
        rows, failed = int(h.get("rows", 0)), int(h.get("failed_rows", 0))
        return RunRecord(run_id=run_id, started_at=float(h["started_at"]), region=h["region"], seed=int(h["seed"]),
                         status=run_status(rows, failed), finished_at=time.time(), rows=rows, failed_rows=failed,
                         note="; ".join(n for n in (h.get("plan_note"), h.get("note")) if n) or None, planned=int(h.get("planned", h["total"])) if "total" in h else None)

    def is_finished(self, run_id: str) -> bool:
        return bool(self.redis.hexists(self._run(run_id), "finished"))

    def mark_finished(self, run_id: str) -> None:
        self.redis.hset(self._run(run_id), "finished", 1)

    def hold_vendor(self, region: str, vendor: str, seconds: float) -> None:
        """A vendor answered 429: the region's workers leave it alone for its Retry-After (advisory: a
        hold Redis cannot take is dropped, and a 429 met again is one more row)."""
        try:
            self.redis.set(f"{self.prefix}:not_before:{region}:{vendor}", time.time() + seconds,
                           px=max(1, int(seconds * 1000)))
        except redis.RedisError:
            pass

    def vendor_not_before(self, region: str, vendor: str) -> float | None:
        """When the region's hold on a vendor ends (wall clock, as `hold_vendor` set it), or None when
        there is none (or Redis cannot say: the hold is advisory); the wait is harness.retry_after's."""
        try:
            value = self.redis.get(f"{self.prefix}:not_before:{region}:{vendor}")
        except redis.RedisError:
            return None
        return float(value) if value is not None else None
