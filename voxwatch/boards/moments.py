"""A moment as a user types it on the command line (--since, --until): an ISO date or time, or an
age like `7d` or `24h` counted back from now. Unix seconds out; times without a zone are UTC."""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_AGE = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")


class MomentError(ValueError):
    """Text that is neither an ISO date/time nor an age."""


def moment(text: str, now: float | None = None) -> float:
    """`7d` (7 days before now), `24h`, `90m`, `2w`; or `2026-05-01`, `2026-05-01T12:00`, with an
    optional zone (`Z`, `+02:00`; none is UTC)."""
    age = _AGE.fullmatch(text.strip().lower())
    if age:
        return (time.time() if now is None else now) - float(age[1]) * UNITS[age[2]]
    try:
        at = datetime.fromisoformat(text.strip())
    except ValueError:
        raise MomentError(f"{text!r}: expected an ISO date or time (2026-05-01, 2026-05-01T12:00Z) or an age "
                          "(7d, 24h, 30m, 2w)") from None
    return (at if at.tzinfo else at.replace(tzinfo=timezone.utc)).timestamp()


def shown(t: float) -> str:
    """A moment as the board headings say it."""
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
