"""The scripted baseline's "language model": a deterministic agent that follows the scenario's script.

No local language model can be installed from the package index within voxwatch's constraints, so
the no-key local cascade answers with this instead. It is a baseline, never a model: for the i-th
caller turn it makes the turn's expected calls (each argument a value its matcher accepts) and then
says the turn's `reply`, whatever it heard. It measures the cascade's plumbing and timing (STT,
tool round trips, TTS, turn-taking) with a known-correct agent, and scores as the ceiling a
perfect agent with local speech engines reaches.

It speaks the chat client's interface (`complete` on the chat messages), so the cascade drives it
exactly as it drives a real chat model: the turn is read off the messages, as a stateless API would.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from voxwatch.foundation.scenario import Scenario

from voxwatch.providers.s2s.chat_completions import ChatReply
from voxwatch.foundation.conversation import ToolCall
from voxwatch.foundation.events import Timeline

try:  # the regular-expression parser (a module of its own before Python 3.11)
    from re import _parser as _sre
except ImportError:  # pragma: no cover
    import sre_parse as _sre  # type: ignore[no-redef]

_TYPE_EXAMPLES = {"string": "unknown", "number": 0, "integer": 0, "boolean": True, "array": [], "object": {}}


class NoExample(ValueError):
    """A matcher the baseline cannot produce a value for (say, a regular expression it cannot invert)."""


def _from_regex(pattern: str) -> str:
    """A string the pattern fully matches (case-insensitively), built from its parse: each repeat
    at its minimum count (at least once), each branch and class by its first choice."""

    def build(parsed) -> str:
        out = []
        for op, av in parsed:
            name = op.name
            if name == "LITERAL":
                out.append(chr(av))
            elif name == "ANY":
                out.append("a")
            elif name == "IN":
                out.append(_first_in(av))
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                low, _high, item = av
                out.append(build(item) * max(low, 1) if low or _high else "")
            elif name == "SUBPATTERN":
                out.append(build(av[-1]))
            elif name == "BRANCH":
                out.append(build(av[1][0]))
            elif name in ("AT", "ASSERT", "ASSERT_NOT"):
                continue
            else:
                raise NoExample(f"cannot build an example of {pattern!r} ({name})")
        return "".join(out)

    value = build(_sre.parse(pattern))
    if re.fullmatch(pattern, value, re.IGNORECASE) is None:
        raise NoExample(f"cannot build an example of {pattern!r}")
    return value


def _first_in(items) -> str:
    for op, av in items:
        name = op.name
        if name == "LITERAL":
            return chr(av)
        if name == "RANGE":
            return chr(av[0])
        if name == "CATEGORY":
            return {"CATEGORY_DIGIT": "0", "CATEGORY_SPACE": " "}.get(av.name, "a")
    raise NoExample("cannot build an example of a negated character class")


def example_value(matcher: Any, schema: dict[str, Any] | None = None) -> Any:
    """A value `matcher` (scenario.MATCHERS) accepts; for `any`, a value of the parameter's JSON-schema type."""
    if not isinstance(matcher, dict) or len(matcher) == 0:
        return matcher
    if "exact" in matcher:
        return matcher["exact"]
    if "one_of" in matcher:
        return matcher["one_of"][0]
    if "regex" in matcher:
        return _from_regex(matcher["regex"])
    if "approx" in matcher:
        return matcher["approx"]
    if "set" in matcher:
        return list(matcher["set"])
    if "any" in matcher:
        schema = schema or {}
        if schema.get("enum"):
            return schema["enum"][0]
        return _TYPE_EXAMPLES.get(schema.get("type", "string"), "unknown")
    return matcher  # a plain JSON object compared exactly


SINGLE_TURN_REPLY = "Sure, I can help with that."


class ScriptedResponder:
    """Follows `scenario`: per caller turn, its expected calls, then (their outputs back) its reply.
    With no scenario (the single-turn board) it answers every turn with SINGLE_TURN_REPLY."""

    name = "the scripted baseline"

    def __init__(self, scenario: Scenario | None) -> None:
        self.scenario = scenario

    async def connect(self) -> "ScriptedResponder":
        return self

    def calls_for(self, index: int) -> list[ToolCall]:
        """The calls the baseline makes on caller turn `index`: the expected ones, each argument a value its matcher accepts."""
        turn = self.scenario.turns[index]
        calls = []
        for k, expected in enumerate(turn.expected_calls):
            tool = self.scenario.tool(expected.name)
            properties = ((tool.parameters if tool else {}) or {}).get("properties", {})
            args = {name: example_value(m, properties.get(name)) for name, m in expected.args.items()}
            calls.append(ToolCall(f"scripted_{turn.id}_{k}", expected.name, args))
        return calls

    async def complete(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] = (),
                       timeline: Timeline | None = None, **options: Any) -> ChatReply:
        now = timeline.clock() if timeline is not None else None  # its whole answer is there at once
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        index = len(users) - 1
        if self.scenario is None:
            return ChatReply(SINGLE_TURN_REPLY, [], "stop", now)
        if not 0 <= index < len(self.scenario.turns):
            return ChatReply("", [], "stop", None)
        answered = sum(1 for m in messages[users[-1]:] if m.get("role") == "assistant")
        calls = self.calls_for(index) if answered == 0 else []
        if calls:
            return ChatReply("", calls, "tool_calls", now)
        return ChatReply(self.scenario.turns[index].reply, [], "stop", now)

    async def aclose(self) -> None:
        return None
