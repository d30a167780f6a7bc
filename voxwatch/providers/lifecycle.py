"""When a registered model stops being measured: its vendor's shutdown date, read on a given day.

A model is retired on and after the shutdown date its vendor announced (or when the registry
declares it retired): its rows stay in the store and on the boards' history, but no tick measures
it. In the WARNING_DAYS before that date it is still measured and shown with a warning. The day is
injectable: `VOXWATCH_TODAY` (YYYY-MM-DD) pins it for a whole process (tests, or an operator
previewing what retires when), else it is the current UTC date.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass

WARNING_DAYS = 90
CHECK_MAX_AGE_DAYS = 180
"""How old a registry check against a vendor may be before what it recorded (a list price) is shown
as stale: vendors change prices without changing the model's id."""
TODAY_VARIABLE = "VOXWATCH_TODAY"


class LifecycleError(ValueError):
    """A day that is not a date."""


def current_day() -> dt.date:
    """The day statuses are computed for: VOXWATCH_TODAY when set, else today in UTC."""
    pinned = os.environ.get(TODAY_VARIABLE, "").strip()
    if not pinned:
        return dt.datetime.now(dt.timezone.utc).date()
    try:
        return dt.date.fromisoformat(pinned)
    except ValueError:
        raise LifecycleError(f"{TODAY_VARIABLE} must be a date (YYYY-MM-DD), got {pinned!r}") from None


@dataclass(frozen=True)
class Standing:
    """A model's status on one day, and what to say of it ("retiring 2027-01-20"; None: nothing)."""
    status: str  # active | early-access | retired
    headline: str | None = None
    successor: str | None = None

    @property
    def retired(self) -> bool:
        return self.status == "retired"

    @property
    def notice(self) -> str | None:
        """The headline with the successor: "retired 2027-01-20; successor openai/gpt-realtime-2.1"."""
        if self.headline is None:
            return None
        return self.headline + (f"; successor {self.successor}" if self.successor else "")

    @property
    def label(self) -> str:
        """The status as a board shows it: "active", "active, retiring 2027-01-20", "retired 2027-01-20"."""
        if self.headline is None:
            return self.status
        return self.headline if self.retired else f"{self.status}, {self.headline}"


def standing(declared: str, shutdown: dt.date | None, successor: str | None, day: dt.date) -> Standing:
    """Retired once its shutdown day has come (or as declared); warned in the WARNING_DAYS before."""
    if declared == "retired":
        return Standing("retired", f"retired {shutdown}" if shutdown else "retired", successor)
    if shutdown is None:
        return Standing(declared)
    if day >= shutdown:
        return Standing("retired", f"retired {shutdown}", successor)
    if (shutdown - day).days <= WARNING_DAYS:
        return Standing(declared, f"retiring {shutdown}", successor)
    return Standing(declared)
