"""The warnings a model's line carries wherever it shows: one definition, every reader.

A table invites reading its lines alike, and some must not be: a baseline is a script voxwatch
built, not a model (providers: ModelInfo.baseline); preliminary figures rest on too few ticks,
utterances or conversations (metrics.preliminary says why); a retiring or retired model (the
registry's lifecycle on its day, providers.lifecycle) is about to stop, or has stopped, being
measured; an emulated line was answered on a loopback address, never by a vendor; and a conversation
line whose adherence was judged on fewer dimensions than the others on its table is a share of other
things (a reference agent judged on turn-taking alone reads 100 % beside a vendor also judged on tool
use). The pages (web/templates/_marks.html), the JSON API, the CSV downloads and the charts' legends
take these marks from here, so no reader can drop one the others show.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Mapping, TypeVar

from voxwatch.foundation.scenario import DIMENSIONS
from voxwatch.metrics import preliminary
from voxwatch.metrics.conversation_aggregate import Rate
from voxwatch.providers.registry import Registry, RegistryError

FIELDS = ("baseline", "preliminary", "preliminary_reason", "status", "notice")
"""A line's mark fields in the API and the CSV (a conversation line adds `not_judged`)."""
NOT_JUDGED = "not_judged"
ROW_FIELDS = ("baseline", "preliminary", "preliminary_reason", "model_status", "model_notice")
"""The same on a leaderboard row (JSON and CSV), whose `status` names the model's: `model_status`."""

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Marks:
    """What to say beside a line. `status` is the registry's (active, early-access, retired; None for
    an id it does not have) and `notice` its words ("retiring 2027-01-20; successor ...")."""
    baseline: bool = False
    preliminary_reason: str | None = None
    status: str | None = None
    notice: str | None = None
    emulated: bool = False
    not_judged: tuple[str, ...] = ()  # dimensions others on the table were judged on and this line was not

    @property
    def retired(self) -> bool:
        return self.status == "retired"

    @property
    def words(self) -> tuple[str, ...]:
        """The marks in short words, in one order: what a chart's legend writes after the model."""
        return tuple(w for w in (
            "baseline" if self.baseline else None,
            "emulated" if self.emulated else None,
            "preliminary" if self.preliminary_reason else None,
            self.notice.split(";")[0] if self.notice else None,
            fewer_dimensions(self.not_judged)) if w)

    def fields(self, judged: bool = False) -> dict:
        """The API's and CSV's fields (FIELDS; with `judged`, a conversation line's `not_judged` too)."""
        out = {"baseline": self.baseline, **preliminary.fields(self.preliminary_reason), "status": self.status,
               "notice": self.notice}
        return {**out, NOT_JUDGED: list(self.not_judged)} if judged else out

    @classmethod
    def of(cls, line: dict) -> "Marks":
        """The marks an API line carries (fields(); a bake-off line's `loopback` is its emulation)."""
        return cls(line["baseline"], line["preliminary_reason"], line["status"], line["notice"],
                   bool(line.get("loopback")), tuple(line.get(NOT_JUDGED, ())))

    def row_fields(self) -> dict:
        """A leaderboard row's fields (ROW_FIELDS)."""
        return dict(zip(ROW_FIELDS, self.fields().values()))


def fewer_dimensions(not_judged: tuple[str, ...] | list[str]) -> str | None:
    """The words of the fewer-dimensions mark: which dimensions were not judged."""
    return f"judged on fewer dimensions: not on {', '.join(not_judged)}" if not_judged else None


def model_marks(registry: Registry | None, model_id: str, preliminary_reason: str | None = None,
                emulated: bool = False, not_judged: tuple[str, ...] = ()) -> Marks:
    """A line's marks: its model's from the registry (baseline, status on the registry's day), its
    figures' preliminary reason, whether it was emulated, the dimensions it was not judged on."""
    info = None
    if registry is not None:
        try:
            info = registry.resolve(model_id)
        except RegistryError:
            pass
    standing = registry.standing(info) if info is not None else None
    return Marks(bool(info and info.baseline), preliminary_reason, standing.status if standing else None,
                 standing.notice if standing else None, emulated, tuple(not_judged))


def judged_dimensions(rates: Mapping[str, Rate]) -> frozenset[str]:
    """The dimensions a line's adherence counts: those with a decided verdict."""
    return frozenset(d for d, r in rates.items() if r.n)


def not_judged(judged: Mapping[K, frozenset[str]]) -> dict[K, tuple[str, ...]]:
    """Per line of one table, the dimensions another line was judged on and it was not (in DIMENSIONS'
    order): its adherence and theirs are shares of different verdicts."""
    every = frozenset().union(*judged.values())
    return {k: tuple(d for d in DIMENSIONS if d in every and d not in mine) for k, mine in judged.items()}
