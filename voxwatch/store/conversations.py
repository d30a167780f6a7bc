"""The conversation tables' SQL, shared by both stores (they differ only in the placeholder).

`conversations` holds one row per conversation (voxwatch.store.conversation_rows.ConversationRow) and
`conversation_turns` one per turn (TurnRow), keyed by (conversation_id, turn_index). A
conversation is written once with its turns, in one transaction: a second write of the same
conversation_id changes nothing (idempotent, like an observation's key).
"""

from __future__ import annotations

from voxwatch.store.conversation_rows import (CONVERSATION_FIELDS, CONVERSATION_KEY, TURN_FIELDS, TURN_KEY,
                                              ConversationRow, TurnRow)

CONVERSATIONS, TURNS = "conversations", "conversation_turns"


def insert(table: str, mark: str) -> str:
    """INSERT of one row of `table`, skipped when its key is stored; `mark` is the driver's placeholder."""
    names = CONVERSATION_FIELDS if table == CONVERSATIONS else TURN_FIELDS
    return f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join([mark] * len(names))}) ON CONFLICT DO NOTHING"


def select_conversations(mark: str, since: bool, model: bool, one: bool = False) -> str:
    """The conversations started at or after `since`, of one model, or the one named, oldest first."""
    where = ([f"started_at >= {mark}"] if since else []) + ([f"model_id = {mark}"] if model else []) \
        + ([f"conversation_id = {mark}"] if one else [])
    return (f"SELECT {', '.join(CONVERSATION_FIELDS)} FROM {CONVERSATIONS}"
            + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY started_at, conversation_id")


def select_turns(ids_condition: str) -> str:
    """The turns of the conversations matched by `ids_condition` (on conversation_id), in order."""
    return (f"SELECT {', '.join(TURN_FIELDS)} FROM {TURNS} WHERE conversation_id {ids_condition} "
            f"ORDER BY {', '.join(TURN_KEY)}")


def select_turn_counts(ids_condition: str) -> str:
    """(run_id, turns, turns not ok) of the runs matched by `ids_condition` (on run_id): a conversation
    run's rows are its turns, counted by the reconciler as an observation run's rows are."""
    return (f"SELECT c.run_id, count(*), sum(CASE WHEN t.status = 'ok' THEN 0 ELSE 1 END) FROM {CONVERSATIONS} c "
            f"JOIN {TURNS} t ON t.conversation_id = c.conversation_id WHERE c.run_id {ids_condition} GROUP BY c.run_id")


def with_turn_counts(counts: dict[str, tuple[int, int]], turn_counts) -> dict[str, tuple[int, int]]:
    """A run's observation counts plus its conversations' turn counts (a run holds one kind or the other)."""
    for run_id, rows, failed in turn_counts:
        had = counts.get(run_id, (0, 0))
        counts[run_id] = (had[0] + rows, had[1] + int(failed or 0))
    return counts


PRIMARY_KEYS = {CONVERSATIONS: CONVERSATION_KEY, TURNS: TURN_KEY}


class ConversationReads:
    """The reads of the Store protocol's conversations, over a store's own `_conversations(sql, args)`
    (the SQL above with the store's placeholder, `MARK`)."""

    MARK = "?"

    def _conversations(self, sql: str, args: list) -> list[tuple[ConversationRow, list[TurnRow]]]:
        raise NotImplementedError

    def conversations(self, since: float | None = None,
                      model_id: str | None = None) -> list[tuple[ConversationRow, list[TurnRow]]]:
        args = [a for a in (since, model_id) if a is not None]
        return self._conversations(select_conversations(self.MARK, since is not None, model_id is not None), args)

    def conversation(self, conversation_id: str) -> tuple[ConversationRow, list[TurnRow]] | None:
        found = self._conversations(select_conversations(self.MARK, False, False, one=True), [conversation_id])
        return found[0] if found else None
