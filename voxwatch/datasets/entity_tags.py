"""Entity tags for imported items (METHOD "Entity accuracy", "Tagging"): the item's own tags when its
line carries any (hand tags win, an empty list included: its author says there are none), else the
tagger's; and the note a dataset.json keeps of who wrote them, so a board can say where they came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from voxwatch.foundation.languages import is_english
from voxwatch.metrics.entity_tagger import TAGGER_ID, tag_records

NOTE_KEY = "entity_tags"
"""The dataset.json `extra` key holding the note."""


@dataclass
class TagCount:
    """How many of a dataset's items carry tags by hand and how many by the tagger."""
    hand: int = 0
    tagger: int = 0

    def note(self) -> dict[str, Any]:
        """The dataset.json `extra` entry (empty when nothing was tagged)."""
        if not (self.hand or self.tagger):
            return {}
        return {NOTE_KEY: {"tagger": TAGGER_ID, "items_tagged_by_tagger": self.tagger, "items_tagged_by_hand": self.hand}}


def filled(entities: tuple[dict[str, str], ...] | None, text: str, language: str | None,
           count: TagCount) -> tuple[dict[str, str], ...] | None:
    """The item's tags: its own when it has them, else the tagger's (English only: its spelled-number,
    month and weekday rules are English) or None when it finds none; `count` counts who wrote them."""
    if entities is not None:
        count.hand += bool(entities)
        return entities
    if not is_english(language or "en"):
        return None
    found = tag_records(text)
    count.tagger += bool(found)
    return found or None


def described(extra: dict[str, Any]) -> str | None:
    """The note in words for a page: "entity tags: 28 items by the tagger (...), 2 by hand"."""
    note = extra.get(NOTE_KEY)
    if not isinstance(note, dict):
        return None
    return (f"entity tags: {note.get('items_tagged_by_tagger', 0)} items by {note.get('tagger', 'the tagger')}, "
            f"{note.get('items_tagged_by_hand', 0)} by hand")
