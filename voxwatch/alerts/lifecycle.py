"""The alert lifecycle as one pure step (docs/ALERTS.md "Lifecycle"), so the evaluation and the
benchmark (benchmarks/alert_roc.py) move alerts by the same code.

(none) -> pending when the condition holds; pending -> firing once it held at `fire_after`
successive evaluations; pending -> resolved ("cleared", never notified) when it does not hold;
firing -> resolved once it was clear at `resolve_after` successive evaluations.
"""

from __future__ import annotations

from dataclasses import dataclass

from voxwatch.config import Alerts


@dataclass(frozen=True)
class Step:
    """What one evaluation does to a key: its state afterwards (None: no open alert), the event to
    record (None: nothing changed) and the streak towards the next transition."""
    state: str | None
    event: str | None
    streak: int


def step(state: str | None, streak: int, holds: bool | None, rules: Alerts, decisive: bool | None = None) -> Step:
    """One evaluation of one key: `state` and `streak` are its open alert's (None, 0 if it has none),
    `holds` the rule's verdict (None: too few recent samples, nothing changes). `decisive` (the
    sequential rules'): False keeps a holding pending alert pending however long its streak, so it
    fires only on evidence past the firing level; None for the rules that have one level."""
    if holds is None:
        return Step(state, None, streak)
    if state is None:
        if not holds:
            return Step(None, None, 0)
        opened = "firing" if rules.fire_after <= 1 and decisive is not False else "pending"
        return Step(opened, opened, 1)
    if state == "pending":
        if not holds:
            return Step("resolved", "cleared", 0)
        if streak + 1 >= rules.fire_after and decisive is not False:
            return Step("firing", "firing", 0)
        return Step("pending", None, streak + 1)
    streak = 0 if holds else streak + 1  # firing: the streak counts successive clear evaluations
    return Step("resolved", "resolved", streak) if streak >= rules.resolve_after else Step("firing", None, streak)
