"""`voxwatch export --what conversations|turns`: a team's conversations out of the store, every stored field.

`conversations` is one line per conversation. As JSONL each line is the conversation with its turns, in the
form a spool file keeps (store.conversation_rows.conversation_record), so `voxwatch ingest` takes an export
back into another store; as CSV each row is the conversation's own fields. `turns` is one line per turn: the
turn's fields (status, transcripts, verdicts, calls, its anchors on the recording and its clocks) after the
conversation's that say what it was a turn of (TURN_CONTEXT), so a turn needs no join to be read. Fields
that hold JSON (calls, expected, verdicts, the reasons' lists) stay the JSON text the store holds, in both
formats; `recording` is the call recording's path relative to the folder it was written to.
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, replace
from typing import Any, Callable, Iterable, Iterator, Sequence, TextIO

from voxwatch.store.conversation_rows import (CONVERSATION_FIELDS, TURN_FIELDS, ConversationRow, TurnRow,
                                              conversation_record)

TURN_CONTEXT = ("run_id", "model_id", "scenario", "scenario_version", "scenario_pin", "persona", "region",
                "started_at", "method_version", "emulator", "recording")
"""The conversation's fields each turn line carries before its own (conversation_id is the turn's)."""
TURN_LINE_FIELDS = (*TURN_CONTEXT, *TURN_FIELDS)
assert not set(TURN_CONTEXT) & set(TURN_FIELDS), "a turn line would hold one name twice"
UNIT = {"conversations": "conversation", "turns": "turn"}

Conversation = tuple[ConversationRow, Sequence[TurnRow]]


def turn_line(row: ConversationRow, turn: TurnRow) -> dict[str, Any]:
    """One turn as an export line: its conversation's context, then every field of the turn."""
    return {**{name: getattr(row, name) for name in TURN_CONTEXT}, **asdict(turn)}


def chosen(conversations: Iterable[Conversation], models: Sequence[str] = (),
           until: float | None = None) -> Iterator[Conversation]:
    """The conversations of these models (none given: every model's) started before `until`."""
    for row, turns in conversations:
        if (not models or row.model_id in models) and (until is None or row.started_at < until):
            yield row, turns


def write(conversations: Iterable[Conversation], what: str, fmt: str, out: TextIO,
          advance: Callable[[], None] = lambda: None) -> int:
    """Write `what` ("conversations" or "turns") of `conversations` to `out` as `fmt` ("csv" or
    "jsonl"); `advance` is called once a line. Returns the lines written."""
    columns = CONVERSATION_FIELDS if what == "conversations" else TURN_LINE_FIELDS
    writer = None
    if fmt == "csv":
        writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
    count = 0
    for row, turns in conversations:
        if what == "conversations":
            lines = [conversation_record(row, turns) if writer is None else asdict(row)]
        else:
            lines = [turn_line(row, t) for t in sorted(turns, key=lambda t: t.turn_index)]
        for line in lines:
            if writer is None:
                out.write(json.dumps(line, sort_keys=True, ensure_ascii=False) + "\n")
            else:
                writer.writerow(line)
            count += 1
            advance()
    return count


def as_emulated(conversations: Iterable[Conversation]) -> Iterator[Conversation]:
    """A demo store's conversations leave it as an emulator's, as its observations do."""
    for row, turns in conversations:
        yield replace(row, emulator=True), turns
