"""Flexible matching of function-call arguments and backend records (METHOD "Conversations").

A scenario states what a turn's call must carry with matchers (voxwatch/foundation/scenario.py
MATCHERS), because a spoken request leaves room: "around seven" is 19:00 give or take, a party
"of two or three" is one of [2, 3], a list of toppings comes in any order. Matching is defined
once here, for call arguments and end-state records alike, so a model is never failed by one
and passed by the other for the same value.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from voxwatch.foundation.scenario import ExpectedCall
from voxwatch.foundation.conversation import ToolCall

_MATCHER_KEYS = {frozenset({"any"}), frozenset({"one_of"}), frozenset({"regex"}),
                 frozenset({"approx", "tolerance"}), frozenset({"approx"}), frozenset({"set"}),
                 frozenset({"exact"})}


def _is_matcher(m: Any) -> bool:
    return isinstance(m, dict) and frozenset(m) in _MATCHER_KEYS


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _fold(s: str) -> str:
    return " ".join(s.split()).casefold()


def _plain(expected: Any, value: Any) -> bool:
    """A plain JSON value: strings case- and whitespace-insensitive, numbers by value (2 == 2.0,
    never "2" == 2: a model that stringifies a number broke the schema), lists in order, objects
    key by key; a bool is never a number."""
    if isinstance(expected, str):
        return isinstance(value, str) and _fold(expected) == _fold(value)
    if isinstance(expected, bool) or isinstance(value, bool):
        return isinstance(expected, bool) and isinstance(value, bool) and expected == value
    if _number(expected):
        return _number(value) and float(expected) == float(value)
    if isinstance(expected, list):
        return (isinstance(value, list) and len(value) == len(expected)
                and all(_plain(e, v) for e, v in zip(expected, value)))
    if isinstance(expected, dict):
        return (isinstance(value, dict) and set(expected) == set(value)
                and all(_plain(expected[k], value[k]) for k in expected))
    return expected == value  # None


def _unordered(expected: list, values: list) -> bool:
    """Each expected element paired with a distinct value (bipartite: a greedy pairing can fail
    where a perfect one exists when elements match more than one value)."""
    if len(expected) != len(values):
        return False
    return perfect_pairing([[(_plain(e, v)) for v in values] for e in expected])


def perfect_pairing(fits: list[list[bool]]) -> bool:
    """Whether every row can be given its own column among those it fits (Kuhn's augmenting paths;
    the lists here are a handful of elements or records)."""
    owner: dict[int, int] = {}

    def assign(row: int, seen: set[int]) -> bool:
        for col, ok in enumerate(fits[row]):
            if ok and col not in seen:
                seen.add(col)
                if col not in owner or assign(owner[col], seen):
                    owner[col] = row
                    return True
        return False

    return all(assign(r, set()) for r in range(len(fits)))


def matches(matcher: Any, value: Any) -> bool:
    """Whether `value` satisfies `matcher` (a plain value, or one of the MATCHERS objects)."""
    if not _is_matcher(matcher):
        return _plain(matcher, value)
    if "any" in matcher:
        return True
    if "one_of" in matcher:
        return any(_plain(option, value) for option in matcher["one_of"])
    if "regex" in matcher:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            return False
        return re.fullmatch(matcher["regex"], str(value), re.IGNORECASE) is not None
    if "approx" in matcher:
        return _number(value) and abs(float(value) - float(matcher["approx"])) <= float(matcher.get("tolerance", 0))
    if "set" in matcher:
        return isinstance(value, list) and _unordered(list(matcher["set"]), value)
    return type(value) is type(matcher["exact"]) and value == matcher["exact"]


_MISSING = object()


def mismatched_args(expected: ExpectedCall, made: ToolCall) -> tuple[str, ...]:
    """The expected call's arguments that the made call lacks or gets wrong (in the scenario's
    order); arguments the scenario does not list are never checked."""
    return tuple(name for name, m in expected.args.items()
                 if made.arguments.get(name, _MISSING) is _MISSING or not matches(m, made.arguments[name]))


def call_mismatch(expected: ExpectedCall, made: ToolCall) -> str | None:
    """Why `made` is not `expected`, or None when it is."""
    if made.name != expected.name:
        return f"called {made.name}, expected {expected.name}"
    if "_raw" in made.arguments and len(made.arguments) == 1:
        return f"{made.name}: arguments were not valid JSON"
    wrong = mismatched_args(expected, made)
    if wrong:
        shown = ", ".join(f"{n}={made.arguments.get(n, '(missing)')!r}" for n in wrong)
        return f"{made.name}: wrong {shown}"
    return None


def call_matches(expected: ExpectedCall, made: ToolCall) -> bool:
    return call_mismatch(expected, made) is None


def record_matches(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> bool:
    """A backend record against an expected one: every listed field matches, others ignored."""
    return all(name in actual and matches(m, actual[name]) for name, m in expected.items())
