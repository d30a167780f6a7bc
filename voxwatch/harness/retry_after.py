"""How long a vendor that answered 429 is left alone, and how long to wait for it before its next
item: one rule for `voxwatch run` (tick.py, the holds in this process) and the distributed workers
(voxwatch.workers, the holds in Redis, shared by a region's workers).

The wait is honoured between items, never inside a clock; it is capped (`run.max_retry_after_s`)
so a vendor that names an hour cannot stall everything behind it, and a task with a time budget
waits at most half of it, so the measurement still fits in what is left.
"""

from __future__ import annotations

import time
from typing import Callable


def hold_s(retry_after_s: float | None, default_s: float) -> float:
    """How long to leave a vendor alone after a 429: its Retry-After, or `default_s`
    (`run.backoff_s`) when it named none."""
    return retry_after_s or default_s


def wait_s(now: float, not_before: float | None, cap_s: float, budget_s: float | None = None) -> float:
    """Seconds to wait before a vendor's next item: what is left of its hold (`not_before` on the
    clock `now` was read from; None when it is not held), at most `cap_s` and, for a task with a
    budget, at most half of `budget_s`; 0 once the hold is over."""
    if not_before is None or not_before - now <= 0:
        return 0.0
    wait = min(not_before - now, cap_s)
    return wait if budget_s is None else min(wait, budget_s / 2)


class VendorHolds:
    """The not-before time of each vendor that answered 429, for a run in one process (on the
    monotonic clock: a hold must not move with the wall clock)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._not_before: dict[str, float] = {}

    def hold(self, vendor: str, seconds: float) -> None:
        """Leave `vendor` alone for `seconds` from now."""
        self._not_before[vendor] = self._clock() + seconds

    def wait_s(self, vendor: str, cap_s: float) -> float:
        """Seconds to wait before `vendor`'s next item (the module's rule)."""
        return wait_s(self._clock(), self._not_before.get(vendor), cap_s)
