"""The small simulated backend a conversation's tools change (tau2-bench's API-state check).

A spoken "yes, book it" proves nothing; the booking in the backend does. The runner answers each
function call through `Backend.call`, which applies the tool's `effect` (insert, update or delete
a record keyed by one argument) and returns the scripted result; after the last turn the backend's
records are compared with the scenario's expected end state (`end_state_matches`), with the same
matchers as call arguments.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

from voxwatch.metrics.conversation_match import call_matches, matches, perfect_pairing, record_matches
from voxwatch.foundation.conversation import ToolCall

from voxwatch.foundation.scenario import Scenario, Tool

State = dict[str, list[dict[str, Any]]]


class Backend:
    """Tables of records (table -> list of records), changed only by tool effects."""

    def __init__(self, initial_state: Mapping[str, list[dict[str, Any]]]):
        self.state: State = {table: [dict(r) for r in records]
                             for table, records in copy.deepcopy(dict(initial_state)).items()}

    def call(self, tool: Tool, args: Mapping[str, Any], scripted: Any = None) -> Any:
        """Apply `tool`'s effect for `args` and return the result the model is sent: `scripted` (the
        scenario's result for the expected call this one matches) when given, else what the
        backend did (the record written, how many were changed, or an error the model can read)."""
        done = self._apply(tool, dict(args))
        return scripted if scripted is not None else done

    def _apply(self, tool: Tool, args: dict[str, Any]) -> Any:
        effect = tool.effect
        if not effect:
            return {"ok": True}
        op, table, key = effect["op"], effect["table"], effect.get("key")
        records = self.state.setdefault(table, [])
        if op == "insert":
            # a second insert of the same key is a second record: a double booking is a real error
            # that the end state must show, not one the backend hides
            records.append(dict(args))
            return {"ok": True, "record": dict(args)}
        if key is None or key not in args:
            return {"ok": False, "error": f"missing {key!r}"}
        hit = [r for r in records if key in r and matches(r[key], args[key])]
        if not hit:
            return {"ok": False, "error": f"no {table} record with {key} {args[key]!r}"}
        if op == "update":
            for r in hit:
                r.update({k: v for k, v in args.items() if k != key and v is not None})
            return {"ok": True, "updated": len(hit)}
        if op == "delete":
            self.state[table] = [r for r in records if not any(r is h for h in hit)]
            return {"ok": True, "deleted": len(hit)}
        raise ValueError(f"tool {tool.name}: unknown effect op {op!r}")


def end_state_matches(actual: Mapping[str, list[Mapping[str, Any]]],
                      expected: Mapping[str, list[Mapping[str, Any]]]) -> tuple[bool, str]:
    """Whether the backend ended where the scenario says: per expected table, the same number of
    records, each expected record paired with its own actual one (order ignored; expected values
    are matchers; fields and tables the scenario does not list are ignored)."""
    for table, wanted in expected.items():
        have = list(actual.get(table, []))
        if len(have) != len(wanted):
            return False, f"{table}: {len(have)} records, expected {len(wanted)}"
        fits = [[record_matches(w, h) for h in have] for w in wanted]
        if not perfect_pairing(fits):
            unmatched = next((w for w, row in zip(wanted, fits) if not any(row)), None)
            if unmatched is not None:
                return False, f"{table}: no record matches {unmatched}"
            return False, f"{table}: the records cannot all be paired with the expected ones"
    return True, "end state matches"


def scripted_result(scenario: Scenario, turn_index: int, call: ToolCall) -> Any:
    """The scripted result for a call made on turn `turn_index`: that of the expected call it
    matches on this turn, else on the nearest other turn (a call made early or late gets the
    answer of the turn it belongs to); None when it matches none (the backend answers)."""
    order = sorted(range(len(scenario.turns)), key=lambda i: (abs(i - turn_index), i))
    for i in order:
        for expected in scenario.turns[i].expected_calls:
            if call_matches(expected, call):
                return expected.result
    return None
