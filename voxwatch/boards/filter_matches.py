"""Whether a reader's --model and --dataset name something it can read: a filter that matches no
stored row is a mistake to say (exit 2, with the nearest ids), not an empty board to print.

A model filter matches by exact id, as `voxwatch run --models` and the web's ?model= do; a partial
or mistyped id is refused with the ids it most likely meant (foundation.text.did_you_mean, the one
`voxwatch run` gives through the registry and the catalog). An empty store (or window) is not a
mistake: only ids neither stored, registered nor in the catalog are refused there, and the reader
says the store is empty as it always has.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable

from voxwatch.boards.leaderboard import since
from voxwatch.config import ConfigError
from voxwatch.foundation.text import did_you_mean
from voxwatch.store.row_filter import RowFilter

LISTED = 8
"""At most this many stored ids are listed in a refusal that has no near one to suggest."""


@dataclass(frozen=True)
class Stored:
    """The model ids and datasets a reader's span holds (rows, and conversations for models)."""
    models: frozenset[str]
    datasets: frozenset[str]


def stored(store, window: str | None, only: RowFilter) -> Stored:
    """What the store holds over the reader's window (None: all time) or span, on its boards, whatever
    its --model and --dataset say: a rolling window's stored aggregates where the store keeps them
    (Postgres), else its rows' ids; with the conversations' models on the S2S board."""
    start = since(window) if only.since is None and window is not None else only.since
    wide = replace(only, since=start, datasets=(), models=())
    precomputed = getattr(store, "aggregates", None)
    if precomputed is not None and window is not None and only.since is None and only.until is None \
            and not only.by_clip:
        rows = [r for r in precomputed(window, start) if wide.keeps(r)]
    else:
        rows = list(store.observations(only=wide))
    models = {r.model_id for r in rows} | set(store.emulated(wide))  # a model of emulated rows only is stored too
    if not only.boards or "s2s" in only.boards:
        models |= {row.model_id for row, _ in store.conversations(since=start)
                   if only.until is None or row.started_at < only.until}
    return Stored(frozenset(models), frozenset(r.dataset for r in rows))


def check(only: RowFilter, found: Stored, registered: Iterable[str], catalog: Iterable[str], where: str) -> None:
    """Refuse (ConfigError: exit 2) each --model or --dataset value that matches nothing `found`
    holds; `where` names the span ('in the last 30d', '' for the whole store). On an empty span, refuse only values that are
    neither registered nor in the catalog."""
    empty = not found.models and not found.datasets
    for option, values, held, known in (("--model", only.models, found.models, set(registered)),
                                        ("--dataset", only.datasets, found.datasets, set(catalog))):
        for value in values:
            if value in held or (empty and value in known):
                continue
            hint = did_you_mean(value, held | known)
            if not hint and held:
                listed = sorted(held)
                hint = f"; stored: {', '.join(listed[:LISTED])}" + (", ..." if len(listed) > LISTED else "")
            raise ConfigError(f"{option} {value} matches nothing stored{' ' + where if where else ''}{hint}")
